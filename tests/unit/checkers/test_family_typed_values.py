"""The leniency rule for untyped parameter text (Qwen3 XML, GLM, MiniMax), read by the type
the tool's JSON Schema allows (repro/checkers/families/typed_values.py)."""

from __future__ import annotations

import pytest

from repro.checkers.families.typed_values import STRING_ONLY, allowed_types, read_untyped
from repro.checkers.kinds import Kind


@pytest.mark.parametrize(
    ("schema", "types"),
    [
        ({"type": "integer"}, {"integer"}),
        ({"type": ["string", "null"]}, {"string", "null"}),
        ({"enum": ["a", 1]}, {"string", "integer"}),
        ({"anyOf": [{"type": "number"}, {"type": "boolean"}]}, {"number", "boolean"}),
        ({"const": True}, {"boolean"}),
    ],
)
def test_the_types_a_schema_allows(schema: dict, types: set[str]) -> None:
    assert allowed_types(schema) == types


def test_a_schema_without_a_type_leaves_the_value_unconstrained() -> None:
    assert allowed_types({"$ref": "#/defs/x"}) == {"*"}
    assert allowed_types({"anyOf": [{"type": "string"}, {"$ref": "#/x"}]}) == {"*"}


@pytest.mark.parametrize(
    ("raw", "types", "value"),
    [
        ("3", frozenset({"integer"}), 3),
        ("3.0", frozenset({"integer"}), 3.0),  # an integral number is an integer in JSON Schema
        ("2", frozenset({"number"}), 2),
        ("null", frozenset({"integer", "null"}), None),
        ('["a", 1]', frozenset({"array"}), ["a", 1]),
        ("  7 ", frozenset({"integer"}), 7),  # JSON's own whitespace
        ("007", frozenset({"string", "integer"}), "007"),  # not JSON: the string
        ("true", STRING_ONLY, "true"),  # a string parameter is its text, always
        ("[1, 2]", frozenset({"*"}), [1, 2]),
        ("plain", frozenset({"*"}), "plain"),
    ],
)
def test_values_that_read(raw: str, types: frozenset[str], value: object) -> None:
    assert read_untyped(raw, types)[:2] == (value, None)


@pytest.mark.parametrize(
    ("raw", "types", "kind"),
    [
        ("five", frozenset({"integer"}), Kind.VALUE_TYPE_MISMATCH),
        ('"5"', frozenset({"integer"}), Kind.VALUE_TYPE_MISMATCH),
        ("True", frozenset({"boolean"}), Kind.PYTHON_LITERAL),
        ("None", frozenset({"integer", "null"}), Kind.PYTHON_LITERAL),
        ("{'a': 1}", frozenset({"object"}), Kind.PYTHON_LITERAL),
        ("NaN", frozenset({"number"}), Kind.VALUE_TYPE_MISMATCH),
    ],
)
def test_values_that_do_not(raw: str, types: frozenset[str], kind: Kind) -> None:
    value, found, why = read_untyped(raw, types)
    assert (value, found) == (raw, kind)
    assert why
