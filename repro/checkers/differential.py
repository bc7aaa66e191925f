"""The parser differential: an engine's parsed tool calls against repro's own parse of the
raw text of the same turn.

An engine that parses (SGLang's `--tool-call-parser`, vLLM's `--tool-call-parser`) returns
`tool_calls` and the prose around them; the same turn from an engine that does not returns
the raw completion, which repro's strict reader for the model's format parses. Both are put
in one canonical form (`canonical`): the calls as a JSON list of name and arguments (the
arguments' JSON re-written alike), the prose stripped of the framing its format puts around
it. When the two answers' tokens are the same, their canonical forms must be too: where they
are not, the engine's parser changed the turn (dropped or merged a call, altered a value),
which `compare` then calls corruption of the output path. The replay does this when its
reference engines answer raw (`--reference-knob tool_parser=off`; docs/oracle.md).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from repro.checkers.divergence import Answer
from repro.checkers.turn import check_turn
from repro.checkers.verdict import AssistantOutput
from repro.toolformats.prose import prose_of


def _arguments(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text  # not JSON: compared as sent


def _calls(calls: Sequence[tuple[str, str]]) -> str:
    return json.dumps(
        [{"name": name, "arguments": _arguments(arguments)} for name, arguments in calls],
        ensure_ascii=False,
    )


def canonical(answer: Answer, tools: Sequence[dict], format: str) -> Answer:
    """The answer with its calls and prose as the parser differential compares them: the
    server's calls when it returned some, else the calls repro reads in the raw text."""
    try:
        server = json.loads(answer.tool_calls)
    except ValueError:
        server = None
    if isinstance(server, list) and server:
        pairs = [
            (str(c.get("name")), str(c.get("arguments"))) for c in server if isinstance(c, dict)
        ]
        return dataclasses.replace(
            answer, content=prose_of(answer.content, format).strip(), tool_calls=_calls(pairs)
        )
    read = check_turn(
        AssistantOutput(content=answer.content, reasoning=answer.reasoning), tools, format
    )
    pairs = [(c.name, c.arguments) for c in read.calls]
    return dataclasses.replace(
        answer, content=prose_of(answer.content, format).strip(), tool_calls=_calls(pairs)
    )
