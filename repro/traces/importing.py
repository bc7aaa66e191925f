"""Traces from the common public shapes: ShareGPT-style conversations and OpenAI chat logs.

- `sharegpt`: a JSON list (or JSON Lines) of `{"conversations": [{"from": "human", "value":
  ...}, ...]}`, with `system` and `tools` (LLaMA-Factory's `function_call` and `observation`
  turns become tool calls and their results); `{"messages": [...]}` items (vLLM's converted
  form) are taken as they are. One session per conversation.
- `openai`: JSON Lines; a line with only `messages` (and `tools`: the fine-tuning format) is a
  whole conversation; a request body (`messages` with a `model`), or `{"request": ...,
  "response": ...}` / `{"body": ...}` (a gateway's log, the Batch API's input), is one
  request, grouped into sessions by conversation prefix as `repro record` groups traffic.

Anything that cannot be converted is one sentence naming the item and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from repro.errors import UsageError
from repro.traces.grouping import SessionGrouper
from repro.traces.model import Message
from repro.traces.reading import check_trace
from repro.traces.turn_lines import Answer, Redaction, TurnLines, request_of
from repro.traces.writing import TraceWriter
from repro.user_files import TOO_DEEP, read_user_text

SOURCES = ("sharegpt", "openai")
ROLES = {
    "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
    "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "model": "assistant",
    "system": "system", "tool": "tool", "observation": "tool", "function_response": "tool",
    "function_call": "function_call",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Imported:
    sessions: int
    turns: int


def import_trace(source: str, path: Path, out: Path, redact: tuple[str, ...] = ()) -> Imported:
    """Convert `path` (of kind `source`) into the trace `out`, which must not exist yet."""
    if source not in SOURCES:
        raise UsageError(f"Unknown source '{source}'; choose one of: {', '.join(SOURCES)}.")
    if out.exists():
        raise UsageError(f"{out} exists already; give a new file to write the trace to.")
    items = list(_items(path))
    redaction = Redaction(redact)
    writer = TraceWriter(out, {"source": f"{source}:{path.name}"})
    try:
        if source == "sharegpt":
            for where, item in items:
                writer.write(_sharegpt(where, item, redaction))
        else:
            _openai(items, writer, redaction)
    finally:
        writer.close()
    trace, problems = check_trace(out)
    if problems:  # a conversion the format refuses: say so rather than leave a bad file
        raise UsageError(
            f"{path} converted into a trace that is not valid ({problems[0].sentence()}); "
            f"{out} is kept for a look."
        )
    return Imported(len(trace.sessions), trace.turns)


def _items(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, item) for each item of a JSON list or each line of JSON Lines."""
    text = read_user_text(path, f"The file {path}")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path} is not valid JSON: {exc}.") from None
        except RecursionError:
            raise UsageError(f"{path} {TOO_DEEP}.") from None
        for i, item in enumerate(data):
            yield f"item {i} of {path}", item
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number} of {path}", orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"Line {number} of {path} is not JSON ({exc}).") from None


def _refuse(where: str, what: str) -> UsageError:
    return UsageError(f"Cannot import {where}: {what}.")


def _tools(where: str, value: Any) -> list[Message]:
    if value is None or value == "":
        return []
    if isinstance(value, str):  # LLaMA-Factory keeps the tools as a JSON string
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _refuse(where, "its 'tools' is a string that is not JSON") from None
    if not isinstance(value, list):
        raise _refuse(where, "its 'tools' is not a list")
    tools = []
    for tool in value:
        if not isinstance(tool, dict):
            raise _refuse(where, "an entry of its 'tools' is not a JSON object")
        tools.append(tool if "function" in tool else {"type": "function", "function": tool})
    return tools


def _sharegpt(where: str, item: Any, redaction: Redaction) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise _refuse(where, "it is not a JSON object")
    line: dict[str, Any] = {"session": str(item.get("id", where.split(" of ")[0]))}
    tools = _tools(where, item.get("tools"))
    if tools:
        line["tools"] = tools
    if isinstance(item.get("messages"), list) and "conversations" not in item:
        line["messages"] = [redaction.message(m) for m in item["messages"]]
        return line
    turns = item.get("conversations", item.get("conversation"))
    if not isinstance(turns, list) or not turns:
        raise _refuse(where, "it has no 'conversations' list")
    messages: list[Message] = []
    if isinstance(item.get("system"), str) and item["system"]:
        messages.append({"role": "system", "content": item["system"]})
    pending: list[str] = []  # ids of calls not yet answered
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise _refuse(where, f"conversations[{i}] is not a JSON object")
        speaker = turn.get("from", turn.get("role"))
        text = turn.get("value", turn.get("content"))
        role = ROLES.get(str(speaker).lower())
        if role is None:
            raise _refuse(
                where,
                f"conversations[{i}].from is {json.dumps(speaker)}, not one of {', '.join(ROLES)}",
            )
        if not isinstance(text, str):
            raise _refuse(where, f"conversations[{i}].value is not a string")
        if role == "function_call":
            calls = _calls(where, i, text, len(messages))
            pending = [c["id"] for c in calls]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif role == "tool":
            if not pending:
                raise _refuse(where, f"conversations[{i}] is a tool result with no call before it")
            messages.append({"role": "tool", "tool_call_id": pending.pop(0), "content": text})
        else:
            messages.append({"role": role, "content": text})
    line["messages"] = [redaction.message(m) for m in messages]
    return line


def _calls(where: str, i: int, text: str, position: int) -> list[Message]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise _refuse(
            where, f"conversations[{i}] is a function_call whose value is not JSON"
        ) from None
    calls = value if isinstance(value, list) else [value]
    out = []
    for j, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise _refuse(where, f"conversations[{i}] is a function_call without a name")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append({
            "id": f"call_{position}_{j}",
            "type": "function",
            "function": {"name": call["name"], "arguments": arguments},
        })  # fmt: skip
    return out


def _openai(items: list[tuple[str, Any]], writer: TraceWriter, redaction: Redaction) -> None:
    lines = TurnLines(SessionGrouper("s"), redaction)
    for where, item in items:
        if not isinstance(item, dict):
            raise _refuse(where, "it is not a JSON object")
        body = item.get("request", item.get("body"))
        if body is None and "model" in item:
            body = item
        if body is None:  # a whole conversation (the fine-tuning format)
            messages = item.get("messages")
            if not isinstance(messages, list):
                raise _refuse(where, "it has neither 'messages' nor a 'request' or 'body'")
            line: dict[str, Any] = {"messages": [redaction.message(m) for m in messages]}
            tools = _tools(where, item.get("tools"))
            if tools:
                line["tools"] = tools
            writer.write(line)
            continue
        request = request_of(body) if isinstance(body, dict) else None
        if request is None:
            raise _refuse(where, "its request has no 'messages' list")
        where_ = lines.start(request)
        writer.write(lines.line(request, where_, _answer(item.get("response"))))


def _answer(response: Any) -> Answer:
    """The assistant message of a logged chat completion (or a Batch API output line)."""
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        status = response.get("status_code")
        response = response["body"]
    else:
        status = None
    if not isinstance(response, dict):
        return Answer(None)
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    usage = response.get("usage")
    return Answer(
        message if isinstance(message, dict) else None,
        finish_reason=choice.get("finish_reason") if isinstance(choice, dict) else None,
        usage=usage if isinstance(usage, dict) else None,
        status=status if isinstance(status, int) else None,
    )
