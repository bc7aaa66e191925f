"""Where a raw completion's calls begin, per format: the prose a client keeps of a call turn.

A client reading raw text (no server-side parser) keeps the prose before the calls as the
turn's content and sends the calls back as `tool_calls`; this is that cut, for DSML and for
every family here (their call openers, and the spellings engines accept for them).
"""

from __future__ import annotations

import re

from repro.dsml.markers import BLOCK_LEAD_IN
from repro.toolformats import deepseek_v31, glm, harmony, kimi_k2, minimax_m2, mistral

DSML_V32 = "dsml-v32"

CALL_OPENERS: dict[str, tuple[str, ...]] = {
    "qwen3_coder": ("<tool_call>", "<function="),
    "hermes": ("<tool_call>",),
    "deepseek_v31": (deepseek_v31.CALLS_BEGIN, deepseek_v31.CALL_BEGIN),
    "kimi_k2": (kimi_k2.SECTION_BEGIN, kimi_k2.SECTION_BEGIN_SINGULAR, kimi_k2.CALL_BEGIN),
    "glm45": (glm.TOOL_CALL_OPEN,),
    "glm47": (glm.TOOL_CALL_OPEN,),
    "harmony": (f"{harmony.START}{harmony.ASSISTANT} to=", f"{harmony.CHANNEL}commentary to="),
    "minimax_m2": (minimax_m2.WRAPPER_OPEN, minimax_m2.INVOKE_OPEN),
    "mistral": (mistral.TOOL_CALLS,),
}


def prose_before_calls(text: str, format: str | None = None) -> str:
    """`text` up to where its calls begin (DSML's blank line and block opener by default)."""
    if format in (None, DSML_V32):
        return text.split(BLOCK_LEAD_IN, 1)[0]
    found = [at for opener in CALL_OPENERS.get(format, ()) if (at := text.find(opener)) != -1]
    return text[: min(found)].rstrip() if found else text


_HARMONY_MESSAGE = re.compile(
    rf"(?:{re.escape(harmony.START)}{harmony.ASSISTANT}(?P<role_to> to=\S+?)?)?"
    rf"{re.escape(harmony.CHANNEL)}(?P<channel>\w+)(?P<to> to=\S+)?[^<]*"
    rf"(?:{re.escape(harmony.CONSTRAIN)}\w*)?{re.escape(harmony.MESSAGE)}"
    rf"(?P<body>.*?)(?:{re.escape(harmony.END)}|{re.escape(harmony.CALL)}|"
    rf"{re.escape(harmony.RETURN)}|\Z)",
    re.S,
)


def prose_of(text: str, format: str | None = None) -> str:
    """The prose of a turn's content, its calls and their framing left out: the text before
    the calls; for Harmony the bodies of its final answer and commentary preambles."""
    if format != "harmony" or harmony.CHANNEL not in text:
        return prose_before_calls(text, format)
    bodies = [
        m.group("body")
        for m in _HARMONY_MESSAGE.finditer(text)
        if m.group("channel") != "analysis" and not (m.group("to") or m.group("role_to"))
    ]
    return "".join(bodies)
