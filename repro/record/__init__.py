"""`repro record`: the proxy's forwarding, in front of any OpenAI-compatible engine, writing
each chat turn it sees to a trace (docs/traces.md); the proxy's role in reverse.

Other parts import what `__all__` lists, from here; names load on first use (the server's
web stack only when a recorder is served).
"""

from repro.lazy_exports import lazy_exports

_HOMES = {
    "RecordSpec": "spec",
    "serve": "server",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
