"""Hypothesis strategies: random tool schemas with a valid call for each, and healthy text."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from repro.checkers.markup_scan import TRIGGERS

# Healthy model text: ASCII (markup-looking characters included, as in code), accents
# outside the Latin-1 block (mojibake's alphabet, covered by fixed phrases in the corpus),
# CJK, Cyrillic, Arabic, emoji with joiners, combining marks, the fullwidth bar.
_ALPHABET = (
    "".join(chr(c) for c in range(0x20, 0x7F))
    + "\n\n\t"
    + "ąčęėįšųūžŁőűřğışĀēīōū"
    + "中文字符测试北京天气你好世界日本語のテキスト한국어"
    + "Привет мир Ελληνικά مرحبا שלום"
    + "🚀🎉👩\u200d💻✓→∑≤∞—–…“”‘’"
    + "e\u0301a\u0308\u200b｜"
)
_TEXT_CHARS = st.sampled_from(_ALPHABET)


def _healthy(text: str) -> bool:
    return not any(t in text for t in TRIGGERS)


healthy_text = st.text(_TEXT_CHARS, max_size=80).filter(_healthy)
_names = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)


@st.composite
def schema_and_value(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], Any]:
    kinds = ["string", "integer", "number", "boolean", "null", "enum"]
    if depth < 2:
        kinds += ["array", "object", "array", "object"]
    kind = draw(st.sampled_from(kinds))
    if kind == "string":
        return {"type": "string"}, draw(healthy_text)
    if kind == "integer":
        return {"type": "integer"}, draw(st.integers())
    if kind == "number":
        return {"type": "number"}, draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return {"type": "boolean"}, draw(st.booleans())
    if kind == "null":
        return {"type": "null"}, None
    if kind == "enum":
        options = draw(st.lists(healthy_text, min_size=1, max_size=4, unique=True))
        return {"type": "string", "enum": options}, draw(st.sampled_from(options))
    if kind == "array":
        item_schema, _ = draw(schema_and_value(depth + 1))
        items = draw(st.lists(st.just(None), max_size=3))
        values = [draw(_value_for(item_schema, depth + 1)) for _ in items]
        return {"type": "array", "items": item_schema}, values
    return draw(object_schema_and_value(depth + 1))


@st.composite
def _value_for(draw: st.DrawFn, schema: dict[str, Any], depth: int) -> Any:
    """Another value valid for `schema` (one drawn by schema_and_value)."""
    kind = schema.get("type")
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if kind == "string":
        return draw(healthy_text)
    if kind == "integer":
        return draw(st.integers())
    if kind == "number":
        return draw(st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "null":
        return None
    if kind == "array":
        return [
            draw(_value_for(schema["items"], depth + 1)) for _ in range(draw(st.integers(0, 2)))
        ]
    return {
        key: draw(_value_for(sub, depth + 1))
        for key, sub in schema["properties"].items()
        if key in schema.get("required", []) or draw(st.booleans())
    }


@st.composite
def object_schema_and_value(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], dict]:
    keys = draw(st.lists(_names, max_size=5, unique=True))
    properties, value, required = {}, {}, []
    for key in keys:
        sub_schema, sub_value = draw(schema_and_value(depth))
        properties[key] = sub_schema
        if draw(st.booleans()):
            required.append(key)
            value[key] = sub_value
        elif draw(st.booleans()):
            value[key] = sub_value
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema, value


@st.composite
def tools_and_calls(draw: st.DrawFn) -> tuple[list[dict], list[tuple[str, dict]]]:
    """One to three tools with random schemas, and zero to four valid calls to them."""
    names = draw(st.lists(_names, min_size=1, max_size=3, unique=True))
    tools, by_name = [], {}
    for name in names:
        schema, _ = draw(object_schema_and_value())
        tools.append({"type": "function", "function": {"name": name, "parameters": schema}})
        by_name[name] = schema
    calls = []
    for name in draw(st.lists(st.sampled_from(names), max_size=4)):
        calls.append((name, draw(_value_for(by_name[name], 0))))
    return tools, calls
