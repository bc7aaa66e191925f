"""Compiling the request's tools: clear errors for bad tools, one compile per tools list."""

from __future__ import annotations

import pytest
from dsml_samples import TOOLS

from repro.checkers.toolset import ToolSet, toolset_for


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"type": "function"}, "must be a JSON list"),
        ([{"type": "function", "function": {"description": "x"}}], "tool #0 has no function name"),
        ([{"function": {"name": "a"}}, {"function": {"name": "a"}}], "'a' is declared twice"),
        ([{"function": {"name": "a", "parameters": "object"}}], "must be a JSON Schema object"),
        (
            [{"function": {"name": "a", "parameters": {"type": "objekt"}}}],
            "'a': parameters is not a valid JSON Schema",
        ),
    ],
)
def test_invalid_tools_are_refused_in_one_sentence(tools, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolSet.from_openai(tools)


def test_bare_function_objects_and_missing_parameters_are_accepted() -> None:
    tools = ToolSet.from_openai([{"name": "ping"}, {"type": "function", "function": {"name": "x"}}])
    assert "ping" in tools and "x" in tools and "y" not in tools
    assert tools.violations("ping", {"anything": 1}) == ()


def test_violations_name_the_path() -> None:
    tools = ToolSet.from_openai(TOOLS)
    found = tools.violations("search", {"query": 1, "topn": 0, "filters": {"lang": 2}, "x": 1})
    assert sorted(v.path for v in found) == [(), ("filters", "lang"), ("query",), ("topn",)]
    assert tools.violations("search", {"query": "ok", "source": "web"}) == ()
    assert tools.violations("unknown", {}) == ()


def test_compiled_sets_are_cached_by_content() -> None:
    first = toolset_for(TOOLS)
    assert toolset_for([dict(t) for t in TOOLS]) is first  # equal JSON, same compiled set
    other = toolset_for(TOOLS[:1])
    assert other is not first and "search" not in other


def test_the_same_list_asked_again_is_never_serialised_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from repro.checkers import toolset as module

    tools = [dict(t) for t in TOOLS]
    first = toolset_for(tools)
    dumps = []
    monkeypatch.setattr(module.orjson, "dumps", lambda *a, **k: dumps.append(a) or b"[]")
    assert all(toolset_for(tools) is first for _ in range(3)) and dumps == []
    toolset_for([dict(t) for t in TOOLS])  # another list: keyed by its JSON again
    assert len(dumps) == 1


def test_an_identical_call_reuses_its_verdict() -> None:
    tools = ToolSet.from_openai(TOOLS)
    calls = 0
    validator = tools.validators["search"]

    class Counting:
        def iter_errors(self, instance):
            nonlocal calls
            calls += 1
            return validator.iter_errors(instance)

    counted = ToolSet({"search": Counting()})
    text = '{"query": 1}'
    first = counted.violations("search", {"query": 1}, text)
    assert counted.violations("search", {"query": 1}, text) == first and calls == 1
    assert counted.violations("search", {"query": 1}) == first and calls == 2  # no text, no reuse
    assert [v.path for v in first] == [("query",)]


def test_a_schema_reference_that_cannot_be_resolved_is_the_tools_fault() -> None:
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}}
    tools = ToolSet.from_openai([{"name": "x", "parameters": remote}])
    with pytest.raises(ValueError, match="'x': its schema has a \\$ref that cannot be resolved"):
        tools.violations("x", {"a": 1})
    local = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"type": "string"}},
    }
    assert [
        v.path
        for v in ToolSet.from_openai([{"name": "y", "parameters": local}]).violations("y", {"a": 1})
    ] == [("a",)]
