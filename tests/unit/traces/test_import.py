"""`repro trace import`: ShareGPT-style conversations and OpenAI chat logs become valid traces;
what cannot be converted is one sentence naming the item and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.errors import UsageError
from repro.traces import read_trace
from repro.traces.importing import import_trace


def write(path: Path, items: list, jsonl: bool = False) -> Path:
    path.write_text("\n".join(json.dumps(i) for i in items) if jsonl else json.dumps(items))
    return path


def test_sharegpt_conversations_with_function_calls(tmp_path: Path) -> None:
    items = [
        {"id": "chat-1", "conversations": [
            {"from": "human", "value": "hello"}, {"from": "gpt", "value": "hi"},
            {"from": "human", "value": "weather?"}, {"from": "gpt", "value": "sunny"}]},
        {"conversations": [
            {"from": "human", "value": "what is in a.py?"},
            {"from": "function_call", "value": '{"name": "read", "arguments": {"path": "a.py"}}'},
            {"from": "observation", "value": "print(1)"},
            {"from": "gpt", "value": "It prints 1."}],
         "system": "be brief",
         "tools": '[{"name": "read", "parameters": {"type": "object"}}]'},
        {"id": "vllm-form", "messages": [{"role": "user", "content": "q"},
                                         {"role": "assistant", "content": "a"}]},
    ]  # fmt: skip
    out = tmp_path / "t.jsonl"
    done = import_trace("sharegpt", write(tmp_path / "in.json", items), out)
    assert (done.sessions, done.turns) == (3, 5)
    trace = read_trace(out)
    chat, tools, vllm = trace.sessions
    assert chat.id == "chat-1" and [len(t.messages) for t in chat.turns] == [1, 3]
    assert chat.turns[1].response == {"role": "assistant", "content": "sunny"}
    call = tools.turns[0].response["tool_calls"][0]
    assert call["function"] == {"name": "read", "arguments": '{"path": "a.py"}'}
    assert tools.turns[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": "print(1)",
    }
    assert tools.turns[0].messages[0] == {"role": "system", "content": "be brief"}
    assert tools.turns[0].tools[0]["function"]["name"] == "read"
    assert vllm.id == "vllm-form" and len(vllm.turns) == 1


def test_openai_logs_of_requests_are_grouped_into_sessions(tmp_path: Path) -> None:
    system = {"role": "system", "content": "agent"}
    first = [system, {"role": "user", "content": "task one"}]
    answer = {"role": "assistant", "content": "step"}
    lines = [
        {"request": {"model": "m", "messages": first, "temperature": 0.2, "user": "alice"},
         "response": {"choices": [{"message": answer, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 9}}},
        {"custom_id": "x", "body": {"model": "m", "messages": [system, {"role": "user", "content": "task two"}]}},
        {"model": "m", "messages": [*first, answer, {"role": "user", "content": "go on"}]},
        {"messages": [{"role": "user", "content": "fine-tune"}, {"role": "assistant", "content": "ok"}]},
    ]  # fmt: skip
    out = tmp_path / "t.jsonl"
    done = import_trace("openai", write(tmp_path / "in.jsonl", lines, jsonl=True), out)
    assert (done.sessions, done.turns) == (3, 4)
    one, two, tuned = read_trace(out).sessions
    assert [len(t.messages) for t in one.turns] == [2, 4]
    assert one.turns[0].params == {"temperature": 0.2} and one.turns[0].response == answer
    assert "alice" not in out.read_text()
    assert len(two.turns) == 1 and tuned.turns[0].response == {"role": "assistant", "content": "ok"}


@pytest.mark.parametrize(
    ("source", "items", "sentence"),
    [
        ("sharegpt", [{"conversations": [{"from": "robot", "value": "x"}]}],
         'Cannot import item 0 of IN: conversations[0].from is "robot", not one of'),
        ("sharegpt", [{"conversations": [{"from": "observation", "value": "x"}]}],
         "Cannot import item 0 of IN: conversations[0] is a tool result with no call before it."),
        ("sharegpt", [{"id": 1}], "Cannot import item 0 of IN: it has no 'conversations' list."),
        ("openai", [{"request": {"prompt": "x"}}],
         "Cannot import line 1 of IN: its request has no 'messages' list."),
        ("openai", ["text"], "Cannot import line 1 of IN: it is not a JSON object."),
        ("csv", [], "Unknown source 'csv'; choose one of: sharegpt, openai."),
    ],
)  # fmt: skip
def test_what_cannot_be_converted_is_one_sentence(
    source: str, items: list, sentence: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "in.json", items, jsonl=source == "openai")
    with pytest.raises(UsageError) as caught:
        import_trace(source, path, tmp_path / "out.jsonl")
    assert str(caught.value).startswith(sentence.replace("IN", str(path)))
    result = CliRunner().invoke(
        app, ["trace", "import", "--from", source, str(path), str(tmp_path / "o2.jsonl")]
    )
    assert (
        result.exit_code == 2
        and result.output.count("\n") == 1
        and "Traceback" not in result.output
    )


def test_an_existing_output_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    out.write_text("mine")
    with pytest.raises(UsageError, match="exists already"):
        import_trace("sharegpt", write(tmp_path / "in.json", []), out)
    assert out.read_text() == "mine"
