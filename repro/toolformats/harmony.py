"""gpt-oss's Harmony messages (`harmony`), as the model writes them after `<|start|>assistant`.

    <|channel|>analysis<|message|>REASONING<|end|>
    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{JSON}<|call|>

or, with no call, `<|start|>assistant<|channel|>final<|message|>CONTENT<|return|>`. `<|call|>`
and `<|return|>` are stop tokens: generation ends there, so one completion holds at most one
call, and servers usually trim the stop token. Text written beside a call goes on the
commentary channel without a recipient, as a preamble (research/toolformats.md §1b.6).
"""

from __future__ import annotations

from repro.toolformats.values import Calls, tojson

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
CALL = "<|call|>"
RETURN = "<|return|>"
ASSISTANT = "assistant"
CHANNELS = ("analysis", "commentary", "final")


def encode_harmony(
    calls: Calls, content: str = "", reasoning: str | None = None, stop: bool = True
) -> str:
    """At most one call (the model stops at `<|call|>`); `stop` keeps the stop token."""
    if len(calls) > 1:
        raise ValueError("a Harmony completion ends at its first call: pass at most one")
    messages = []
    if reasoning is not None:
        messages.append(f"{CHANNEL}analysis{MESSAGE}{reasoning}{END}")
    if calls:
        if content:
            messages.append(f"{CHANNEL}commentary{MESSAGE}{content}{END}")
        name, args = calls[0]
        header = f"{CHANNEL}commentary to=functions.{name} {CONSTRAIN}json{MESSAGE}"
        messages.append(header + tojson(dict(args)) + (CALL if stop else ""))
    else:
        messages.append(f"{CHANNEL}final{MESSAGE}{content}" + (RETURN if stop else ""))
    return f"{START}{ASSISTANT}".join(messages)
