"""The engine's lenient parsers for the families: what they recover, what they drop."""

from __future__ import annotations

import json

import pytest

from repro.scenarios import get_scenario
from repro.sim.formats import PARSER_NAMES, tool_parser
from repro.sim.formats.typed import convert

TOOLS = get_scenario("agentic-coding").tools()
NAMES = frozenset(t["function"]["name"] for t in TOOLS)


def _calls(fmt: str, text: str, chunk: int | None = None) -> tuple[str, list[tuple[str, dict]]]:
    parser = tool_parser("auto", fmt)
    if chunk is None:
        parsed = parser.whole(text, TOOLS, NAMES)
        return parsed.content, [(c.name, json.loads(c.arguments)) for c in parsed.calls]
    detector = parser.stream(TOOLS)
    content, calls = "", []
    for i in range(0, len(text), chunk):
        out = detector.feed(text[i : i + chunk])
        content += out.content
        calls += out.calls
    out = detector.finish()
    content += out.content
    calls += out.calls
    assert [c.index for c in calls] == list(range(len(calls)))
    return content, [(c.name, json.loads(c.arguments)) for c in calls]


@pytest.mark.parametrize("chunk", [None, 1, 5, 1000])
@pytest.mark.parametrize(
    ("fmt", "text", "calls"),
    [
        # a parameter closed by the next one, and the function by </function> alone
        ("qwen3_coder",
         "<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n<parameter=start_line>\n3\n</function>\n</tool_call>",
         [("read_file", {"path": "a.py", "start_line": 3})]),
        # `<function=` with no `<tool_call>` (SGLang's fallback)
        ("qwen3_coder", "Let me.\n<function=search_code>\n<parameter=query>\nfoo\n</parameter>\n</function>",
         [("search_code", {"query": "foo"})]),
        ("hermes", '<tool_call>\n{"name": "search_code", "parameters": {"query": "x"}}\n</tool_call>',
         [("search_code", {"query": "x"})]),
        ("kimi_k2",
         "<|tool_call_section_begin|><|tool_call_begin|>search_code:0 <|tool_call_argument_begin|>{\"query\": \"x\"}<|tool_call_end|><|tool_calls_section_end|>",
         [("search_code", {"query": "x"})]),
        ("mistral", '[TOOL_CALLSsearch_code[ARGS{"query": "x"}[TOOL_CALLS]run_tests[ARGS]{"target": "t"}',
         [("search_code", {"query": "x"}), ("run_tests", {"target": "t"})]),
        ("glm45", "<tool_call>search_code\\n<arg_key>query</arg_key>\\n<arg_value>x</arg_value>\n</tool_call>",
         [("search_code", {"query": "x"})]),
        ("minimax_m2",
         '<minimax:tool_call>\n<invoke name="search_code">\n<parameter name="query">x\n<parameter name="max_results">5</parameter>\n</invoke>\n</minimax:tool_call>',
         [("search_code", {"query": "x", "max_results": 5})]),
        ("harmony",
         "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant to=functions.search_code<|channel|>commentary <|constrain|>json<|message|>{\"query\": \"x\"}",
         [("search_code", {"query": "x"})]),
    ],
    ids=["qwen-unclosed", "qwen-bare-function", "hermes-parameters", "kimi-singular-no-prefix",
         "mistral-no-brackets", "glm-literal-newlines", "minimax-unclosed", "harmony-role-recipient"],
)  # fmt: skip
def test_the_recoveries_engines_make(fmt, text, calls, chunk):
    assert _calls(fmt, text, chunk)[1] == calls


@pytest.mark.parametrize("chunk", [None, 3])
def test_a_malformed_call_is_dropped_and_the_next_one_kept(chunk):
    text = (
        '<tool_call>\n{"name": "search_code", "arguments": {"query": "x"\n</tool_call>\n'
        '<tool_call>\n{"name": "run_tests", "arguments": {"target": "t"}}\n</tool_call>'
    )
    assert _calls("hermes", text, chunk)[1] == [("run_tests", {"target": "t"})]


def test_prose_before_the_calls_is_content_and_nothing_after_them():
    text = 'I will search.\n\n<tool_call>\n{"name": "search_code", "arguments": {"query": "x"}}\n</tool_call>\nand more'
    for chunk in (None, 1, 4):
        content, calls = _calls("hermes", text, chunk)
        assert content == "I will search." and calls == [("search_code", {"query": "x"})]


def test_text_with_a_marker_but_no_call_is_released_up_to_the_marker():
    assert _calls(
        "kimi_k2", "Done. <|tool_calls_section_begin|><|tool_call_begin|>functions.x", 3
    ) == (
        "Done.",
        [],
    )


def test_one_shot_drops_calls_to_undeclared_tools():
    text = '[TOOL_CALLS]nope[ARGS]{}[TOOL_CALLS]run_tests[ARGS]{"target": "t"}'
    assert _calls("mistral", text)[1] == [("run_tests", {"target": "t"})]
    assert [n for n, _ in _calls("mistral", text, 4)[1]] == ["nope", "run_tests"]  # streaming: any


def test_harmony_content_is_the_final_message_without_its_framing():
    text = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>All done."
    for chunk in (None, 1, 7):
        assert _calls("harmony", text, chunk) == ("All done.", [])


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("5", {"type": "integer"}, 5),
        ("1.0", {"type": "integer"}, "1.0"),  # degenerates to the string
        ("2.0", {"type": "number"}, 2.0),
        ("3", {"type": "number"}, 3),
        ("True", {"type": "object"}, True),  # literal_eval, as engines coerce it
        ("{'a': 1}", {"type": "object"}, {"a": 1}),
        ("null", {"type": "string"}, None),
        ("TRUE", {"type": "boolean"}, True),
        ("  x ", {"type": "string"}, "  x "),
        ('{"a": 1}', None, '{"a": 1}'),  # undeclared: the text
        ("[1, 2]", {"anyOf": [{"type": "array"}, {"type": "null"}]}, [1, 2]),
    ],
)
def test_values_typed_by_the_schema_as_engines_do(text, schema, value):
    assert convert(text, schema) == value


def test_every_sglang_parser_name_and_auto_resolve():
    for name, fmt in PARSER_NAMES.items():
        assert tool_parser(name, "hermes").format == fmt
    assert tool_parser("auto", "glm47").format == "glm47"
