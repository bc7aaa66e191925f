"""MiniMax-M2's invoke XML (`minimax_m2`), as its chat template renders it.

    REASONING\n</think>\n\nCONTENT\n<minimax:tool_call>\n<invoke name="NAME">\n<parameter name="K">V</parameter>\n</invoke>\n</minimax:tool_call>

The prompt ends in `<think>\n`, so the completion starts inside the reasoning. One wrapper
holds every invoke; values are raw text for strings, `tojson` otherwise
(research/toolformats.md §1b.7; MiniMax-M2's chat_template.jinja).
"""

from __future__ import annotations

from repro.toolformats.values import Calls, untyped

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
WRAPPER_OPEN = "<minimax:tool_call>"
WRAPPER_CLOSE = "</minimax:tool_call>"
INVOKE_OPEN = '<invoke name="'
INVOKE_CLOSE = "</invoke>"
PARAMETER_OPEN = '<parameter name="'
PARAMETER_CLOSE = "</parameter>"
END_OF_TURN = ("[e~[",)


def encode_minimax_m2(calls: Calls, content: str = "", reasoning: str | None = None) -> str:
    head = "" if reasoning is None else f"{reasoning}\n{THINK_CLOSE}\n\n"
    if not calls:
        return head + content
    invokes = ""
    for name, args in calls:
        params = "".join(
            f'{PARAMETER_OPEN}{k}">{untyped(v)}{PARAMETER_CLOSE}\n' for k, v in dict(args).items()
        )
        invokes += f'{INVOKE_OPEN}{name}">\n{params}{INVOKE_CLOSE}\n'
    return f"{head}{content}\n{WRAPPER_OPEN}\n{invokes}{WRAPPER_CLOSE}"
