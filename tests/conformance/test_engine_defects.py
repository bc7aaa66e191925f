"""Defects found in the engines' own parsers (docs/checkers.md, "Engine defects"), each with
the smallest input that shows it, the engine's answer and repro's. If an engine release
fixes one, its test fails: update the docs' table with the release that fixed it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.checkers.families import FAMILIES
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from tests.conformance.engine_driver import EngineDriver
from tests.formats_corpus import TOKENS, TOOLS

TOOLSET = ToolSet.from_openai(TOOLS)

HERMES_MARKER_IN_STRING = (
    '<tool_call>\n{"name": "search", "arguments": {"query": "a</tool_call>b"}}\n</tool_call>'
)
HARMONY_FIRST_MESSAGE_CALL = (
    "<|channel|>commentary to=functions.get_date <|constrain|>json<|message|>{}<|call|>"
)
GLM47_QUOTED_STRING = (
    '<tool_call>search<arg_key>query</arg_key><arg_value>"quoted"</arg_value></tool_call>'
)
MINIMAX_NULLABLE_INTEGER = (
    '\n<minimax:tool_call>\n<invoke name="create_ticket">\n<parameter name="title">t</parameter>'
    '\n<parameter name="reporter">{"name": "A"}</parameter>\n'
    '<parameter name="priority">2</parameter>\n</invoke>\n</minimax:tool_call>'
)
MINIMAX_NO_PARAMETER = (
    '\n<minimax:tool_call>\n<invoke name="get_date">\n</invoke>\n</minimax:tool_call>'
)
DEEPSEEK_TWO_CALLS = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_date<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
    "<｜tool▁call▁begin｜>list_tools<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
)


@pytest.fixture(scope="module")
def sglang(sglang_python: Path) -> Iterator[EngineDriver]:
    driver = EngineDriver(sglang_python, "family_sglang_driver.py")
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture(scope="module")
def vllm(vllm_python: Path) -> Iterator[EngineDriver]:
    driver = EngineDriver(vllm_python, "family_vllm_driver.py")
    try:
        yield driver
    finally:
        driver.close()


def sglang_parse(driver: EngineDriver, family: str, text: str) -> tuple[list, list]:
    """(whole parse's calls, the calls when the whole text arrives as one streamed delta)."""
    [result] = driver.ask([{"family": family, "text": text, "tools": TOOLS, "splits": [[text]]}])
    return result["whole"]["calls"], result["streams"][0]["calls"]


def vllm_parse(
    driver: EngineDriver, family: str, text: str, delta_tokens: int = 0
) -> tuple[list, list]:
    """(whole parse's calls, streamed in deltas of `delta_tokens`, or 1-8 at random)."""
    vocab, special = TOKENS[family]
    case = {
        "family": family,
        "text": text,
        "tools": TOOLS,
        "seeds": [1],
        "tokens": {"vocab": list(vocab), "special": list(special)},
        "delta_tokens": delta_tokens,
    }
    [result] = driver.ask([case])
    return result["whole"]["calls"], result["streams"][0]["calls"]


def repro(family: str, text: str) -> list[list[str]]:
    verdict = FAMILIES[family].check(AssistantOutput(content=text), TOOLSET)
    assert verdict.clean, verdict.defects
    return [[c.name, c.arguments] for c in verdict.calls]


def test_hermes_end_marker_inside_a_json_string(sglang, vllm) -> None:
    assert repro("hermes", HERMES_MARKER_IN_STRING) == [["search", '{"query": "a</tool_call>b"}']]
    assert sglang_parse(sglang, "hermes", HERMES_MARKER_IN_STRING) == ([], [["search", ""]])
    whole, streamed = vllm_parse(vllm, "hermes", HERMES_MARKER_IN_STRING)
    assert whole == []  # the call is lost
    assert streamed[0][0] == "search" and streamed[0][1].startswith('{"query": "a')
    assert "</tool_call>b" not in streamed[0][1]  # cut short at the marker


def test_sglang_gpt_oss_misses_a_call_in_the_first_message(sglang, vllm) -> None:
    assert repro("harmony", HARMONY_FIRST_MESSAGE_CALL) == [["get_date", "{}"]]
    assert sglang_parse(sglang, "harmony", HARMONY_FIRST_MESSAGE_CALL) == (
        [],  # detect_and_parse looks for `<|start|>assistant<|channel|>commentary`
        [["get_date", "{}"]],
    )
    assert vllm_parse(vllm, "harmony", HARMONY_FIRST_MESSAGE_CALL)[0] == [["get_date", "{}"]]


def test_sglang_glm_unquotes_a_string_value_whole_but_not_streamed(sglang, vllm) -> None:
    meant = [["search", '{"query": "\\"quoted\\""}']]
    assert repro("glm47", GLM47_QUOTED_STRING) == meant
    assert sglang_parse(sglang, "glm47", GLM47_QUOTED_STRING) == (
        [["search", '{"query": "quoted"}']],
        meant,
    )
    assert vllm_parse(vllm, "glm47", GLM47_QUOTED_STRING) == (meant, meant)


def test_sglang_minimax_reads_an_integer_of_a_nullable_type_as_null(sglang, vllm) -> None:
    meant = '{"title": "t", "reporter": {"name": "A"}, "priority": 2}'
    assert repro("minimax_m2", MINIMAX_NULLABLE_INTEGER) == [["create_ticket", meant]]
    wrong = [["create_ticket", meant.replace(": 2}", ": null}")]]
    assert sglang_parse(sglang, "minimax_m2", MINIMAX_NULLABLE_INTEGER) == (wrong, wrong)
    assert vllm_parse(vllm, "minimax_m2", MINIMAX_NULLABLE_INTEGER)[0] == [["create_ticket", meant]]


def test_sglang_minimax_streams_a_parameterless_invoke_with_no_arguments(sglang) -> None:
    assert repro("minimax_m2", MINIMAX_NO_PARAMETER) == [["get_date", "{}"]]
    assert sglang_parse(sglang, "minimax_m2", MINIMAX_NO_PARAMETER) == (
        [["get_date", "{}"]],
        [["get_date", ""]],  # arguments "" is not JSON: the client cannot read the call
    )


def test_two_deepseek_calls_in_one_delta(sglang, vllm) -> None:
    both = [["get_date", "{}"], ["list_tools", "{}"]]
    assert repro("deepseek_v31", DEEPSEEK_TWO_CALLS) == both
    whole, streamed = sglang_parse(sglang, "deepseek_v31", DEEPSEEK_TWO_CALLS)
    assert whole == both
    # The greedy name group takes everything up to the last separator (SGLang #35153's class).
    assert streamed == [
        ["get_date<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁call▁begin｜>list_tools", ""]
    ]
    whole, streamed = vllm_parse(vllm, "deepseek_v31", DEEPSEEK_TWO_CALLS)
    assert whole == both
    assert streamed == [["get_date", ""], ["list_tools", ""]]  # arguments lost


def test_vllm_deepseek_streaming_cuts_arguments_at_a_multi_token_delta(vllm) -> None:
    text = (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>"
        '{"query": "ab cd", "topn": 3}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    )
    meant = [["search", '{"query": "ab cd", "topn": 3}']]
    assert repro("deepseek_v31", text) == meant
    assert vllm_parse(vllm, "deepseek_v31", text, delta_tokens=2) == (meant, meant)
    # Eight tokens a delta (the stand-in tokenizer's tokens are characters, but for markers):
    # the delta holding the JSON's end and the call's end marker loses the JSON's end.
    assert vllm_parse(vllm, "deepseek_v31", text, delta_tokens=8)[1] == [
        ["search", '{"query": "ab cd", "top']
    ]


def test_vllm_hermes_writes_a_number_past_float_range_as_infinity_when_whole(vllm) -> None:
    """Found by a full request mix on vLLM 0.32 CPU (bench/HISTORY.md, 2026-12-05): the model
    wrote `5E292437` as the arguments; unstreamed they came back `Infinity`, not JSON (json.loads
    makes it inf, json.dumps writes it so), streamed as written."""
    text = '<tool_call>\n{"name": "search", "arguments": {"query": "a", "topn": 5E292437}}\n</tool_call>'
    whole, streamed = vllm_parse(vllm, "hermes", text)
    assert whole == [["search", '{"query": "a", "topn": Infinity}']]  # not JSON
    assert streamed[0][0] == "search" and "Infinity" not in streamed[0][1]
