"""The checkers' JSON reading is json.loads without NaN/Infinity; writing is SGLang's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.checkers.json_codec import arguments_text, read_json

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_reads_what_json_reads(value) -> None:
    text = json.dumps(value)
    assert read_json(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "7",
        "12345678901234567890123",
        "true",
        "false",
        "null",
        "-3",
        "1.5e3",
        " 4 ",
        "[1, 2]\n",
    ],
)
def test_the_shortcut_values_read_as_json_reads_them(text: str) -> None:
    value = read_json(text)
    assert value == json.loads(text) and type(value) is type(json.loads(text))


@pytest.mark.parametrize(
    "text", ["007", "²", "٣", "NaN", "Infinity", "-Infinity", "[NaN]", "tru", "", "[1] x", "{}{}"]
)
def test_what_is_not_strict_json_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        read_json(text)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(), _json, max_size=4))
def test_arguments_are_written_as_sglang_writes_them(arguments: dict) -> None:
    assert arguments_text(arguments) == json.dumps(arguments, ensure_ascii=False)


def test_arguments_text_spells_numbers_as_json_dumps_does() -> None:
    # 1e999 reads as JSON to infinity, which json.dumps spells `Infinity`.
    arguments = {"a": read_json("1e999"), "b": -0.0, "c": 10**30, "d": [1e-05, {"e": None}]}
    assert arguments_text(arguments) == json.dumps(arguments, ensure_ascii=False)
    assert arguments_text({}) == "{}"
