"""Hermes / Qwen2.5 / Qwen3 JSON tool calls (`hermes`), as Qwen3's chat template renders them.

    CONTENT\n<tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>\n<tool_call>...

One block per call; a newline before each block but the first when there is no content.
The name is pasted in raw, the arguments are `tojson` (research/toolformats.md §1b.2).
Qwen3's thinking mode writes `<think>\nREASONING\n</think>\n\n` first.
"""

from __future__ import annotations

from repro.toolformats.values import Calls, tojson

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
END_OF_TURN = ("<|im_end|>", "<|endoftext|>")
TURN_START = "<|im_start|>"


def encode_call(name: str, arguments: dict) -> str:
    return f'{TOOL_CALL_OPEN}\n{{"name": "{name}", "arguments": {tojson(arguments)}}}\n{TOOL_CALL_CLOSE}'


def encode_hermes(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    """The completion after `<|im_start|>assistant\\n` (its `<|im_end|>` trimmed)."""
    head = "" if reasoning is None else f"{THINK_OPEN}\n{reasoning}\n{THINK_CLOSE}\n\n"
    blocks = "\n".join(encode_call(name, dict(args)) for name, args in calls)
    joint = "\n" if content and blocks else ""
    return head + content + joint + blocks
