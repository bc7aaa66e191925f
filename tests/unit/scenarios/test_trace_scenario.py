"""A trace as a scenario: the built-in agent exported as a trace replays its requests byte for
byte; sessions are sampled then cycled by seed; --context-max cuts or stretches; live replay
answers calls from the trace; the contamination oracle flags another session's names."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from repro.checkers.verdict import ToolCall
from repro.errors import UsageError
from repro.harness.load.request_body import chat_body
from repro.scenarios import get_scenario, scenario_identity
from repro.scenarios.trace.export import export_scenario
from repro.scenarios.trace.sessions import STUB
from repro.spec import RunSpec

SPEC = RunSpec()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trace") / "coding.jsonl"
    export_scenario("agentic-coding", 6, seed=3, context_max_tokens=20_000, thinking=True, out=out)
    return out


def bodies(plan) -> list[bytes]:
    sent = [orjson.dumps(chat_body(SPEC, "m", plan.session.tools, plan.messages))]
    while plan.advance():
        sent.append(orjson.dumps(chat_body(SPEC, "m", plan.session.tools, plan.messages)))
    return sent


def test_the_exported_agent_replays_its_own_requests_byte_for_byte(exported: Path) -> None:
    builtin, trace = get_scenario("agentic-coding"), get_scenario(f"trace:{exported}")
    for run_session in range(6):
        recorded = trace.pick(run_session, seed=3)
        original = int(recorded.id.rsplit("-", 1)[1])
        planned = bodies(builtin.scripted(original, 3, 20_000, True))
        replayed = bodies(trace.scripted(run_session, 3, 20_000, True))
        assert replayed == planned and len(planned) >= 4


def test_sessions_are_a_seeded_sample_then_cycle(exported: Path) -> None:
    trace = get_scenario(f"trace:{exported}")
    first = [trace.pick(i, seed=0).id for i in range(6)]
    second = [trace.pick(i, seed=0).id for i in range(6, 12)]
    assert sorted(first) == sorted(second) == sorted(s.id for s in trace.trace.sessions)
    assert first != second or first != [trace.pick(i, seed=1).id for i in range(6)]
    assert [trace.pick(i, seed=0).id for i in range(6)] == first  # the seed decides


def test_the_ceiling_cuts_a_session_after_its_first_request(exported: Path) -> None:
    trace = get_scenario(f"trace:{exported}")
    whole = trace.scripted(0, 0, 80_000, True)
    cut = trace.scripted(0, 0, 9_000, True)
    sizes = []
    while True:
        sizes.append(cut.prompt_tokens)
        if not cut.advance():
            break
    steps = 1
    while whole.advance():
        steps += 1
    assert 1 <= len(sizes) < steps
    assert all(size <= 9_000 for size in sizes[1:])


def test_a_stretched_session_grows_to_the_ceiling_with_its_own_results(tmp_path: Path) -> None:
    short = tmp_path / "short.jsonl"
    export_scenario(
        "agentic-coding", 2, seed=0, context_max_tokens=8_000, thinking=False, out=short
    )
    plain = get_scenario(f"trace:{short}").scripted(0, 0, 60_000, False)
    stretched = get_scenario(f"trace-stretched:{short}").scripted(0, 0, 60_000, False)
    while plain.advance():
        pass
    while stretched.advance():
        pass
    assert plain.prompt_tokens < 12_000
    assert 45_000 <= stretched.prompt_tokens <= 60_000
    repeat = stretched.sizing.repeat
    assert repeat >= 4
    results = [
        (a, b)
        for a, b in zip(plain.messages, stretched.messages, strict=True)
        if a["role"] == "tool"
    ]
    assert results and all(b["content"] == "\n\n".join([a["content"]] * repeat) for a, b in results)


def test_live_replay_answers_a_call_from_the_trace_else_a_marked_stand_in(exported: Path) -> None:
    trace = get_scenario(f"trace:{exported}")
    session = trace.session(0, 0, 80_000)
    recorded = session.trace.turns[0].response
    call = recorded["tool_calls"][0]["function"]
    reordered = json.dumps(dict(reversed(list(json.loads(call["arguments"]).items()))))
    messages = session.opening()
    assert messages == list(session.trace.turns[0].messages)
    answered = session.respond([ToolCall(call["name"], reordered)], ["mine-0"], 5_000, 100)
    expected = session.trace.turns[1].messages[-1]
    assert answered == [{"role": "tool", "tool_call_id": "mine-0", "content": expected["content"]}]
    unknown = session.respond(
        [ToolCall("read_file", '{"path": "nowhere.py", "start_line": 1}')], ["x"], 6_000, 100
    )
    assert unknown[0]["content"] == STUB.format(name="read_file") and session.stubs == 1
    assert session.follow_up() == []  # an agent's answer ends it; nothing recorded follows
    while not session.finished(0):
        session.respond([ToolCall(call["name"], call["arguments"])], ["y"], 0, 0)
    assert session.turn == len(session.trace.turns)


def test_a_recorded_chat_goes_on_with_the_user_after_each_answer(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "more"}, {"role": "assistant", "content": "sure"}]  # fmt: skip
    path.write_text(json.dumps({"messages": messages}) + "\n")
    session = get_scenario(f"trace:{path}").session(0, 0, 80_000)
    assert session.follow_up() == [{"role": "user", "content": "more"}]
    assert session.follow_up() == [] and session.turn == 1  # the last answer: it ends


def test_the_contamination_oracle_flags_only_another_sessions_names(exported: Path) -> None:
    trace = get_scenario(f"trace:{exported}")
    mine, other = trace.session(0, 0, 80_000), trace.session(1, 0, 80_000)
    own_path = mine.trace.turns[1].response["tool_calls"][0]["function"]["arguments"]
    their = other.trace.turns[1].response["tool_calls"][0]["function"]["arguments"]
    their_package = json.loads(their)["path"].split("/")[1]
    assert mine.semantic_defects([ToolCall("read_file", own_path)]) == []
    assert mine.semantic_defects([], "I made up brand_new_name_42 myself.") == []
    found = mine.semantic_defects([ToolCall("read_file", their)], f"see {their_package} too")
    assert found and {d.kind for d in found} == {"semantic"}
    assert found[0].field == "content" and f"'{their_package}'" in found[0].message
    assert all(d.field in ("content", "tool_calls[0]") for d in found)  # each name once
    assert "another session of the trace does" in found[0].message


def test_a_trace_that_cannot_be_replayed_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^The trace .*nope.jsonl does not exist\.$"):
        get_scenario(f"trace:{tmp_path / 'nope.jsonl'}")
    with pytest.raises(UsageError, match="give the trace file after 'trace:'"):
        get_scenario("trace:")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": 1}]}\n')
    with pytest.raises(UsageError, match=r"cannot be replayed: Line 1: messages\[0\]\.content"):
        get_scenario(f"trace:{bad}")


def test_a_trace_is_known_by_its_content(tmp_path: Path, exported: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(exported.read_bytes())
    assert scenario_identity(f"trace:{copy}") == scenario_identity(f"trace:{exported}")
    with copy.open("a") as more:
        more.write(json.dumps({"messages": [{"role": "user", "content": "another"}]}) + "\n")
    assert scenario_identity(f"trace:{copy}") != scenario_identity(f"trace:{exported}")
    assert scenario_identity("agentic-coding") is None
