"""The strict grammar, case by case: each defect kind at its exact offset, and the calls kept."""

from __future__ import annotations

import json

import pytest
from dsml_samples import DATE, SEARCH, SEARCH_CALL, TOOLSET, TWO_CALLS, WEATHER

from repro.checkers.dsml.stream import parse_dsml
from repro.dsml.encode import encode_completion
from repro.dsml.markers import BOS, EOS

BLOCK = "<｜DSML｜function_calls"


def kinds_at(text: str, finish_reason: str | None = None) -> list[tuple[str, int]]:
    return [(str(d.kind), d.offset) for d in parse_dsml(text, TOOLSET, finish_reason).defects]


def call_names(text: str) -> list[str]:
    return [c.name for c in parse_dsml(text, TOOLSET).calls]


@pytest.mark.parametrize(
    "text",
    [
        "Just prose, no calls.",
        "Just prose." + EOS,
        TWO_CALLS,
        TWO_CALLS.removesuffix(EOS),
        SEARCH_CALL,
        encode_completion([DATE]),
        encode_completion([DATE, DATE, WEATHER], content="多个调用。"),
        encode_completion([("get_weather", {"location": "  padded\n", "date": ""})]),
    ],
)
def test_canonical_text_is_clean(text: str) -> None:
    assert kinds_at(text) == []


def test_calls_come_back_with_arguments_as_sglang_serialises_them() -> None:
    verdict = parse_dsml(TWO_CALLS, TOOLSET)
    assert [(c.name, c.arguments) for c in verdict.calls] == [
        ("get_weather", '{"location": "San Francisco", "date": "2024-01-16"}'),
        ("get_date", "{}"),
    ]
    search = parse_dsml(SEARCH_CALL, TOOLSET).calls[0]
    assert json.loads(search.arguments) == SEARCH[1]


def test_block_without_its_blank_line() -> None:
    text = TWO_CALLS.replace("\n\n" + BLOCK, BLOCK)
    assert kinds_at(text) == [("block_lead_in", text.index(BLOCK))]
    assert call_names(text) == ["get_weather", "get_date"]  # the calls are still read
    at_start = TWO_CALLS[TWO_CALLS.index(BLOCK) :]
    assert kinds_at(at_start) == [("block_lead_in", 0)]


def test_v4_block_name_in_v32_output() -> None:
    text = TWO_CALLS.replace("function_calls", "tool_calls")
    assert kinds_at(text) == [("wrong_block_name", text.index("<｜DSML｜tool_calls"))]
    assert call_names(text) == ["get_weather", "get_date"]


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ('<｜DSML｜invoke name="get_date"', '<|DSML|invoke name="get_date"', "ascii_bars"),
        ('<｜DSML｜invoke name="get_date"', '<｜DSML|invoke name="get_date"', "ascii_bars"),
        ('<｜DSML｜invoke name="get_date"', '<｜｜DSML｜｜invoke name="get_date"', "doubled_bars"),
        ('<｜DSML｜invoke name="get_date"', '<｜ DSML ｜invoke name="get_date"', "garbled_marker"),
        ('<｜DSML｜invoke name="get_date"', '<｜DSMLinvoke name="get_date"', "garbled_marker"),
        ('<｜DSML｜invoke name="get_date"', '<invoke name="get_date"', "missing_dsml_prefix"),
        ('<｜DSML｜invoke name="get_date"', '<｜DSML｜invok name="get_date"', "unknown_tag"),
    ],
)
def test_garbled_invoke_tag_is_named_at_its_start(old: str, new: str, kind: str) -> None:
    text = TWO_CALLS.replace(old, new)
    assert kinds_at(text)[0] == (kind, text.index(new))
    assert "get_date" not in call_names(text)  # the garbled call is not reported as a call


def test_detokenizer_that_drops_dsml_tokens() -> None:
    """sglang #15042: with the special token skipped, the markup reaches the client bare."""
    text = TWO_CALLS.replace("｜DSML｜", "")
    found = kinds_at(text)
    assert {k for k, _ in found} == {"missing_dsml_prefix"}
    assert found[0] == ("missing_dsml_prefix", text.index("<function_calls>"))
    assert call_names(text) == []


def test_separators_are_exact() -> None:
    text = TWO_CALLS.replace(">\n<｜DSML｜invoke", ">\n\n<｜DSML｜invoke", 1)
    assert kinds_at(text) == [("bad_separator", text.index(">\n\n<｜DSML｜invoke") + 2)]
    date = '\n<｜DSML｜parameter name="date"'
    indented = TWO_CALLS.replace(date, "\n  " + date[1:])
    assert kinds_at(indented) == [("bad_separator", indented.index("  " + date[1:]))]
    assert call_names(indented) == ["get_date"]  # the invoke with the bad separator is dropped
    head = TWO_CALLS.replace('name="get_weather">\n<', 'name="get_weather">\n  <')
    assert kinds_at(head) == [("malformed_invoke", head.index("  <｜DSML｜parameter"))]


@pytest.mark.parametrize(
    ("old", "new", "spot"),
    [
        ('name="get_date">\n\n<', 'name="get_date"><', '"><'),
        ('invoke name="get_date">', 'invoke nam="get_date">', 'nam="'),
        ('name="get_date">\n', 'name="get_date"> \n', "> \n"),
        ('name="get_date">', 'name="get<date">', "<date"),
    ],
)
def test_malformed_invoke(old: str, new: str, spot: str) -> None:
    """The offset is where the tag first departs from `<｜DSML｜invoke name="NAME">` + newline."""
    text = TWO_CALLS.replace(old, new)
    expected = {'"><': 2, 'nam="': 0, "> \n": 1, "<date": 0}[spot]
    assert kinds_at(text) == [("malformed_invoke", text.index(spot) + expected)]
    assert call_names(text) == ["get_weather"]


def test_deepseek_leniencies_are_kept() -> None:
    """DeepSeek's rule 4 reads `\\s*name=` and allows a blank line after the invoke tag."""
    text = TWO_CALLS.replace(
        '<｜DSML｜invoke name="get_weather">', '<｜DSML｜invoke\tname="get_weather">'
    )
    assert kinds_at(text) == []
    extra_line = TWO_CALLS.replace('name="get_weather">\n', 'name="get_weather">\n\n')
    assert kinds_at(extra_line) == []
    value_newline = TWO_CALLS.replace(
        "San Francisco</｜DSML｜parameter>", "San Francisco<\n/｜DSML｜parameter>"
    )
    assert kinds_at(value_newline) == []
    assert (
        json.loads(parse_dsml(value_newline, TOOLSET).calls[0].arguments)["location"]
        == "San Francisco"
    )


def test_malformed_parameter() -> None:
    no_lt = TWO_CALLS.replace(
        "San Francisco</｜DSML｜parameter>", "San Francisco/｜DSML｜parameter>"
    )
    assert kinds_at(no_lt) == [("malformed_parameter", no_lt.index("/｜DSML｜parameter"))]
    no_name = TWO_CALLS.replace('parameter name="location"', "parameter")
    assert kinds_at(no_name)[0] == ("malformed_parameter", no_name.index('string="true">San') - 1)
    assert call_names(no_lt) == call_names(no_name) == ["get_date"]


def test_string_attribute_must_be_true_or_false() -> None:
    text = TWO_CALLS.replace('string="true">San', 'string="yes">San')
    assert kinds_at(text) == [("bad_string_attribute", text.index('string="yes"'))]
    missing = TWO_CALLS.replace(' string="true">San', ">San")
    assert kinds_at(missing) == [("bad_string_attribute", missing.index(' name="location">'))]


def test_duplicate_parameter() -> None:
    param = '<｜DSML｜parameter name="date" string="true">2024-01-16</｜DSML｜parameter>'
    text = TWO_CALLS.replace(param, param + "\n" + param)
    assert kinds_at(text) == [("duplicate_parameter", text.rindex(param))]
    assert call_names(text) == ["get_date"]


def test_stray_closing_tag_between_invokes() -> None:
    text = TWO_CALLS.replace("</｜DSML｜invoke>\n", "</｜DSML｜invoke>\n</｜DSML｜invoke>\n", 1)
    stray = text.index("</｜DSML｜invoke>\n</｜DSML｜invoke>") + len("</｜DSML｜invoke>\n")
    assert kinds_at(text) == [("unbalanced_markup", stray)]


def test_block_structure() -> None:
    empty = "Hmm.\n\n<｜DSML｜function_calls>\n</｜DSML｜function_calls>"
    assert kinds_at(empty) == [("empty_block", empty.index(BLOCK))]
    trailing = TWO_CALLS.removesuffix(EOS) + "\n"
    assert kinds_at(trailing) == [("text_after_block", len(trailing) - 1)]
    block = TWO_CALLS[TWO_CALLS.index("\n\n" + BLOCK) :].removesuffix(EOS)
    second = TWO_CALLS.removesuffix(EOS) + block
    assert kinds_at(second) == [("text_after_block", len(TWO_CALLS) - len(EOS))]
    after_eos = TWO_CALLS + "more"
    assert kinds_at(after_eos) == [("text_after_eos", len(TWO_CALLS))]
    assert kinds_at("Done." + EOS + "again") == [("text_after_eos", len("Done." + EOS))]


@pytest.mark.parametrize("finish_reason", [None, "stop", "length"])
def test_truncation_points_at_the_open_element(finish_reason: str | None) -> None:
    kind = "truncated_call" if finish_reason == "length" else "truncated_block"
    in_value = TWO_CALLS[: TWO_CALLS.index("San Fran") + 3]
    param_at = TWO_CALLS.index('<｜DSML｜parameter name="location"')
    assert kinds_at(in_value, finish_reason) == [(kind, param_at)]
    between = TWO_CALLS[: TWO_CALLS.index('<｜DSML｜parameter name="date"') + 5]
    assert kinds_at(between, finish_reason) == [
        (kind, TWO_CALLS.index('<｜DSML｜invoke name="get_weather"'))
    ]
    after_invoke = TWO_CALLS[: TWO_CALLS.index('<｜DSML｜invoke name="get_date"')]
    assert kinds_at(after_invoke, finish_reason) == [(kind, TWO_CALLS.index(BLOCK))]
    assert call_names(after_invoke) == ["get_weather"]  # the finished call is kept
    opener = TWO_CALLS[: TWO_CALLS.index(BLOCK) + 9]
    assert kinds_at(opener, finish_reason) == [(kind, TWO_CALLS.index(BLOCK))]


def test_markup_where_only_text_may_be() -> None:
    bare = 'Calling it now: <｜DSML｜invoke name="get_date">\n</｜DSML｜invoke>'
    assert kinds_at(bare) == [
        ("markup_in_content", bare.index("<｜DSML")),
        ("markup_in_content", bare.index("</｜DSML")),
    ]
    value = TWO_CALLS.replace("San Francisco", 'San <｜DSML｜invoke name="x"> Francisco')
    assert kinds_at(value) == [("markup_in_value", value.index('<｜DSML｜invoke name="x"'))]
    # A value cannot hold its own closing tag (DSML has no escapes): the value ends there,
    # and the real closer is left over between the tags.
    closer = TWO_CALLS.replace("San Francisco", "San </｜DSML｜parameter> Francisco")
    real = closer.index("</｜DSML｜parameter>", closer.index("Francisco"))
    assert kinds_at(closer) == [("unbalanced_markup", real)]
    token = TWO_CALLS.replace("San Francisco", f"San{EOS}Francisco")
    assert kinds_at(token) == [("special_token", token.index(EOS))]
    cut = "All done. <｜end▁of"
    assert kinds_at(cut) == [("markup_in_content", cut.index("<｜"))]


@pytest.mark.parametrize(
    "leak",
    [
        BOS,
        "<｜fim▁hole｜>",
        "<｜User｜>",
        "<｜Assistant｜>",
        "<think>",
        "</think>",
        "<｜tool▁calls▁begin｜>",
    ],
)
def test_special_tokens_in_content(leak: str) -> None:
    text = f"Answer: {leak} done." + EOS
    assert kinds_at(text) == [("special_token", len("Answer: "))]


def test_calls_against_the_tools() -> None:
    unknown = TWO_CALLS.replace('name="get_date"', 'name="get_time"')
    assert kinds_at(unknown) == [("unknown_tool", unknown.index('<｜DSML｜invoke name="get_time"'))]
    assert call_names(unknown) == ["get_weather", "get_time"]  # well formed, so reported
    bad_json = SEARCH_CALL.replace('string="false">3<', 'string="false">three<')
    assert kinds_at(bad_json) == [("invalid_json_value", bad_json.index("three"))]
    nan = SEARCH_CALL.replace('string="false">3<', 'string="false">NaN<')
    assert kinds_at(nan) == [("invalid_json_value", nan.index("NaN"))]
    as_string = SEARCH_CALL.replace('"topn" string="false">3<', '"topn" string="true">3<')
    topn_at = as_string.index('<｜DSML｜parameter name="topn"')
    assert kinds_at(as_string) == [("schema_violation", topn_at)]
    nested = SEARCH_CALL.replace('{"lang": "zh"}', '{"lang": 5}')
    [defect] = parse_dsml(nested, TOOLSET).defects
    assert defect.kind == "schema_violation" and defect.message.startswith("search.filters.lang:")
    assert defect.offset == nested.index('<｜DSML｜parameter name="filters"')
    missing = TWO_CALLS.replace(
        '\n<｜DSML｜parameter name="date" string="true">2024-01-16</｜DSML｜parameter>', ""
    )
    [(kind, at)] = kinds_at(missing)
    assert (kind, at) == ("schema_violation", missing.index('<｜DSML｜invoke name="get_weather"'))


def test_empty_turns() -> None:
    for text in ("", "  \n ", EOS, "\n" + EOS):
        assert kinds_at(text) == [("empty_turn", 0)]


def test_defects_are_sorted_and_calls_are_only_well_formed_invokes() -> None:
    text = encode_completion([WEATHER, DATE, WEATHER], content="x").replace(
        'string="true">2024-01-16', 'string="maybe">2024-01-16', 1
    )
    verdict = parse_dsml(text, TOOLSET)
    assert [c.name for c in verdict.calls] == ["get_date", "get_weather"]
    assert [d.offset for d in verdict.defects] == sorted(d.offset for d in verdict.defects)
