"""The embedded engine enforces a request's shape as a grammar would: a forced call, a named
tool, a JSON answer, one call only, and stop strings that cut the text."""

from __future__ import annotations

import json

from repro.dsml.markers import EOS
from repro.scenarios import PlannedCall, PlannedTurn
from repro.scenarios.agentic_coding import TOOLS
from repro.sim.shaping import cut_at_stop, shaped_turn

READ = PlannedCall("read_file", {"path": "src/a.py", "start_line": 1})
SEARCH = PlannedCall("search_code", {"query": "flush"})
HISTORY = [
    {"role": "user", "content": "fix it"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run_tests", "arguments": '{"target": "tests"}'}}]},
]  # fmt: skip


def shaped(plan: PlannedTurn, **shape: object) -> PlannedTurn:
    kwargs = {"tool_choice": "auto", "response_format": "text", "parallel_tool_calls": True}
    return shaped_turn(plan, HISTORY, TOOLS, **(kwargs | shape))  # type: ignore[arg-type]


def test_auto_leaves_the_plan_as_it_is() -> None:
    plan = PlannedTurn("think", "", (READ, SEARCH))
    assert shaped(plan) is plan


def test_required_makes_the_last_call_again_when_the_plan_has_none() -> None:
    answer = PlannedTurn("done", "The fix works.")
    forced = shaped(answer, tool_choice="required")
    assert forced.calls == (PlannedCall("run_tests", {"target": "tests"}),) and forced.content == ""


def test_a_named_tool_gets_exactly_one_call_with_arguments_its_schema_requires() -> None:
    plan = PlannedTurn("think", "", (READ, SEARCH))
    named = {"type": "function", "function": {"name": "search_code"}}
    assert shaped(plan, tool_choice=named).calls == (SEARCH,)
    edit = {"type": "function", "function": {"name": "edit_file"}}
    (call,) = shaped(plan, tool_choice=edit).calls
    assert call.name == "edit_file" and set(call.arguments) == {"path", "old_text", "new_text"}


def test_a_json_answer_makes_no_call_and_meets_the_answer_schema() -> None:
    for kind in ("json_object", "json_schema"):
        turn = shaped(PlannedTurn("think", "", (READ,)), response_format=kind)
        assert turn.calls == () and json.loads(turn.content) == {
            "summary": "continuing with the task",
            "done": False,
        }


def test_parallel_tool_calls_false_keeps_the_first_call() -> None:
    assert shaped(PlannedTurn("t", "", (READ, SEARCH)), parallel_tool_calls=False).calls == (READ,)


def test_a_stop_string_cuts_the_text_and_ends_it() -> None:
    assert cut_at_stop("abc\n\ndef", ["\n\n"]) == ("abc" + EOS, True)
    assert cut_at_stop("\n\n<call>", ["</tool_call>", "\n\n"]) == (EOS, True)
    assert cut_at_stop("abc", ["\n\n"]) == ("abc", False)
