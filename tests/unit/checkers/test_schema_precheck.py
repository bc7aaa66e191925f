"""The schema precheck says "valid" only where jsonschema does, and says it for most
valid calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft4Validator, Draft7Validator, Draft201909Validator, Draft202012Validator

from repro.checkers.schema_precheck import compile_precheck
from repro.checkers.toolset import ToolSet
from tests.dsml_corpus import TOOLS, samples

_KEYS = ["a", "b", "c", "d"]
# Small domains, so that random instances are often valid and bounds often bite.
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 2.5, -1.5, 1e300, float("inf")])
    | st.sampled_from(["", "a", "ab", "abc", "web", "1"])
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner),
    max_leaves=8,
)
# Every JSON type, each near the small bounds and values the schemas use.
_PROBES = [
    None, True, False, 0, 1, 2, 3, -1, 1.0, 2.5, -1.5, 1e300, float("inf"),
    "", "a", "ab", "abc", "web",
    [], [1], ["a", "b"], [None, 2.5, "a"],
    {}, {"a": 1}, {"a": "x", "b": None}, {"c": [1]}, {"d": {"a": 2}}, {"a": 1, "b": 2, "c": 3},
]  # fmt: skip
_TYPE_NAMES = ["string", "integer", "number", "boolean", "null", "array", "object"]
# Keywords the precheck leaves to jsonschema; a schema holding one gets no precheck.
_UNSUPPORTED = {
    "pattern": st.just("^a"),
    "oneOf": st.just([{"type": "string"}, {"type": "integer"}]),
    "not": st.just({"type": "null"}),
    "uniqueItems": st.just(True),
    "multipleOf": st.just(2),
    "patternProperties": st.just({"^a": {"type": "string"}}),
}


@st.composite
def schemas(draw: st.DrawFn, depth: int = 0, unsupported: bool = False) -> Any:
    if depth > 2 or draw(st.integers(0, 7)) == 0:
        return draw(st.booleans())
    sub = schemas(depth + 1, unsupported)
    options: dict[str, st.SearchStrategy] = {
        "type": st.sampled_from(_TYPE_NAMES)
        | st.lists(st.sampled_from(_TYPE_NAMES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(_JSON, min_size=1, max_size=4),
        "const": _JSON,
        "properties": st.dictionaries(st.sampled_from(_KEYS), sub, max_size=3),
        "required": st.lists(st.sampled_from(_KEYS), max_size=2, unique=True),
        "additionalProperties": sub,
        "items": sub,
        "minimum": st.sampled_from([-1, 0, 1, 2.5]),
        "maximum": st.sampled_from([0, 1, 2, 2.5]),
        "exclusiveMinimum": st.sampled_from([-1, 0, 1.0]),
        "exclusiveMaximum": st.sampled_from([1, 2, 3.5]),
        "minLength": st.integers(0, 2),
        "maxLength": st.integers(0, 3),
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 2),
        "minProperties": st.integers(0, 2),
        "maxProperties": st.integers(0, 2),
        "anyOf": st.lists(sub, min_size=1, max_size=3),
        "allOf": st.lists(sub, min_size=1, max_size=2),
        "format": st.just("email"),
        "description": st.just("not an assertion"),
    }
    if unsupported:
        options |= _UNSUPPORTED
    chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=3, unique=True))
    if draw(st.booleans()):  # most schemas say their type
        chosen.append("type")
    return {key: draw(options[key]) for key in dict.fromkeys(chosen)}


def _exact(schema: Any) -> bool:
    """No array or object among the enum/const values: there the precheck is exact."""
    if not isinstance(schema, dict):
        return True
    values = [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]
    if any(isinstance(v, list | dict) for v in values):
        return False
    subs = [*schema.get("properties", {}).values(), *schema.get("anyOf", [])]
    subs += [*schema.get("allOf", []), schema.get("additionalProperties", True)]
    subs.append(schema.get("items", True))
    return all(_exact(s) for s in subs)


_VALIDATORS = [Draft7Validator, Draft201909Validator, Draft202012Validator]


@settings(max_examples=200, deadline=None)
@given(schemas(unsupported=True), st.lists(_JSON, max_size=8), st.sampled_from(_VALIDATORS))
def test_the_precheck_never_says_valid_where_jsonschema_does_not(schema, instances, cls) -> None:
    cls.check_schema(schema)
    validator = cls(schema)
    check = compile_precheck(validator)
    if check is None:
        return
    for x in [*_PROBES, *instances]:
        if check(x):
            assert validator.is_valid(x), (schema, x)


@settings(max_examples=200, deadline=None)
@given(schemas(), st.lists(_JSON, max_size=8), st.sampled_from(_VALIDATORS))
def test_without_arrays_in_enums_the_precheck_is_exact(schema, instances, cls) -> None:
    cls.check_schema(schema)
    validator = cls(schema)
    check = compile_precheck(validator)
    assert check is not None, schema  # only keywords it judges
    if _exact(schema):
        for x in [*_PROBES, *instances]:
            assert check(x) == validator.is_valid(x), (schema, x)


_ONE_KEYWORD = [
    True,
    False,
    *({"type": name} for name in _TYPE_NAMES),
    {"type": ["integer", "string"]},
    {"type": ["number", "null"]},
    {"enum": [1, "a", True, None, 2.5]},
    {"enum": [False, 0]},
    {"const": 1},
    {"const": True},
    {"const": None},
    {"properties": {"a": {"type": "integer"}, "b": False}},
    {"required": ["a"]},
    {"required": ["a", "b"]},
    {"additionalProperties": False},
    {"properties": {"a": True}, "additionalProperties": False},
    {"properties": {"a": True}, "additionalProperties": {"type": "integer"}},
    {"items": {"type": "integer"}},
    {"items": False},
    {"minimum": 1},
    {"maximum": 1},
    {"exclusiveMinimum": 1},
    {"exclusiveMaximum": 1},
    {"minLength": 2},
    {"maxLength": 1},
    {"minItems": 1},
    {"maxItems": 1},
    {"minProperties": 1},
    {"maxProperties": 1},
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    {"allOf": [{"minimum": 0}, {"maximum": 2}]},
    {"format": "email", "title": "ignored", "x-vendor": 1},
    # Objects as tools declare them, checked by one fused closure.
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"type": "object", "properties": {"a": True, "b": False}, "additionalProperties": False},
    {"type": "object", "properties": {"a": True}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "required": ["a", "b"], "title": "ignored"},
]


@pytest.mark.parametrize("cls", _VALIDATORS)
@pytest.mark.parametrize("schema", _ONE_KEYWORD, ids=range(len(_ONE_KEYWORD)))
def test_each_keyword_is_judged_as_jsonschema_judges_it(schema, cls) -> None:
    validator = cls(schema)
    check = compile_precheck(validator)
    assert check is not None
    assert [check(x) for x in _PROBES] == [validator.is_valid(x) for x in _PROBES]


@pytest.mark.parametrize(
    ("schema", "cls"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, Draft202012Validator),
        ({"type": "string", "pattern": "^a"}, Draft202012Validator),
        ({"items": [{"type": "string"}]}, Draft7Validator),  # items as a list
        ({"type": "integer", "minimum": 1}, Draft4Validator),  # another draft's integers
    ],
)
def test_what_the_precheck_does_not_judge_gets_no_precheck(schema, cls) -> None:
    assert compile_precheck(cls(schema)) is None


def test_a_format_checker_means_no_precheck() -> None:
    from jsonschema import FormatChecker

    schema = {"type": "string", "format": "email"}
    assert compile_precheck(Draft202012Validator(schema)) is not None
    assert compile_precheck(Draft202012Validator(schema, format_checker=FormatChecker())) is None


def test_every_corpus_tool_has_a_precheck_and_every_corpus_call_passes_it() -> None:
    tools = ToolSet.from_openai(TOOLS)
    assert set(tools.prechecks) == set(tools.validators)
    for sample in samples(300, seed=5):
        for name, arguments in sample.calls:
            assert tools.prechecks[name](json.loads(json.dumps(arguments))), (name, arguments)


def test_violations_are_jsonschemas_when_the_precheck_says_no() -> None:
    tools = ToolSet.from_openai(TOOLS)
    bare = ToolSet(tools.validators)  # no prechecks: jsonschema alone
    for arguments in ({"query": 1, "topn": 0}, {"query": "q", "source": "blog"}, {}):
        assert tools.violations("search", arguments) == bare.violations("search", arguments)
        assert tools.violations("search", arguments)
