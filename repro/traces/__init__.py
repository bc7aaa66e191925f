"""The trace format: recorded (or imported) agent conversations that repro replays as sessions.

JSON Lines of OpenAI chat messages with `tools` and `tool_calls`, a whole session per line or
one turn per line with its session's id (docs/traces.md; the JSON Schema beside this file).
Other parts import what `__all__` lists, from here.
"""

from repro.lazy_exports import lazy_exports

_HOMES = {
    "FORMAT_VERSION": "model",
    "Message": "model",
    "Trace": "model",
    "TraceSession": "model",
    "TraceTurn": "model",
    "Problem": "reading",
    "check_trace": "reading",
    "read_trace": "reading",
    "trace_schema": "schema",
    "SessionGrouper": "grouping",
    "Answer": "turn_lines",
    "Redaction": "turn_lines",
    "TurnLines": "turn_lines",
    "request_of": "turn_lines",
    "TraceWriter": "writing",
    "SOURCES": "importing",
    "import_trace": "importing",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
