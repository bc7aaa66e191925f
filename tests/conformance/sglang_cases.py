"""The DSML cases from SGLang's own tests (research/dsml.md §2.3), as data.

Each case is SGLang's input text. `calls` set: the text is well formed, we must find no defect
and both parsers must read exactly these calls. `kinds` set: SGLang is lenient here and we
flag the text; `rule` names the rule it breaks, and `sglang_calls` records what SGLang reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

D = "｜DSML｜"


def _tool(name: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = list(required)
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


_S = {"type": "string"}
TOOLS = [
    _tool(
        "search",
        {
            "query": _S,
            "topn": {"type": "integer"},
            "source": {"type": "string", "enum": ["web", "news"]},
            "ratio": {"type": "number"},
        },
    ),
    _tool("get_favorite_tourist_spot", {"city": _S}, ("city",)),
    _tool("get_date", {}),
    _tool("get_weather", {"city": _S}, ("city",)),
    _tool("navigate", {"destination": _S}),
    _tool("write_note", {"payload": {"type": "object"}}),
    _tool("lookup_fixture", {"key": _S}),
    _tool("set_flag", {"enabled": {"type": "boolean"}}),
    _tool("submit", {}),
    _tool("get_current_weather", {"location": _S}),
]


@dataclass(frozen=True)
class Case:
    name: str  # SGLang test file :: test
    text: str
    calls: list[tuple[str, dict]] | None = None
    kinds: frozenset[str] = field(default_factory=frozenset)
    rule: str = ""
    sglang_calls: list[tuple[str, dict]] = field(default_factory=list)


def _param(name: str, is_string: str, value: str) -> str:
    return f'<{D}parameter name="{name}" string="{is_string}">{value}</{D}parameter>'


def _invoke(name: str, body: str) -> str:
    return f'<{D}invoke name="{name}">{body}</{D}invoke>'


def _block(*invokes: str, preamble: str = "", block: str = "function_calls") -> str:
    return f"{preamble}<{D}{block}>\n" + "\n".join(invokes) + f"\n</{D}{block}>"


def _body(*params: tuple[str, str, str]) -> str:
    return "\n" + "\n".join(_param(*p) for p in params) + "\n"


RULE_WHITESPACE = (
    "rules 2-5: the block follows a blank line and tags are separated by exactly `>` and one "
    "newline; SGLang accepts any whitespace and indentation"
)
RULE_LEAD_IN = "rule 2: a block starts with a blank line (`\\n\\n<｜DSML｜function_calls`)"
RULE_JSON_BODY = (
    "rule 4: an invoke holds parameter tags; SGLang also reads a JSON object body ('Format 2')"
)
RULE_SELF_CLOSING = "V3.2 has no self-closing invoke (a V4 shape); SGLang reads it as a call"
RULE_INVOKE_NEWLINE = "rule 4: the invoke tag ends with a newline; SGLang takes any body"

_XML = f"""I'll help you with information about San Francisco and get its favorite tourist spot for you.\n\n
        <{D}function_calls>\n
            <{D}invoke name="get_favorite_tourist_spot">\n
                <{D}parameter name="city" string="true">San Francisco</{D}parameter>\n
            </{D}invoke>\n
            <{D}invoke name="search">
                <{D}parameter name="query" string="true">WebNav benchmark</{D}parameter>
                <{D}parameter name="topn" string="false">10</{D}parameter>
                <{D}parameter name="source" string="true">web</{D}parameter>
            </{D}invoke>
        </{D}function_calls>
        """
_JSON = f"""I'll help you with information about San Francisco and get its favorite tourist spot for you.

        <{D}function_calls>
            <{D}invoke name="get_favorite_tourist_spot">
            {{
                "city": "San Francisco"
            }}
        </{D}invoke>
            <{D}invoke name="search">
            {{
                "query": "WebNav benchmark",
                "topn": 10,
                "source": "web"
            }}
        </{D}invoke>
        </{D}function_calls>
        """
_TWO = [
    ("get_favorite_tourist_spot", {"city": "San Francisco"}),
    ("search", {"query": "WebNav benchmark", "topn": 10, "source": "web"}),
]
_STREAM_XML = f"""<{D}function_calls>
            <{D}invoke name="get_favorite_tourist_spot">
                <{D}parameter name="city" string="true">San Francisco</{D}parameter>
                <{D}parameter name="another_city" string="true">London</{D}parameter>
                <{D}parameter name="topn" string="false">10</{D}parameter>
                <{D}parameter name="obj" string="false">{{"name": "John", "age": 30}}</{D}parameter>
            </{D}invoke>
        </{D}function_calls>"""
_PREAMBLE = "Let me look up the weather in Beijing for you."
_COMPACT = (
    f'<{D}function_calls><{D}invoke name="get_weather"><{D}parameter name="city" '
    f'string="true">Beijing</{D}parameter></{D}invoke></{D}function_calls>'
)
_BEIJING = [("get_weather", {"city": "Beijing"})]

CASES = [
    Case(
        "test_function_call_parser.py::test_detect_and_parse_xml_format",
        _XML,
        kinds=frozenset({"block_lead_in", "malformed_invoke", "bad_separator", "text_after_block"}),
        rule=RULE_WHITESPACE,
        sglang_calls=_TWO,
    ),
    Case(
        "test_function_call_parser.py::test_detect_and_parse_json_format",
        _JSON,
        kinds=frozenset({"block_lead_in", "malformed_invoke", "bad_separator", "text_after_block"}),
        rule=RULE_JSON_BODY + "; " + RULE_WHITESPACE,
        sglang_calls=_TWO,
    ),
    Case(
        "test_function_call_parser.py::test_streaming_xml_format",
        _STREAM_XML,
        kinds=frozenset({"block_lead_in", "malformed_invoke", "bad_separator"}),
        rule=RULE_WHITESPACE,
        sglang_calls=[
            (
                "get_favorite_tourist_spot",
                {
                    "city": "San Francisco",
                    "another_city": "London",
                    "topn": 10,
                    "obj": {"name": "John", "age": 30},
                },
            )
        ],
    ),
    Case(
        "test_function_call_parser.py::test_detect_and_parse_no_parameters",
        f'Let me get the current date for you.\n\n<{D}function_calls>\n<{D}invoke name="get_date">\n'
        f"</{D}invoke>\n</{D}function_calls>",
        calls=[("get_date", {})],
    ),
    Case(
        "test_function_call_parser.py::test_streaming_no_parameters",
        f'<{D}function_calls>\n<{D}invoke name="get_date">\n</{D}invoke>\n</{D}function_calls>',
        kinds=frozenset({"block_lead_in"}),
        rule=RULE_LEAD_IN,
        sglang_calls=[("get_date", {})],
    ),
    Case(
        "test_function_call_parser.py::test_streaming_no_parameters_with_whitespace",
        f'<{D}function_calls>\n<{D}invoke name="get_date">\n\n</{D}invoke>\n</{D}function_calls>',
        kinds=frozenset({"block_lead_in"}),
        rule=RULE_LEAD_IN,
        sglang_calls=[("get_date", {})],
    ),
    Case(
        "test_function_call_parser.py::self-closing zero-argument invoke",
        f'<{D}function_calls>\n<{D}invoke name="submit"/>\n</{D}function_calls>',
        kinds=frozenset({"block_lead_in", "malformed_invoke"}),
        rule=RULE_SELF_CLOSING,
        sglang_calls=[("submit", {})],
    ),
    Case(
        "test_deepseekv32_detector.py::MalformedJSON regression (non-JSON string=false value)",
        f'<{D}function_calls>\n<{D}invoke name="write_note">\n'
        f'<{D}parameter name="payload" string="false">Здравствуйте, мир! Это тест</{D}parameter>\n'
        f"</{D}invoke>\n</{D}function_calls>",
        kinds=frozenset({"block_lead_in", "invalid_json_value"}),
        rule='string="false" values must be JSON; SGLang falls back to the raw string; '
        + RULE_LEAD_IN,
        sglang_calls=[("write_note", {"payload": "Здравствуйте, мир! Это тест"})],
    ),
    Case(
        "test_deepseekv32_detector.py::JSON string=false value streamed in pieces",
        f'\n\n<{D}function_calls>\n<{D}invoke name="write_note">\n'
        f'<{D}parameter name="payload" string="false">{{"city": "San Francisco"}}</{D}parameter>\n'
        f"</{D}invoke>\n</{D}function_calls>",
        calls=[("write_note", {"payload": {"city": "San Francisco"}})],
    ),
    Case(
        "unit/test_deepseekv32_detector.py::preamble then compact block",
        _PREAMBLE + _COMPACT,
        kinds=frozenset({"block_lead_in", "bad_separator", "malformed_invoke"}),
        rule=RULE_WHITESPACE,
        sglang_calls=_BEIJING,
    ),
    Case(
        "unit/test_deepseekv32_detector.py::bare invoke without the block",
        _PREAMBLE + f'<{D}invoke name="get_weather"><{D}parameter name="city" string="true">'
        f"Beijing</{D}parameter></{D}invoke>",
        kinds=frozenset({"markup_in_content"}),
        rule="rule 8: DSML outside a function_calls block is markup in content; SGLang reads "
        "bare invokes (PRs #23786, #24199)",
        sglang_calls=_BEIJING,
    ),
    Case(
        "unit/test_deepseekv32_detector.py::a literal `<` in prose",
        "The check 3 < 5 held, done.",
        calls=[],
    ),
    Case(
        "unit/test_deepseekv32_detector.py::a literal `<` before a call",
        "Since 3 < 5 holds, calling the tool.\n\n"
        + _block(_invoke("get_weather", _body(("city", "true", "Beijing")))),
        calls=_BEIJING,
    ),
    Case(
        "unit/test_deepseek_detectors.py::JSON body right after prose",
        f'I\'ll navigate there now.<{D}function_calls><{D}invoke name="navigate">'
        f'{{"destination":"library"}}</{D}invoke></{D}function_calls>',
        kinds=frozenset({"block_lead_in", "bad_separator", "malformed_invoke"}),
        rule=RULE_JSON_BODY + "; " + RULE_WHITESPACE,
        sglang_calls=[("navigate", {"destination": "library"})],
    ),
    Case(
        "test_deepseekv32_strict_dsml.py::MALFORMED_TURN (V4.1-Flash output)",
        "I'll call the `set_flag` function to enable the flag.\n\n"
        + _block(
            _invoke("set_flag", f'\n<parameter name="enabled">true</{D}parameter>\n'),
            block="tool_calls",
        ),
        kinds=frozenset({"wrong_block_name", "missing_dsml_prefix"}),
        rule="a V4 block in V3.2 output, and a parameter tag without the DSML token or string "
        "attribute; SGLang reads the V3.2 block name only",
        sglang_calls=[],
    ),
    Case(
        "unit/test_zero_argument... / strict: empty invoke body",
        "Let me look.\n\n" + _block(_invoke("submit", "")),
        kinds=frozenset({"malformed_invoke"}),
        rule=RULE_INVOKE_NEWLINE,
        sglang_calls=[("submit", {})],
    ),
    Case(
        "test_deepseekv32_strict_dsml.py::whitespace-only invoke body",
        "Let me look.\n\n" + _block(_invoke("submit", "\n   \n")),
        kinds=frozenset({"malformed_invoke"}),
        rule="rule 4: after the invoke tag, one newline (or the zero-argument blank line); "
        "SGLang takes any whitespace",
        sglang_calls=[("submit", {})],
    ),
    Case(
        "test_deepseekv32_strict_dsml.py::two consecutive blocks",
        "Let me look.\n\n"
        + _block(_invoke("lookup_fixture", _body(("key", "true", "a"))))
        + "\n"
        + _block(_invoke("lookup_fixture", _body(("key", "true", "b")))),
        kinds=frozenset({"text_after_block"}),
        rule="rule 7: one block per message, nothing after it but EOS; SGLang reads every block",
        sglang_calls=[("lookup_fixture", {"key": "a"}), ("lookup_fixture", {"key": "b"})],
    ),
    Case(
        "test_deepseekv32_strict_dsml.py::unknown tool",
        "Let me look.\n\n" + _block(_invoke("nope", _body(("key", "true", "a")))),
        kinds=frozenset({"unknown_tool"}),
        rule="only declared tools; SGLang drops the call with a warning",
        sglang_calls=[],
    ),
    Case(
        "TestDeepSeekV32DetectorMTP::`>` split from `</thinking`",
        f'<thinking>\n…\n</thinking>\n\n<{D}function_calls>\n<{D}invoke name="get_current_weather">'
        f'{{"location": "杭州"}}</{D}invoke>\n</{D}function_calls>',
        kinds=frozenset({"malformed_invoke"}),
        rule=RULE_JSON_BODY,
        sglang_calls=[("get_current_weather", {"location": "杭州"})],
    ),
]

# test_deepseekv32_strict_dsml.py::test_parameter_shapes: well-formed bodies, read identically.
_SHAPES = {
    "str": ("lookup_fixture", [("key", "true", "alpha")], {"key": "alpha"}),
    "two str": (
        "search",
        [("query", "true", "a b"), ("topn", "false", "3")],
        {"query": "a b", "topn": 3},
    ),
    "numbers": (
        "search",
        [("topn", "false", "10"), ("ratio", "false", "3.5")],
        {"topn": 10, "ratio": 3.5},
    ),
    "bool true": ("set_flag", [("enabled", "false", "true")], {"enabled": True}),
    "bool false": ("set_flag", [("enabled", "false", "false")], {"enabled": False}),
    "nested / quotes / <> / newline": (
        "search",
        [
            ("query", "true", 'He said "hi" <b>&</b>\nnext'),
            ("topn", "false", '{"name": "John", "age": 30}'),
        ],
        {"query": 'He said "hi" <b>&</b>\nnext', "topn": {"name": "John", "age": 30}},
    ),
    "empty string value": ("lookup_fixture", [("key", "true", "")], {"key": ""}),
}
for _label, (_name, _params, _args) in _SHAPES.items():
    _text = "Let me look.\n\n" + _block(_invoke(_name, _body(*_params)))
    _case = f"test_deepseekv32_strict_dsml.py::test_parameter_shapes[{_label}]"
    if _label.startswith("nested"):  # SGLang's own tools declare `topn` an integer
        CASES.append(
            Case(
                _case,
                _text,
                kinds=frozenset({"schema_violation"}),
                rule="arguments must fit the tool's JSON Schema (`topn` is an integer); SGLang "
                "does not validate them",
                sglang_calls=[(_name, _args)],
            )
        )
    else:
        CASES.append(Case(_case, _text, calls=[(_name, _args)]))

# test_deepseekv32_strict_dsml.py::_malformed_bodies: SGLang's strict mode rejects these.
_MALFORMED = {
    "param_missing_dsml_marker_and_string_attr": (
        f'\n<parameter name="key">alpha</{D}parameter>\n',
        {"missing_dsml_prefix"},
    ),
    "param_missing_string_attr_only": (
        f'<{D}parameter name="key">alpha</{D}parameter>',
        {"malformed_invoke", "bad_string_attribute", "bad_separator"},
    ),
    "param_missing_dsml_marker_only": (
        f'<parameter name="key" string="true">alpha</{D}parameter>',
        {"missing_dsml_prefix"},
    ),
    "unterminated_param_tag": (
        f'<{D}parameter name="key" string="true">alpha',
        {"malformed_invoke", "markup_in_value", "truncated_block"},
    ),
    "truncated_json_body": ('{"key": "alpha"', {"malformed_invoke"}),
    "invalid_json_body": ('{"key": alpha}', {"malformed_invoke"}),
    "non_object_json_body": ('["alpha"]', {"malformed_invoke"}),
    "good_param_then_stray_tag": (
        _param("key", "true", "alpha") + f'\n<parameter name="x">1</{D}parameter>',
        {"malformed_invoke", "missing_dsml_prefix"},
    ),
    "prose_in_body": ("\nenable it please\n", {"malformed_invoke"}),
}
for _label, (_body_text, _kinds) in _MALFORMED.items():
    CASES.append(
        Case(
            f"test_deepseekv32_strict_dsml.py::_malformed_bodies[{_label}]",
            "Sure.\n\n" + _block(_invoke("lookup_fixture", _body_text)),
            kinds=frozenset(_kinds),
            rule="rules 4-5: an invoke holds only well-formed parameter tags; SGLang's default "
            "mode reads what it can",
            sglang_calls=None,  # type: ignore[arg-type]  # recorded by the test, not pinned
        )
    )
