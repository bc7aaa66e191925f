"""check_turn: the format follows from the turn; reasoning is always plain text."""

from __future__ import annotations

import json

from dsml_samples import TOOLS, TWO_CALLS

from repro.checkers import AssistantOutput, ToolCall, check_turn
from repro.dsml.markers import EOS


def kinds(output: AssistantOutput) -> list[tuple[str, str, int]]:
    return [(str(d.kind), d.field, d.offset) for d in check_turn(output, TOOLS).defects]


WEATHER = ToolCall("get_weather", '{"location": "Paris", "date": "2024-01-16"}')


def test_raw_content_is_parsed_as_dsml() -> None:
    verdict = check_turn(AssistantOutput(content=TWO_CALLS, finish_reason="stop"), TOOLS)
    assert verdict.clean
    assert [c.name for c in verdict.calls] == ["get_weather", "get_date"]


def test_server_parsed_calls_are_checked_and_content_must_be_plain() -> None:
    clean = AssistantOutput(content="Checking." + EOS, tool_calls=(WEATHER,))
    assert check_turn(clean, TOOLS).clean
    assert check_turn(clean, TOOLS).calls == (WEATHER,)
    leaked = AssistantOutput(content=TWO_CALLS, tool_calls=(WEATHER,))
    assert kinds(leaked)[0] == ("markup_in_content", "content", TWO_CALLS.index("<｜DSML"))


def test_server_parsed_arguments() -> None:
    cases = {
        ToolCall("get_weather", '{"location": "Paris"'): ("invalid_arguments", 20),
        ToolCall("get_weather", '["Paris"]'): ("invalid_arguments", 0),
        ToolCall("get_weather", '{"location": NaN, "date": "x"}'): ("invalid_arguments", 13),
        ToolCall("get_time", "{}"): ("unknown_tool", 0),
        ToolCall("get_weather", '{"location": "Paris"}'): ("schema_violation", 0),
        ToolCall("get_weather", '{"location": 3, "date": "x"}'): ("schema_violation", 1),
    }
    for call, (kind, offset) in cases.items():
        assert kinds(AssistantOutput(tool_calls=(call,))) == [(kind, "tool_calls[0]", offset)], call


def test_markup_inside_server_parsed_arguments_is_found_behind_escapes() -> None:
    value = 'see <｜DSML｜invoke name="x"> and <parameter name="k" string="true">'
    arguments = json.dumps({"location": value, "date": "d"}, ensure_ascii=True)
    found = kinds(AssistantOutput(tool_calls=(ToolCall("get_weather", arguments),)))
    assert [k for k, _, _ in found] == ["markup_in_value", "missing_dsml_prefix"]
    assert found[0][2] == arguments.index("<\\uff5cDSML")


def test_truncated_server_parsed_call_under_the_length_limit() -> None:
    cut = AssistantOutput(
        tool_calls=(WEATHER, ToolCall("get_weather", '{"location": "Par')), finish_reason="length"
    )
    assert kinds(cut) == [("truncated_call", "tool_calls[1]", 13)]


def test_reasoning_is_plain_text_in_both_formats() -> None:
    reasoning = "I will call <｜DSML｜function_calls> now </think>"
    for output in (
        AssistantOutput(content="Hi.", reasoning=reasoning),
        AssistantOutput(reasoning=reasoning, tool_calls=(WEATHER,)),
    ):
        assert kinds(output) == [
            ("markup_in_reasoning", "reasoning", reasoning.index("<｜")),
            ("special_token", "reasoning", reasoning.index("</think>")),
        ]


def test_empty_turn_in_both_formats() -> None:
    assert kinds(AssistantOutput(reasoning="thought a lot")) == [("empty_turn", "content", 0)]
    assert kinds(AssistantOutput(content=EOS)) == [("empty_turn", "content", 0)]


def test_finish_reason_length_turns_a_cut_block_into_truncated_call() -> None:
    cut = TWO_CALLS[: TWO_CALLS.index("2024")]
    assert kinds(AssistantOutput(content=cut, finish_reason="length"))[0][0] == "truncated_call"
    assert kinds(AssistantOutput(content=cut, finish_reason="stop"))[0][0] == "truncated_block"


def test_a_whole_thinking_mode_completion_as_content() -> None:
    """No reasoning parser ran: the text up to `</think>` is the reasoning (DeepSeek rule 1)."""
    raw = "I should check the date.</think>" + TWO_CALLS
    verdict = check_turn(AssistantOutput(content=raw), TOOLS)
    assert verdict.clean and [c.name for c in verdict.calls] == ["get_weather", "get_date"]
    # A block inside the reasoning is flagged there; later defects keep the content's offsets.
    bad = "Plan: <｜DSML｜invoke</think>" + TWO_CALLS.replace("get_date", "get_time")
    assert kinds(AssistantOutput(content=bad)) == [
        ("markup_in_reasoning", "content", bad.index("<｜DSML")),
        ("unknown_tool", "content", bad.index('<｜DSML｜invoke name="get_time"')),
    ]
    # With the reasoning given apart, `</think>` in content is a leak.
    leak = AssistantOutput(content="Done.</think>", reasoning="thought")
    assert kinds(leak) == [("special_token", "content", len("Done."))]
