"""Qwen3-Coder's XML tool calls (`qwen3_coder`), as its chat template renders them.

    CONTENT\n\n<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>

One block per call, blocks joined by one newline; content is followed by a newline and the
template's own `\n` before the first block. Values are raw text for strings, `tojson` for
anything else (Qwen3-Coder-30B-A3B-Instruct's template; research/toolformats.md §1b.1).
Qwen3.5 puts `<think>\n` in the prompt, so its completion starts inside the reasoning.
"""

from __future__ import annotations

from repro.toolformats.values import Calls, untyped

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAMETER_OPEN = "<parameter="
PARAMETER_CLOSE = "</parameter>"
END_OF_TURN = ("<|im_end|>", "<|endoftext|>")
TURN_START = "<|im_start|>"


def encode_call(name: str, arguments: dict) -> str:
    params = "".join(
        f"{PARAMETER_OPEN}{key}>\n{untyped(value)}\n{PARAMETER_CLOSE}\n"
        for key, value in arguments.items()
    )
    return f"{TOOL_CALL_OPEN}\n{FUNCTION_OPEN}{name}>\n{params}{FUNCTION_CLOSE}\n{TOOL_CALL_CLOSE}"


def encode_qwen3_coder(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    """The completion after `<|im_start|>assistant\\n` (its `<|im_end|>` trimmed, as served)."""
    head = "" if reasoning is None else f"{reasoning}\n{THINK_CLOSE}\n\n"
    blocks = "\n".join(encode_call(name, dict(args)) for name, args in calls)
    joint = "\n\n" if content and blocks else ""
    return head + content + joint + blocks
