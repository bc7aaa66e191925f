"""`repro trace check`: every malformed trace is refused with one sentence per problem, naming
its line and field, exit 2 and no traceback; a valid one is summed up, exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.errors import UsageError
from repro.traces import check_trace, read_trace

TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
}
GOOD = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Fix the test."},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "def f(): pass"},
    {"role": "assistant", "content": "Done."},
]


def session(**changes: object) -> str:
    return json.dumps({"session": "a", "tools": [TOOL], "messages": GOOD} | changes)


def with_message(i: int, message: dict) -> str:
    messages = [dict(m) for m in GOOD]
    messages[i] = message
    return session(messages=messages)


def turn(n: int, messages: list, **more: object) -> str:
    return json.dumps({"session": "t", "turn": n, "messages": messages} | more)


# name -> (file content, the line and the words the sentence must hold)
MALFORMED: dict[str, tuple[bytes | str, int | None, str]] = {
    "binary file": (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)), None, "binary file"),
    "not utf-8": ("caf\xe9 au lait\n".encode("latin-1"), None, "not UTF-8"),
    "not json": (session() + "\n{oops\n", 2, "it is not JSON"),
    "a list, not an object": ("[1, 2, 3]\n", 1, "a list, not a JSON object"),
    "unknown role": (
        with_message(1, {"role": "bot", "content": "hi"}),
        1,
        'messages[1].role is the string "bot"',
    ),
    "missing role": (with_message(1, {"content": "hi"}), 1, "messages[1] has no 'role' field"),
    "content of the wrong type": (
        with_message(1, {"role": "user", "content": 3}),
        1,
        "messages[1].content is the number 3",
    ),
    "arguments as an object": (
        with_message(
            2,
            {
                "role": "assistant",
                "tool_calls": [
                    {**CALL, "function": {"name": "read_file", "arguments": {"path": "a.py"}}}
                ],
            },
        ),
        1,
        "messages[2].tool_calls[0].function.arguments is a JSON object; it must be a string",
    ),
    "tool result without its call id": (
        with_message(3, {"role": "tool", "content": "x"}),
        1,
        "messages[3] has no 'tool_call_id' field",
    ),
    "broken tool-call reference": (
        with_message(3, {"role": "tool", "tool_call_id": "c9", "content": "x"}),
        1,
        'messages[3].tool_call_id "c9" answers no tool call made before it',
    ),
    "a call id used twice": (
        session(messages=[*GOOD[:4], {"role": "assistant", "tool_calls": [CALL]}]),
        1,
        'messages[4].tool_calls[0].id "c1" is the id of another call already',
    ),
    "tools not a list": (
        session(tools={"read_file": TOOL}),
        1,
        "tools is a JSON object; it must be a list",
    ),
    "parameters not a JSON Schema": (
        session(
            tools=[
                {"type": "function", "function": {"name": "x", "parameters": {"type": "objekt"}}}
            ]
        ),
        1,
        "tools[0].function.parameters.type is not a valid JSON Schema",
    ),
    "a tool declared twice": (
        session(tools=[TOOL, TOOL]),
        1,
        'tools[1].function.name "read_file" is declared twice',
    ),
    "a turn without the one before": (
        turn(0, GOOD[:2]) + "\n" + turn(2, []) + "\n",
        2,
        'session "t" has turn 2 but no turn 1',
    ),
    "base past the previous request": (
        turn(0, GOOD[:2]) + "\n" + turn(1, GOOD[2:4], base=5) + "\n",
        2,
        "base is 5, but the previous turn's request (line 1) has 2 messages",
    ),
    "a turn given twice": (
        turn(0, GOOD[:2]) + "\n" + turn(0, GOOD[:2]) + "\n",
        2,
        'session "t" has a turn 0 already (line 1)',
    ),
    "turn number as a string": (
        json.dumps({"session": "t", "turn": "1", "messages": []}),
        1,
        'turn is the string "1"; it must be an integer',
    ),
    "no messages": (session(messages=[]), 1, "messages is an empty list"),
    "starts with the answer": (
        session(messages=GOOD[2:]),
        1,
        "messages[0] is an assistant message",
    ),
    "a misspelled field": (
        json.dumps({"session": "a", "mesages": GOOD}),
        1,
        "unknown field 'mesages' (did you mean 'messages'?)",
    ),
    "an empty file": ("\n\n", None, "holds no session"),
    "a session given twice": (
        session() + "\n" + session() + "\n",
        2,
        'session "a" was already given on line 1',
    ),
    "an answer from the user": (
        turn(0, GOOD[:2], response={"role": "user", "content": "x"}) + "\n",
        1,
        'response.role is the string "user"; an answer is an assistant message',
    ),
    "a later format version": (
        '{"trace": 2}\n' + session(),
        1,
        "trace is the number 2; it must be 1",
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_trace_is_one_sentence_per_problem_and_exit_2(
    name: str, tmp_path: Path
) -> None:
    content, line, words = MALFORMED[name]
    path = tmp_path / "trace.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = CliRunner().invoke(app, ["trace", "check", str(path)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    problems = lines[:-1]  # the last line counts them
    assert problems and all(p.startswith("error: ") and p.endswith(".") for p in problems)
    assert lines[-1] == f"error: {path}: {len(problems)} problem{'s' if len(problems) > 1 else ''}."
    where = f"Line {line}: " if line is not None else ""
    assert any(where in p and words in p for p in problems), result.output
    with pytest.raises(UsageError, match=f"The trace {path} cannot be replayed: "):
        read_trace(path)


def test_at_least_twenty_kinds_of_malformed_trace_are_covered() -> None:
    assert len(MALFORMED) >= 20


def test_a_valid_trace_is_summed_up_and_exit_0(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    lines = [
        '{"trace": 1}',
        session(),
        turn(0, GOOD[:2], response=GOOD[2]),
        turn(1, GOOD[2:4], base=2),
    ]
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["trace", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{path}: a valid trace: 2 sessions, 4 turns, 2 tools lists."


def test_turn_lines_rebuild_each_request_and_share_tools(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    edited = {**GOOD[2], "reasoning_content": None}
    lines = [
        turn(0, GOOD[:2], tools=[TOOL], response=GOOD[2]),
        turn(1, GOOD[2:4], base=2, response=GOOD[4]),
        turn(2, [edited, GOOD[3], {"role": "user", "content": "again"}], base=2),  # history edited
    ]
    path.write_text("\n".join(lines))
    trace, problems = check_trace(path)
    assert problems == []
    [s] = trace.sessions
    assert [len(t.messages) for t in s.turns] == [2, 4, 5]
    assert s.turns[1].messages == tuple(GOOD[:4]) and s.turns[2].messages[2] is not GOOD[2]
    assert s.turns[0].tools is s.turns[2].tools == [TOOL]  # absent tools: the turn before's
    assert s.turns[1].response == GOOD[4] and s.turns[2].response is None
