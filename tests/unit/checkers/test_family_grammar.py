"""Each family's strict grammar, defect by defect: the kind, and the offset where the text
departs from what the model's template writes; and the calls kept."""

from __future__ import annotations

import json

import pytest

from repro.checkers import FORMATS
from repro.checkers.families import FAMILIES
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from repro.toolformats import ENCODERS
from tests.formats_corpus import TOOLS

TOOLSET = ToolSet.from_openai(TOOLS)


def check(family: str, text: str, finish_reason: str | None = None, reasoning: str = ""):
    output = AssistantOutput(content=text, reasoning=reasoning, finish_reason=finish_reason)
    return FAMILIES[family].check(output, TOOLSET)


def kinds_at(verdict) -> list[tuple[str, int]]:
    return [(str(d.kind), d.offset) for d in verdict.defects]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_encoders_turn_reads_back_as_its_calls(family: str) -> None:
    calls = (("search", {"query": 'naïve <b> & "q"\nline 2', "topn": 7, "source": "web"}),)
    text = ENCODERS[family](calls, "Looking it up.", None)
    verdict = check(family, text)
    assert verdict.clean, verdict.defects
    assert [(c.name, json.loads(c.arguments)) for c in verdict.calls] == list(calls)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_is_a_format_of_repro_check(family: str) -> None:
    assert FORMATS[family].check == FAMILIES[family].check
    assert FORMATS[family].raw


QWEN_TWO_PARAMS = (
    "<tool_call>\n<function=search>\n<parameter=query>\nx\n</parameter>\n"
    "<parameter=topn>\n3\n</parameter>\n</function>\n</tool_call>"
)


def test_qwen_parameter_closed_by_the_next_one_is_flagged_where_the_next_opens() -> None:
    text = QWEN_TWO_PARAMS.replace("x\n</parameter>\n<parameter=topn>", "x\n<parameter=topn>")
    verdict = check("qwen3_coder", text)
    assert kinds_at(verdict) == [("unclosed_element", text.index("<parameter=topn"))]
    assert verdict.calls == ()  # engines keep this call; the model's grammar never writes it


def test_qwen_function_without_tool_call_is_a_missing_open_tag() -> None:
    text = "<function=get_date>\n</function>"
    verdict = check("qwen3_coder", text)
    assert kinds_at(verdict) == [("missing_open_tag", 0)]


def test_qwen_value_without_framing_newlines_is_bad_framing() -> None:
    text = QWEN_TWO_PARAMS.replace("<parameter=query>\nx\n", "<parameter=query>x")
    verdict = check("qwen3_coder", text)
    assert kinds_at(verdict) == [("bad_framing", text.index(">x") + 1)]


def test_qwen_typed_value_that_is_not_an_integer() -> None:
    text = QWEN_TWO_PARAMS.replace("\n3\n", "\nthree\n")
    verdict = check("qwen3_coder", text)
    assert kinds_at(verdict) == [("value_type_mismatch", text.index("three"))]


def test_qwen_python_spelling_of_a_boolean() -> None:
    text = ENCODERS["qwen3_coder"]([("write_file", {"path": "a", "content": "b", "append": True})])
    text = text.replace("\ntrue\n", "\nTrue\n")
    verdict = check("qwen3_coder", text)
    assert kinds_at(verdict) == [("python_literal", text.index("True"))]


def test_qwen_cut_inside_a_call_is_truncated_or_cut_by_the_length_limit() -> None:
    text = QWEN_TWO_PARAMS[: QWEN_TWO_PARAMS.index("3\n</parameter>")]
    at = text.index("<parameter=topn")
    assert kinds_at(check("qwen3_coder", text)) == [("truncated_block", at)]
    assert kinds_at(check("qwen3_coder", text, "length")) == [("truncated_call", at)]


def test_hermes_closing_marker_inside_a_json_string_is_data() -> None:
    text = hermes_call({"query": "a </tool_call> b"})
    verdict = check("hermes", text)
    assert verdict.clean
    assert json.loads(verdict.calls[0].arguments) == {"query": "a </tool_call> b"}


def hermes_call(arguments: dict, name: str = "search") -> str:
    return ENCODERS["hermes"]([(name, arguments)])


def test_hermes_parameters_key_is_a_malformed_call() -> None:
    text = hermes_call({"query": "x"}).replace('"arguments"', '"parameters"')
    assert kinds_at(check("hermes", text)) == [("malformed_call", len("<tool_call>"))]


def test_hermes_repeated_key_from_a_delta_sent_twice() -> None:
    text = hermes_call({"query": "x", "topn": 2}).replace(', "topn": 2', ', "topn": 2, "topn": 2')
    verdict = check("hermes", text)
    assert [d.kind for d in verdict.defects] == ["malformed_arguments"]
    assert "twice" in verdict.defects[0].message


def test_hermes_bare_object_in_content_is_a_stripped_marker() -> None:
    text = 'Sure. {"name": "get_date", "arguments": {}}'
    assert kinds_at(check("hermes", text)) == [("stripped_marker", text.index("{"))]


def deepseek(args: str) -> str:
    return (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>"
        f"{args}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )


def test_deepseek_marker_inside_a_json_string_is_read_on_and_flagged() -> None:
    text = deepseek('{"query": "a<｜tool▁call▁end｜>b"}')
    verdict = check("deepseek_v31", text)
    assert kinds_at(verdict) == [("markup_in_value", text.index("a<｜") + 1)]
    assert verdict.calls[0].name == "search"  # the call is not cut short there


def test_deepseek_whitespace_around_the_json_is_bad_framing() -> None:
    text = deepseek('\n{"query": "x"}')
    assert kinds_at(check("deepseek_v31", text)) == [("bad_framing", text.index("\n{"))]


def test_deepseek_call_without_its_section_is_a_missing_open_tag() -> None:
    text = deepseek('{"query": "x"}').replace("<｜tool▁calls▁begin｜>", "")
    assert ("missing_open_tag", 0) in kinds_at(check("deepseek_v31", text))


def test_deepseek_markers_stripped_leave_a_call_glued_to_its_json() -> None:
    text = 'Checking.search{"query": "x"}'
    assert kinds_at(check("deepseek_v31", text)) == [("stripped_marker", text.index("search"))]


def kimi(*calls: tuple[str, int]) -> str:
    body = "".join(
        f"<|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>{{}}<|tool_call_end|>"
        for name, i in calls
    )
    return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


def test_kimi_ids_climb_by_one_from_where_the_history_left_them() -> None:
    assert check("kimi_k2", kimi(("get_date", 7), ("list_tools", 8))).clean
    text = kimi(("get_date", 7), ("list_tools", 9))
    at = text.index("functions.list_tools")
    assert kinds_at(check("kimi_k2", text)) == [("bad_call_id", at)]


def test_kimi_singular_section_marker_and_id_without_functions_are_variants() -> None:
    text = kimi(("get_date", 0)).replace("tool_calls_section_begin", "tool_call_section_begin")
    assert kinds_at(check("kimi_k2", text)) == [("marker_variant", 0)]
    text = kimi(("get_date", 0)).replace("functions.", "")
    assert kinds_at(check("kimi_k2", text)) == [("marker_variant", text.index("get_date"))]


def test_kimi_empty_arguments_are_malformed() -> None:
    text = kimi(("get_date", 0)).replace("{}", "")
    assert [d.kind for d in check("kimi_k2", text).defects] == ["malformed_arguments"]


def test_kimi_empty_section_is_an_empty_block() -> None:
    text = "<|tool_calls_section_begin|><|tool_calls_section_end|>"
    assert kinds_at(check("kimi_k2", text)) == [("empty_block", 0)]


def test_glm47_pair_without_its_arg_key_opener() -> None:
    text = "<tool_call>searchquery</arg_key><arg_value>x</arg_value></tool_call>"
    assert kinds_at(check("glm47", text)) == [("missing_open_tag", text.index("</arg_key>"))]


def test_glm45_newlines_are_exact_and_glm47_has_none() -> None:
    glm45 = "<tool_call>get_date\n</tool_call>"
    assert check("glm45", glm45).clean
    assert kinds_at(check("glm47", glm45)) == [("bad_framing", len("<tool_call>"))]
    assert [d.kind for d in check("glm45", "<tool_call>get_date</tool_call>").defects] == [
        "bad_framing"
    ]


def test_glm_marker_inside_a_value_is_data_but_flagged() -> None:
    text = (
        "<tool_call>search<arg_key>query</arg_key><arg_value>a</tool_call>b</arg_value></tool_call>"
    )
    verdict = check("glm47", text)
    assert kinds_at(verdict) == [("markup_in_value", text.index("</tool_call>b"))]


def test_glm_call_text_left_when_its_tokens_are_dropped() -> None:
    text = "Done.searchqueryweather"  # <tool_call>, <arg_key>... stripped
    assert kinds_at(check("glm47", text)) == [("stripped_marker", text.index("search"))]


def test_harmony_recipient_on_the_analysis_channel() -> None:
    text = "<|channel|>analysis to=functions.get_date <|constrain|>json<|message|>{}<|call|>"
    assert kinds_at(check("harmony", text)) == [("recipient_on_analysis", 0)]


def test_harmony_call_without_constrain_json_is_malformed() -> None:
    text = "<|channel|>commentary to=functions.get_date<|message|>{}<|call|>"
    assert kinds_at(check("harmony", text)) == [("malformed_call", len("<|channel|>"))]


def test_harmony_anything_after_the_call_is_text_after_eos() -> None:
    text = "<|channel|>commentary to=functions.get_date <|constrain|>json<|message|>{}<|call|>x"
    assert kinds_at(check("harmony", text)) == [("text_after_eos", len(text) - 1)]


def test_harmony_stripped_tokens_leave_channel_words_glued() -> None:
    text = "analysisNeed it.assistantcommentary to=functions.get_date json{}"
    assert ("stripped_marker", text.index("assistantcommentary")) in kinds_at(
        check("harmony", text)
    )


def test_minimax_parameter_ended_by_invoke_close() -> None:
    text = ENCODERS["minimax_m2"]([("search", {"query": "x"})])
    text = text.replace("x</parameter>\n</invoke>", "x\n</invoke>")
    assert kinds_at(check("minimax_m2", text)) == [("unclosed_element", text.index("</invoke>"))]


def test_minimax_partial_wrapper_flushed_at_the_end() -> None:
    text = "Let me check.\n<minimax:tool_c"
    assert kinds_at(check("minimax_m2", text)) == [("partial_marker", text.index("<minimax"))]


def test_mistral_tool_calls_without_bracket_and_v11_form() -> None:
    text = "[TOOL_CALLSget_date[ARGS]{}"
    assert kinds_at(check("mistral", text)) == [("marker_variant", 0)]
    text = "[TOOL_CALLS]get_date{}"
    assert kinds_at(check("mistral", text)) == [("malformed_call", text.index("{"))]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_an_empty_turn(family: str) -> None:
    assert kinds_at(check(family, "")) == [("empty_turn", 0)]


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "harmony"])
def test_an_unknown_tool_and_a_schema_violation(family: str) -> None:
    text = ENCODERS[family]([("drop_tables", {"x": 1}), ("search", {"topn": 2})])
    kinds = [d.kind for d in check(family, text).defects]
    assert kinds == ["unknown_tool", "schema_violation"]


def test_server_parsed_calls_are_checked_with_the_familys_leaks() -> None:
    from repro.checkers.verdict import ToolCall

    call = ToolCall("search", '{"query": "a <|tool_call_end|> b"}')
    output = AssistantOutput(content="ok", tool_calls=(call,))
    verdict = FAMILIES["kimi_k2"].check(output, TOOLSET)
    assert [(d.kind, d.field) for d in verdict.defects] == [("markup_in_value", "tool_calls[0]")]


def test_check_turn_reads_the_named_format() -> None:
    from repro.checkers import check_turn

    text = ENCODERS["hermes"]([("get_date", {})])
    verdict = check_turn(AssistantOutput(content=text), TOOLS, format="hermes")
    assert verdict.clean and [c.name for c in verdict.calls] == ["get_date"]
    # Read as DSML (the default) the same text is prose: no call at all.
    assert check_turn(AssistantOutput(content=text), TOOLS).calls == ()
