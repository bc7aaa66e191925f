"""Mistral's tool calls, the current dialect (`mistral`: Devstral, Magistral, Ministral 3).

    CONTENT[TOOL_CALLS]NAME[ARGS]{JSON}[TOOL_CALLS]NAME[ARGS]{JSON}

`[TOOL_CALLS]` opens every call; the markers are special tokens of the v11+ tokenizers.
Magistral reasons in `[THINK]…[/THINK]` first; the turn ends with `</s>`, which servers
trim (research/toolformats.md §1b.8).
"""

from __future__ import annotations

from repro.toolformats.values import Calls, tojson

TOOL_CALLS = "[TOOL_CALLS]"
ARGS = "[ARGS]"
CALL_ID = "[CALL_ID]"
THINK_OPEN = "[THINK]"
THINK_CLOSE = "[/THINK]"
END_OF_TURN = ("</s>",)
SPECIAL_TOKENS = (
    "<s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
)


def encode_mistral(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    head = "" if reasoning is None else f"{THINK_OPEN}{reasoning}{THINK_CLOSE}"
    body = "".join(f"{TOOL_CALLS}{name}{ARGS}{tojson(dict(args))}" for name, args in calls)
    return head + content + body
