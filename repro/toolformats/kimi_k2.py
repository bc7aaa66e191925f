"""Kimi K2's tool-call section (`kimi_k2`), as its chat template renders it.

    CONTENT<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{JSON}<|tool_call_end|>…<|tool_calls_section_end|>

Every marker is one special token. `functions.NAME:IDX` is the call's id; IDX counts the
conversation's calls, so within a turn it climbs by one from wherever the history left it.
K2-Thinking writes `<think>REASONING</think>` first (research/toolformats.md §1b.4).
"""

from __future__ import annotations

from repro.toolformats.values import Calls, tojson

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
# Spellings SGLang and vLLM accept that the model's tokenizer has no token for.
SECTION_BEGIN_SINGULAR = "<|tool_call_section_begin|>"
SECTION_END_SINGULAR = "<|tool_call_section_end|>"
END_OF_TURN = ("<|im_end|>",)


def encode_kimi_k2(
    calls: Calls, content: str = "", reasoning: str | None = None, first_index: int = 0
) -> str:
    head = "" if reasoning is None else f"{THINK_OPEN}{reasoning}{THINK_CLOSE}"
    if not calls:
        return head + content
    body = "".join(
        f"{CALL_BEGIN}functions.{name}:{first_index + i}{ARGUMENT_BEGIN}{tojson(dict(args))}{CALL_END}"
        for i, (name, args) in enumerate(calls)
    )
    return head + content + SECTION_BEGIN + body + SECTION_END
