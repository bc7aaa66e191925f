"""Patterns in tool schemas are evaluated with a bound: a catastrophic one returns within about
a second and is never a violation on its own; every other pattern judges as jsonschema does."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from repro.checkers import schema_patterns
from repro.checkers.command import check_command
from repro.checkers.schema_patterns import PatternUnjudged, search
from repro.checkers.toolset import ToolSet
from repro.errors import EXIT_OK

# Backtracking takes 2^n steps on n `a`s before the `!` (minutes at 40 with Python's re).
CATASTROPHIC = "^(a|a)*$"
HOSTILE_VALUE = "a" * 40 + "!"


@pytest.fixture(autouse=True)
def fresh_patterns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test counts its own timeouts: a pattern struck out earlier is skipped at once."""
    monkeypatch.setattr(schema_patterns, "_compiled", {})
    monkeypatch.setattr(schema_patterns, "_strikes", {})
    yield


def tool(parameters: dict) -> ToolSet:
    return ToolSet.from_openai([{"type": "function", "function": {"name": "t", "parameters": parameters}}])  # fmt: skip


def judged(tools: ToolSet, arguments: dict) -> tuple[list[str], float]:
    """The violations as sentences, and the seconds the check took."""
    started = time.perf_counter()
    found = tools.violations("t", arguments, json.dumps(arguments))
    return [v.describe("t") for v in found], time.perf_counter() - started


@pytest.mark.parametrize(
    ("parameters", "arguments"),
    [
        ({"properties": {"q": {"pattern": CATASTROPHIC}}}, {"q": HOSTILE_VALUE}),
        # A skipped match must not become a violation under negation.
        ({"properties": {"q": {"not": {"pattern": CATASTROPHIC}}}}, {"q": HOSTILE_VALUE}),
        (
            {
                "patternProperties": {CATASTROPHIC: {"type": "integer"}},
                "additionalProperties": False,
            },
            {HOSTILE_VALUE: "not an integer"},
        ),
        ({"propertyNames": {"pattern": CATASTROPHIC}}, {HOSTILE_VALUE: 1}),
    ],
)
def test_a_catastrophic_pattern_returns_within_a_second_and_is_no_violation(
    parameters: dict, arguments: dict
) -> None:
    tools = tool({"type": "object", **parameters})
    violations, seconds = judged(tools, arguments)
    assert violations == [] and seconds < 1.0
    (note,) = tools.unjudged
    assert note.startswith(f"tool 't': pattern {CATASTROPHIC!r} not evaluated (it ran past")


def test_violations_found_before_the_pattern_stand() -> None:
    tools = tool({"properties": {"n": {"type": "integer"}, "q": {"pattern": CATASTROPHIC}}})
    violations, _ = judged(tools, {"n": "five", "q": HOSTILE_VALUE})
    assert violations == ["t.n: 'five' is not of type 'integer'"] and len(tools.unjudged) == 1


def test_a_pattern_that_keeps_timing_out_stops_costing_time() -> None:
    tools = tool({"properties": {"q": {"pattern": CATASTROPHIC}}})
    for n in range(schema_patterns.STRIKES):
        judged(tools, {"q": HOSTILE_VALUE + "!" * n})
    _, seconds = judged(tools, {"q": HOSTILE_VALUE + "?"})
    assert seconds < schema_patterns.MATCH_TIMEOUT_S / 10
    assert any("ran past the bound 3 times already" in note for note in tools.unjudged)


def test_one_call_spends_at_most_its_budget_on_patterns() -> None:
    slow = {f"q{i}": {"pattern": f"^(a|a)*{'b' * i}$"} for i in range(20)}  # 20 distinct
    tools = tool({"properties": slow})
    _, seconds = judged(tools, {f"q{i}": HOSTILE_VALUE for i in range(20)})
    assert seconds < schema_patterns.CALL_BUDGET_S + 0.3  # 20 timeouts would be 2 s


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("x{4294967294}", "its fixed repeats come to 4,294,967,294 units, past 50,000"),
        ("^[[:alpha:]]+$", "it holds a set that re and the regex package read differently"),
    ],
)
def test_a_pattern_the_engine_should_not_compile_is_unjudged_at_once(
    pattern: str, why: str
) -> None:
    started = time.perf_counter()
    with pytest.raises(PatternUnjudged) as raised:
        search(pattern, "x")
    assert raised.value.why == why and time.perf_counter() - started < 0.5


def test_unevaluated_properties_beside_pattern_properties_is_not_judged() -> None:
    tools = tool(
        {"patternProperties": {"^x-": {"type": "integer"}}, "unevaluatedProperties": False}
    )
    violations, _ = judged(tools, {"x-a": 1, "other": 2})
    assert violations == []
    (note,) = tools.unjudged
    assert note.startswith("tool 't': unevaluatedProperties not evaluated")


def test_normal_patterns_still_reject_what_they_do_not_match() -> None:
    tools = tool({
        "properties": {"lang": {"pattern": "^[a-z]{2}$"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": False,
    })  # fmt: skip
    assert judged(tools, {"lang": "en", "x-n": 1})[0] == []
    assert judged(tools, {"lang": "EN", "x-n": "1", "extra": 0})[0] == [
        "t.lang: 'EN' does not match '^[a-z]{2}$'",
        "t.x-n: '1' is not of type 'integer'",
        "t: 'extra' does not match any of the regexes: '^x-'",
    ]
    assert tools.unjudged == {}


def test_schemas_without_patterns_keep_their_precheck() -> None:
    tools = tool({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert "t" in tools.prechecks


# Small pieces, so that random patterns often match and often do not.
_PIECES = ["a", "b", "[ab]", "\\d", ".", "a*", "(a|b)", "b+", "a?", "(?:ab)+", "\\s", "\\w"]
_PATTERNS = st.builds(
    lambda start, parts, end: ("^" if start else "") + "".join(parts) + ("$" if end else ""),
    st.booleans(),
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(_PATTERNS, st.text(alphabet="ab1 \n٣é", max_size=6), st.booleans())
def test_every_pattern_within_the_bound_judges_as_jsonschema(
    pattern: str, value: str, as_key: bool
) -> None:
    schema: dict[str, Any] = (
        {"patternProperties": {pattern: {"type": "integer"}}, "additionalProperties": False}
        if as_key
        else {"properties": {"q": {"pattern": pattern}}}
    )
    arguments = {value: "x"} if as_key else {"q": value}
    plain = sorted(e.message for e in Draft202012Validator(schema).iter_errors(arguments))
    tools = tool(schema)
    bounded = sorted(v.message for v in tools.violations("t", arguments))
    assert bounded == plain and tools.unjudged == {}


def test_repro_check_returns_clean_for_a_call_only_a_catastrophic_pattern_could_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = [{"type": "function", "function": {"name": "t", "parameters": {
        "type": "object", "properties": {"q": {"type": "string", "pattern": CATASTROPHIC}},
    }}}]  # fmt: skip
    call = {"function": {"name": "t", "arguments": json.dumps({"q": HOSTILE_VALUE})}}
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    (tmp_path / "turn.json").write_text(json.dumps({"role": "assistant", "tool_calls": [call]}))
    started = time.perf_counter()
    code = check_command(tmp_path / "tools.json", [tmp_path / "turn.json"], "openai-parsed")
    assert code == EXIT_OK and time.perf_counter() - started < 2.0
    said = capsys.readouterr()
    assert "clean, 1 tool call" in said.out
    assert said.err.startswith("note: tool 't': pattern") and "not evaluated" in said.err
