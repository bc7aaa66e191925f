"""GLM's `<arg_key>`/`<arg_value>` tool calls: GLM-4.5/4.6 (`glm45`) and GLM-4.7/5 (`glm47`).

GLM-4.5 (its template, trim_blocks on; research/toolformats.md §1b.5):

    \n<think>REASONING</think>\nCONTENT\n<tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>

GLM-4.7 writes the same pairs with no newlines anywhere, and its prompt ends in `<think>`:

    REASONING</think>CONTENT<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>

Values are raw text for strings, `tojson` otherwise. Every marker is a special token.
"""

from __future__ import annotations

from repro.toolformats.values import Calls, untyped

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
KEY_OPEN = "<arg_key>"
KEY_CLOSE = "</arg_key>"
VALUE_OPEN = "<arg_value>"
VALUE_CLOSE = "</arg_value>"
END_OF_TURN = ("<|user|>", "<|observation|>", "<|endoftext|>")
ROLE_TOKENS = ("<|assistant|>", "<|system|>")


def encode_glm45(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    head = "" if reasoning is None else f"\n{THINK_OPEN}{reasoning}{THINK_CLOSE}"
    text = f"\n{content}" if content else ""
    for name, args in calls:
        pairs = "".join(
            f"{KEY_OPEN}{k}{KEY_CLOSE}\n{VALUE_OPEN}{untyped(v)}{VALUE_CLOSE}\n"
            for k, v in dict(args).items()
        )
        text += f"\n{TOOL_CALL_OPEN}{name}\n{pairs}{TOOL_CALL_CLOSE}"
    return head + text


def encode_glm47(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    head = "" if reasoning is None else reasoning + THINK_CLOSE
    text = content
    for name, args in calls:
        pairs = "".join(
            f"{KEY_OPEN}{k}{KEY_CLOSE}{VALUE_OPEN}{untyped(v)}{VALUE_CLOSE}"
            for k, v in dict(args).items()
        )
        text += f"{TOOL_CALL_OPEN}{name}{pairs}{TOOL_CALL_CLOSE}"
    return head + text
