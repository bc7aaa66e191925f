"""DeepSeek-V3.1's special-token JSON tool calls (`deepseek_v31`), as its chat template renders them.

    CONTENT<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>

Bars are U+FF5C, word separators U+2581; every marker is one token. The turn ends with
`<｜end▁of▁sentence｜>`, which servers trim. Thinking mode puts `<think>` in the prompt, so
the completion is `REASONING</think>` then the above (research/toolformats.md §1b.3).
"""

from __future__ import annotations

from repro.toolformats.values import Calls, tojson

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
END_OF_TURN = ("<｜end▁of▁sentence｜>",)


def encode_deepseek_v31(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    head = "" if reasoning is None else reasoning + THINK_CLOSE
    if not calls:
        return head + content
    body = "".join(f"{CALL_BEGIN}{name}{SEP}{tojson(dict(args))}{CALL_END}" for name, args in calls)
    return head + content + CALLS_BEGIN + body + CALLS_END
