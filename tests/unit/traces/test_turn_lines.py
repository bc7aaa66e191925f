"""Requests grouped into sessions by conversation prefix and written as turn lines: read back,
each request is exactly what was sent; only sampling parameters are kept; redaction holds."""

from __future__ import annotations

from pathlib import Path

from repro.traces import read_trace
from repro.traces.grouping import SessionGrouper
from repro.traces.turn_lines import Answer, Redaction, TurnLines, request_of
from repro.traces.writing import TraceWriter

TOOLS = [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]


def conversation(task: str, steps: int, reasoning: bool = True) -> list[list[dict]]:
    """The requests an agent sends: each the last plus the answer and a tool result."""
    messages = [{"role": "system", "content": "agent"}, {"role": "user", "content": task}]
    requests = [list(messages)]
    for i in range(steps):
        call = {
            "id": f"{task}-{i}",
            "type": "function",
            "function": {"name": "run", "arguments": "{}"},
        }
        answer = {"role": "assistant", "content": "", "tool_calls": [call]}
        if reasoning:
            answer["reasoning_content"] = f"thinking {i}"
        messages += [answer, {"role": "tool", "tool_call_id": call["id"], "content": f"out {i}"}]
        requests.append(list(messages))
    return requests


def body(messages: list[dict], **more: object) -> dict:
    return {
        "model": "m",
        "messages": messages,
        "tools": TOOLS,
        "temperature": 0,
        "stream": True,
    } | more


def test_interleaved_conversations_are_grouped_and_rebuilt_exactly(tmp_path: Path) -> None:
    a, b = conversation("fix a", 3), conversation("fix b", 2)
    same_task = conversation("fix a", 1)  # the same opening, started again: a session of its own
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path, {})
    lines = TurnLines(SessionGrouper("s"))
    sent = []
    for messages in [a[0], b[0], a[1], b[1], a[2], same_task[0], b[2], a[3], same_task[1]]:
        request = request_of(body(messages))
        assert request is not None
        where = lines.start(request)
        writer.write(lines.line(request, where, Answer({"role": "assistant", "content": "ok"})))
        sent.append((where.session, where.turn, messages))
    writer.close()
    trace = read_trace(path)
    assert [len(s.turns) for s in trace.sessions] == [4, 3, 2]
    by_id = {s.id: s for s in trace.sessions}
    for session, turn, messages in sent:
        assert list(by_id[session].turns[turn].messages) == messages
    assert [t.tools for t in trace.sessions[0].turns] == [TOOLS] * 4
    assert path.stat().st_size < 2 * sum(len(str(m)) for _, _, m in sent[-3:])  # deltas, not copies


def test_a_history_without_its_reasoning_stays_in_its_session(tmp_path: Path) -> None:
    """Clients that drop earlier reasoning from the history: the turn records from the change."""
    full = conversation("task", 2)
    stripped = conversation("task", 2, reasoning=False)
    grouper = SessionGrouper("s")
    first = grouper.assign(full[1], TOOLS)
    grouper.done(first.session)
    second = grouper.assign(stripped[2], TOOLS)
    assert (second.session, second.turn, second.base) == (first.session, 1, 2)
    assert not second.tools_changed


def test_two_identical_conversations_in_flight_keep_their_own_turns() -> None:
    grouper = SessionGrouper("s")
    c = conversation("same", 2)
    one, two = grouper.assign(c[0], TOOLS), grouper.assign(c[0], TOOLS)
    assert one.session != two.session
    grouper.done(one.session)
    grouper.done(two.session)
    assert {grouper.assign(c[1], TOOLS).turn, grouper.assign(c[1], TOOLS).turn} == {1}


def test_changed_tools_are_written_and_old_sessions_are_forgotten() -> None:
    grouper = SessionGrouper("s", max_sessions=2)
    c = conversation("x", 2)

    def assign(messages: list[dict], tools: list[dict], arrived_s: float = 0.0):
        where = grouper.assign(messages, tools, arrived_s)
        grouper.done(where.session, arrived_s + 1.0)
        return where

    first = assign(c[0], TOOLS)
    assert assign(c[1], [dict(t) for t in TOOLS], 2.0).tools_changed is False  # equal, not same
    assert assign(c[2], [], 4.0).tools_changed is True
    overlapping = grouper.assign(c[2] + [{"role": "user", "content": "more"}], [], 4.5)
    assert overlapping.turn == 0  # it came before the answer it would follow had ended
    assign(conversation("y", 0)[0], TOOLS)
    assign(conversation("z", 0)[0], TOOLS)
    again = assign(c[2] + [{"role": "user", "content": "more"}], [], 9.0)
    assert again.session != first.session and again.turn == 0  # evicted: a new session


def test_only_sampling_parameters_are_kept() -> None:
    request = request_of(body([{"role": "user", "content": "q"}], user="alice@example.com",
                              api_key="sk-secret", metadata={"team": "x"}, top_p=0.9,
                              tool_choice="auto"))  # fmt: skip
    assert request is not None
    assert request.params == {"temperature": 0, "stream": True, "top_p": 0.9, "tool_choice": "auto"}
    assert request_of({"prompt": "not chat"}) is None


def test_redaction_covers_requests_answers_reasoning_and_arguments(tmp_path: Path) -> None:
    secret = "sk-live-12345"
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"key {secret}"}]},
        {"role": "assistant", "content": "", "reasoning_content": f"use {secret}",
         "tool_calls": [{"id": "c", "type": "function",
                         "function": {"name": "run", "arguments": f'{{"k": "{secret}"}}'}}]},
        {"role": "tool", "tool_call_id": "c", "content": f"ok {secret}"},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path, {})
    lines = TurnLines(SessionGrouper("s"), Redaction([r"sk-live-\d+"]))
    request = request_of(body(messages))
    assert request is not None
    answer = Answer({"role": "assistant", "content": f"the key is {secret}"})
    writer.write(lines.line(request, lines.start(request), answer))
    writer.close()
    text = path.read_text()
    assert secret not in text and text.count("[redacted]") == 5
    assert read_trace(path).turns == 1
