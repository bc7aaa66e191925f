"""Scripted history: the planned conversation grows to its ceiling and is a pure function."""

from __future__ import annotations

import orjson
import pytest

from repro.scenarios import get_scenario
from repro.scenarios.scripted import ScriptedHistory, estimate_tokens

SCENARIO = get_scenario("agentic-coding")


def play(session_id: int, seed: int = 0, context_max: int = 80_000) -> ScriptedHistory:
    history = ScriptedHistory(SCENARIO, session_id, seed, context_max, thinking=True)
    while history.advance():
        assert history.step < 100
    return history


@pytest.mark.parametrize("session_id", range(3))
def test_the_plan_grows_to_the_ceiling_like_a_live_session(session_id: int) -> None:
    history = play(session_id)
    measured = (len(orjson.dumps(history.messages)) + len(orjson.dumps(history.tools))) // 4
    assert 60_000 <= history.prompt_tokens <= 83_000
    assert 0.8 < history.prompt_tokens / measured < 1.2  # the estimate is about right
    assert 18 <= history.step <= 40
    calls = [
        c for m in history.messages if m["role"] == "assistant" for c in m.get("tool_calls", [])
    ]
    assert {c["function"]["name"] for c in calls} == {
        "search_code",
        "read_file",
        "edit_file",
        "run_tests",
    }
    assert all(c["id"].startswith(f"call_{session_id}_") for c in calls)
    results = {m["tool_call_id"] for m in history.messages if m["role"] == "tool"}
    assert results == {c["id"] for c in calls}  # every planned call got its result


def test_a_short_ceiling_gives_a_short_plan() -> None:
    history = play(0, context_max=16_000)
    assert history.step <= 8 and history.prompt_tokens <= 19_000


def test_the_history_is_a_pure_function_of_its_inputs() -> None:
    assert play(3, seed=7).messages == play(3, seed=7).messages
    assert play(3, seed=7).messages[1] != play(4, seed=7).messages[1]
    assert play(3, seed=7).messages[1] != play(3, seed=8).messages[1]
    thinking = play(2).messages
    quiet = ScriptedHistory(SCENARIO, 2, 0, 80_000, thinking=False)
    quiet.advance()
    assert "reasoning_content" in thinking[2] and "reasoning_content" not in quiet.messages[2]


def test_every_step_is_reproducible_from_scratch() -> None:
    """Request `step` of a session can be rebuilt alone: the replay relies on it."""
    history = ScriptedHistory(SCENARIO, 5, 1, 30_000, thinking=True)
    snapshots = [orjson.dumps(history.messages)]
    while history.advance():
        snapshots.append(orjson.dumps(history.messages))
    again = ScriptedHistory(SCENARIO, 5, 1, 30_000, thinking=True)
    for step, snapshot in enumerate(snapshots):
        assert again.step == step and orjson.dumps(again.messages) == snapshot
        again.advance()


def test_the_estimate_counts_every_text_field() -> None:
    call = {"function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    message = {
        "role": "assistant",
        "content": "x" * 40,
        "reasoning_content": "y" * 40,
        "tool_calls": [call],
    }
    assert estimate_tokens([message]) == (80 + len("read_file") + 13) // 4 + 4
