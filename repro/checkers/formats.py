"""Output formats a turn can be checked as, by name: how to read a file, how to check a turn.

- `dsml-v32`: the content is DeepSeek-V3.2's raw text, tool calls as a DSML block.
- `openai-parsed`: the server parsed the calls; the file is a JSON assistant message.
- `qwen3_coder`, `hermes`, `deepseek_v31`, `kimi_k2`, `glm45`, `glm47`, `harmony`,
  `minimax_m2`, `mistral`: another family's raw completion text, read by its strict
  validator in repro/checkers/families/ (a JSON message with server-parsed `tool_calls` is
  read too).

A new format is one more entry: DeepSeek-V4's `tool_calls` block is the same parser with
another `Dialect`; another family is one more module in repro/checkers/families/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.families import FAMILIES
from repro.checkers.free_text import check_free_text
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import Where
from repro.checkers.openai_parsed import check_parsed_calls
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput, Defect, ToolCall, Verdict
from repro.dsml.markers import EOS, THINK_CLOSE


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    summary: str
    read: Callable[[str], AssistantOutput]  # a file's text as one turn; ValueError if unreadable
    check: Callable[[AssistantOutput, ToolSet], Verdict]
    raw: bool = False  # a file is the completion's raw text, so offsets are the file's


def _verdict(calls: tuple[ToolCall, ...], defects: list[Defect]) -> Verdict:
    fields = {"reasoning": 0, "content": 1}
    ordered = sorted(defects, key=lambda d: (fields.get(d.field, 2), d.field, d.offset, d.kind))
    return Verdict(calls, tuple(ordered))


def check_dsml_v32(output: AssistantOutput, tools: ToolSet) -> Verdict:
    """Parse the content as raw DSML; the reasoning must be plain text.

    With no separate reasoning, content holding `</think>` is a whole thinking-mode
    completion (no reasoning parser ran): as DeepSeek's parser does (rule 1), the text up
    to the first `</think>` is the reasoning. Offsets stay those of the content.
    """
    text, reasoning = output.content, output.reasoning
    cut = text.find(THINK_CLOSE) if not reasoning else -1
    if cut == -1:
        parsed = parse_dsml(text, tools, output.finish_reason)
        plain = check_free_text(reasoning, "reasoning", Where.REASONING)
        return _verdict(parsed.calls, [*plain, *parsed.defects])
    start = cut + len(THINK_CLOSE)
    parsed = parse_dsml(text[start:], tools, output.finish_reason)
    defects = check_free_text(text[:cut], "content", Where.REASONING)
    defects += [Defect(d.kind, d.offset + start, d.message, d.field) for d in parsed.defects]
    return _verdict(parsed.calls, defects)


def check_openai_parsed(output: AssistantOutput, tools: ToolSet) -> Verdict:
    """Check the server's calls; content (one trailing EOS allowed) and reasoning are plain text."""
    content = output.content.removesuffix(EOS)
    defects = check_free_text(output.reasoning, "reasoning", Where.REASONING)
    defects += check_free_text(content, "content", Where.CONTENT)
    defects += check_parsed_calls(output.tool_calls, tools, output.finish_reason)
    if not output.tool_calls and not content.strip():
        defects.append(Defect(Kind.EMPTY_TURN, 0, "the turn has no content and no tool call"))
    return _verdict(tuple(output.tool_calls), defects)


def read_raw(text: str) -> AssistantOutput:
    return AssistantOutput(content=text)


def read_message(text: str) -> AssistantOutput:
    """An OpenAI assistant message, or a whole chat completion (its first choice)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object: an assistant message or a chat completion")
    finish_reason = None
    if "choices" in data:
        choice = _object((_list(data.get("choices"), "choices") or [{}])[0], "choices[0]")
        finish_reason = choice.get("finish_reason")
        data = _object(choice.get("message") or {}, "choices[0].message")
    calls = []
    for i, call in enumerate(_list(data.get("tool_calls"), "tool_calls")):
        call = _object(call, f"tool_calls[{i}]")
        function = _object(call.get("function") or {}, f"tool_calls[{i}].function")
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, str):
            raise ValueError(f"tool_calls[{i}] needs a string function.name and function.arguments")
        calls.append(ToolCall(name, arguments))
    content = data.get("content") or ""
    reasoning = data.get("reasoning_content") or data.get("reasoning") or ""
    if not isinstance(content, str) or not isinstance(reasoning, str):
        raise ValueError("content and reasoning_content must be strings (or null)")
    return AssistantOutput(
        content=content, reasoning=reasoning, tool_calls=tuple(calls), finish_reason=finish_reason
    )


def _object(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a JSON object")
    return value


def _list(value: object, where: str) -> list:
    if value is not None and not isinstance(value, list):
        raise ValueError(f"{where} must be a JSON list")
    return value or []


def read_family_turn(text: str) -> AssistantOutput:
    """Raw completion text, or, when the file is a JSON assistant message or chat completion,
    that message (its server-parsed calls are then checked)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return read_message(text)
        except (ValueError, RecursionError):
            pass  # raw text that happens to start with a brace
    return AssistantOutput(content=text)


DSML_V32 = Format("dsml-v32", "raw DeepSeek-V3.2 completion text", read_raw, check_dsml_v32, True)
OPENAI_PARSED = Format(
    "openai-parsed",
    "JSON assistant message with server-parsed tool_calls",
    read_message,
    check_openai_parsed,
)
FAMILY_FORMATS = tuple(
    Format(family.name, family.summary, read_family_turn, family.check, True)
    for family in FAMILIES.values()
)
FORMATS: dict[str, Format] = {f.name: f for f in (DSML_V32, OPENAI_PARSED, *FAMILY_FORMATS)}
