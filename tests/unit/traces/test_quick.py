"""The fast mirror of the trace schema never accepts a line the schema refuses, and accepts
the lines repro itself writes (so reading a recorded trace skips jsonschema's cost)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from repro.traces.quick import fits
from repro.traces.schema import trace_schema
from tests.unit.traces.test_trace_check import GOOD, MALFORMED, TOOL


def schema_accepts(kind: str, line: dict[str, Any]) -> bool:
    validator = Draft202012Validator({"$ref": f"#/$defs/{kind}", "$defs": trace_schema()["$defs"]})
    return validator.is_valid(line)


def kind_of(line: dict[str, Any]) -> str:
    return "header_line" if "trace" in line else "turn_line" if "turn" in line else "session_line"


WRITTEN = [
    {"session": "a", "tools": [TOOL], "messages": GOOD},
    {"session": 7, "messages": GOOD[:2], "params": {"temperature": 0}, "model": "m", "meta": {}},
    {"session": "s1", "turn": 0, "messages": GOOD[:2], "tools": [TOOL], "params": {"stream": True},
     "model": "m", "response": GOOD[2], "finish_reason": "tool_calls", "usage": {"prompt_tokens": 9},
     "status": 200, "at": 1796135826.884, "ttft_s": 0.0213, "duration_s": 0.5},
    {"session": "s1", "turn": 1, "base": 2, "messages": GOOD[2:4], "response": None,
     "status": 500, "error": "boom", "ttft_s": None},
    {"session": "s", "turn": 0, "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]},
                                             {"role": "assistant", "content": None, "reasoning_content": "r",
                                              "tool_calls": [{"id": "c", "index": 0, "function": {"name": "", "arguments": ""}}]}]},
]  # fmt: skip


def test_the_lines_repro_writes_take_the_fast_path_and_the_schema_agrees() -> None:
    for line in WRITTEN:
        assert fits(kind_of(line), line), line
        assert schema_accepts(kind_of(line), line), line


def test_no_malformed_line_takes_the_fast_path() -> None:
    for content, _, _ in MALFORMED.values():
        if isinstance(content, bytes):
            continue
        for raw in content.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and fits(kind_of(line), line):
                assert schema_accepts(kind_of(line), line), raw


ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 3), st.floats(allow_nan=False), st.text(max_size=3),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)  # fmt: skip


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += _paths(inner, (*prefix, i))
    return found


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(range(len(WRITTEN))), st.data())
def test_a_mutated_line_is_never_accepted_by_the_mirror_alone(
    which: int, data: st.DataObject
) -> None:
    line = copy.deepcopy(WRITTEN[which])
    paths = [p for p in _paths(line) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        try:
            parent = line
            for step in path[:-1]:
                parent = parent[step]
            if not isinstance(parent, dict | list):
                continue
            if data.draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = data.draw(ODD)
        except (IndexError, KeyError, TypeError):
            continue
    if "turn" not in WRITTEN[which] or "turn" in line:
        kind = kind_of(line)
        if fits(kind, line):
            assert schema_accepts(kind, line), line
