"""The agentic-coding scenario, both halves in process: the script follows, the oracle agrees.

A stand-in for the server counts prompt tokens as bytes / 4 (the embedded engine's model).
"""

from __future__ import annotations

import json

import orjson
import pytest

from repro.checkers.verdict import ToolCall
from repro.scenarios import get_scenario, script_for
from repro.scenarios.agentic_coding import texts
from repro.scenarios.generic import generic_script

SCENARIO = get_scenario("agentic-coding")
TOOLS = SCENARIO.tools()


def tokens(messages: list[dict]) -> int:
    return (len(orjson.dumps(messages)) + len(orjson.dumps(TOOLS))) // 4


def converse(
    session_id: int, seed: int = 0, context_max: int = 80_000
) -> tuple[list[dict], list[list]]:
    """Play one session to its end; returns the transcript and the oracle's defects per turn."""
    session = SCENARIO.session(session_id, seed, context_max)
    script = script_for(TOOLS)
    messages, defects = session.opening(), []
    for turn in range(100):
        prompt = tokens(messages)
        plan = script(messages, TOOLS)
        calls = [ToolCall(c.name, json.dumps(c.arguments)) for c in plan.calls]
        defects.append(session.semantic_defects(calls, plan.content))
        ids = [f"c{turn}_{i}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": plan.content, "reasoning_content": plan.reasoning,
                         "tool_calls": [{"id": i, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                        for i, c in zip(ids, calls, strict=True)]})  # fmt: skip
        if not calls or session.finished(prompt):
            break
        messages += session.respond(calls, ids, prompt, 100)
    return messages, defects


@pytest.mark.parametrize("session_id", range(6))
def test_sessions_grow_to_the_ceiling_with_no_semantic_defect(session_id: int) -> None:
    messages, defects = converse(session_id)
    assert all(not d for d in defects)
    assert 60_000 <= tokens(messages) <= 80_000 + 3_000
    assert 18 <= len(defects) <= 40
    names = {
        c["function"]["name"]
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls", [])
    }
    assert names == {"search_code", "read_file", "edit_file", "run_tests"}


def test_short_sessions_follow_context_max() -> None:
    messages, defects = converse(0, context_max=16_000)
    assert len(defects) <= 8 and tokens(messages) <= 16_000 + 3_000
    assert messages[-1]["role"] == "assistant" and texts.PASSED not in messages[-1]["content"]


def test_sessions_are_deterministic_and_distinct() -> None:
    assert converse(3, seed=7)[0] == converse(3, seed=7)[0]
    assert converse(3, seed=7)[0][1] != converse(4, seed=7)[0][1]
    assert converse(3, seed=7)[0][1] != converse(3, seed=8)[0][1]


def shown_session():
    session = SCENARIO.session(0, 0, 80_000)
    messages = session.opening()
    plan = script_for(TOOLS)(messages, TOOLS)
    calls = [ToolCall(c.name, json.dumps(c.arguments)) for c in plan.calls]
    messages += session.respond(calls, ["a"], 1500, 80)
    return session, messages


def test_oracle_flags_paths_symbols_and_tests_never_shown() -> None:
    session, _ = shown_session()
    other = SCENARIO.session(1, 0, 80_000)
    foreign = other.world.paths[0]
    bad = [
        ToolCall("read_file", json.dumps({"path": foreign, "start_line": 1})),
        ToolCall("search_code", json.dumps({"query": "no_such_symbol_1"})),
        ToolCall("run_tests", json.dumps({"target": other.world.failing_test})),
    ]
    defects = session.semantic_defects(bad)
    assert [d.field for d in defects] == ["tool_calls[0]", "tool_calls[1]", "tool_calls[2]"]
    assert all(d.kind == "semantic" for d in defects)
    assert foreign in defects[0].message


def test_a_final_answer_naming_another_sessions_test_or_path_is_semantic() -> None:
    messages, defects = converse(0)
    answer = messages[-1]["content"]
    assert "::" in answer and defects[-1] == []  # the clean answer names its own test
    session = SCENARIO.session(0, 0, 80_000)
    session.opening()
    other = SCENARIO.session(1, 0, 80_000).world
    spliced = answer.replace(" passes.", f" passes.{other.failing_test} passes.")
    (defect,) = session.semantic_defects([], spliced)
    assert defect.kind == "semantic" and other.failing_test in defect.message
    assert defect.field == "content" and spliced[defect.offset :].startswith(other.failing_test)
    (defect,) = session.semantic_defects([], f"I read {other.paths[0]} and it is fine.")
    assert f"path '{other.paths[0]}'" in defect.message
    own = session.world
    assert session.semantic_defects([], f"{own.failing_test} and {own.paths[0]}: fine.") == []
    # Calls are judged as calls; their turn's text is not read as an answer.
    assert session.semantic_defects([ToolCall("read_file", json.dumps({"path": own.paths[0]}))],
                                    spliced) == []  # fmt: skip


def test_oracle_flags_old_text_seen_in_another_file() -> None:
    session, messages = shown_session()
    script = script_for(TOOLS)
    search = script(messages, TOOLS)
    reads = [ToolCall(c.name, json.dumps(c.arguments)) for c in search.calls]
    messages.append({"role": "assistant", "content": "", "tool_calls": []})
    messages += session.respond(reads, [f"r{i}" for i in range(len(reads))], 4000, 80)
    paths = list(session.shown.lines)
    line = next(iter(session.shown.lines[paths[0]] - {""}))
    elsewhere = next(
        p
        for p in session.world.paths
        if p != paths[0] and line not in session.shown.lines.get(p, ())
    )
    edit = ToolCall(
        "edit_file", json.dumps({"path": elsewhere, "old_text": "    " + line, "new_text": "x"})
    )
    (defect,) = session.semantic_defects([edit])
    assert (
        "was never shown in" in defect.message and f"it was shown in {paths[0]}" in defect.message
    )
    good = ToolCall("edit_file", json.dumps({"path": paths[0], "old_text": line, "new_text": "x"}))
    assert session.semantic_defects([good]) == []


def test_unknown_clients_get_the_generic_script() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"]}}}]  # fmt: skip
    assert script_for(tools) is generic_script
    turn = generic_script([{"role": "user", "content": "weather?"}], tools)
    assert [(c.name, c.arguments) for c in turn.calls] == [
        ("get_weather", {"city": "example", "days": 1})
    ]
    assert generic_script([{"role": "tool", "content": "sunny"}], tools).calls == ()


@pytest.mark.parametrize(
    "result",
    [
        'search_code: 0 matches for "x"',
        "read_file: src/a.py lines 1-0 of 10",
        "edit_file: src/a.py: replaced 1 occurrence at line 3\ncontext after the edit:",
        "run_tests: t: FAILED (1 failed, 0 passed)\nE   ValueError",
        "garbage \uff5cDSML\uff5c result",
    ],
)
def test_the_script_always_acts_or_answers(result: str) -> None:
    """Whatever a tool returned, the next turn has a call or content: never an empty turn."""
    session = SCENARIO.session(0, 0, 80_000)
    messages = [*session.opening(), {"role": "assistant", "content": "", "tool_calls": []}]
    messages.append({"role": "tool", "tool_call_id": "a", "content": result})
    turn = script_for(TOOLS)(messages, TOOLS)
    assert turn.calls or turn.content
