"""Render a chat request's prompt roughly as DeepSeek-V3.2's encoder does, and measure it.

The engine needs two facts per request, cheaply (requests reach ~320 KB of JSON):
its prompt size in tokens (`usage.prompt_tokens`, the context-length check, the cost
model) and a key for every message boundary (the prefix cache). Layout follows
research/dsml.md §1.2–1.5: BOS, system text with the tool list, `<｜User｜>` turns that
end in `<｜Assistant｜>` plus `<think>` or `</think>`, assistant turns as
`reasoning</think>content[DSML block]EOS`, tool results in `<function_results>`. A model of
another family (repro.sim.formats) keeps this layout, its own earlier turns written as it
writes them and counted with its tokenizer: only the sizes and the boundaries matter here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from repro.dsml.markers import BOS, THINK_CLOSE, THINK_OPEN
from repro.sim.formats import DSML_FORMAT, ModelFormat
from repro.sim.tokens import ASSISTANT, USER

# Paraphrase of the encoder's tool-list preamble; only its size matters here.
_TOOLS_HEADER = (
    "## Tools\n\nYou can call the functions below by writing a DSML function_calls block "
    "as part of your reply. String parameters are written as is; numbers, booleans, "
    "arrays and objects as JSON, with string set to true or false accordingly.\n\n"
    "Here are the functions available in JSONSchema format:\n<functions>\n"
)


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A prompt cut at message boundaries: tokens per part and a chained key per boundary."""

    part_tokens: tuple[int, ...]
    boundary_keys: tuple[int, ...]

    @property
    def prompt_tokens(self) -> int:
        return sum(self.part_tokens)


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def _tools_block(tools: Sequence[dict[str, Any]]) -> str:
    lines = [orjson.dumps(t.get("function", t)).decode() for t in tools]
    return _TOOLS_HEADER + "\n".join(lines) + "\n</functions>"


def _assistant_text(message: dict[str, Any], fmt: ModelFormat, calls_before: int) -> str:
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        arguments = function.get("arguments") or "{}"
        try:
            parsed = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        except orjson.JSONDecodeError:
            parsed = {"arguments": arguments}
        calls.append((function.get("name", ""), parsed if isinstance(parsed, dict) else {}))
    reasoning = message.get("reasoning_content")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    return fmt.history(calls, _text(message.get("content")), reasoning, calls_before)


def render_parts(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
    thinking: bool,
    fmt: ModelFormat = DSML_FORMAT,
) -> list[str]:
    """One rendered string per message (the system part also carries the tool list)."""
    last_user = max(
        (i for i, m in enumerate(messages) if m.get("role") in ("user", "developer")), default=-1
    )
    parts: list[str] = []
    pending_results = 0
    calls_before = 0
    has_system = bool(messages) and messages[0].get("role") == "system"
    if not has_system:
        parts.append(BOS + (_tools_block(tools) if tools else ""))
    for i, message in enumerate(messages):
        role = message.get("role")
        text = _text(message.get("content"))
        if role == "system":
            part = (
                (BOS if i == 0 else "")
                + text
                + (f"\n\n{_tools_block(tools)}" if tools and i == 0 else "")
            )
        elif role in ("user", "developer"):
            think = THINK_OPEN if thinking and i == last_user else THINK_CLOSE
            part = USER + text + ASSISTANT + think
        elif role == "assistant":
            part = _assistant_text(message, fmt, calls_before)
            pending_results = len(message.get("tool_calls") or ())
            calls_before += pending_results
        elif role == "tool":
            first = i == 0 or messages[i - 1].get("role") != "tool"
            last = i + 1 == len(messages) or messages[i + 1].get("role") != "tool"
            part = ("\n\n<function_results>" if first else "") + f"\n<result>{text}</result>"
            pending_results -= 1
            if last or pending_results <= 0:
                think = THINK_OPEN if thinking and i > last_user else THINK_CLOSE
                part += f"\n</function_results>\n\n{think}"
        else:
            part = text
        parts.append(part)
    return parts


def render_prompt(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
    thinking: bool,
    fmt: ModelFormat = DSML_FORMAT,
) -> RenderedPrompt:
    """Token counts per part and chained boundary keys; O(prompt bytes)."""
    part_tokens: list[int] = []
    keys: list[int] = []
    key = 0
    count = fmt.tokenizer.count
    for part in render_parts(messages, tools, thinking, fmt):
        part_tokens.append(count(part))
        key = hash((key, part))
        keys.append(key)
    return RenderedPrompt(tuple(part_tokens), tuple(keys))
