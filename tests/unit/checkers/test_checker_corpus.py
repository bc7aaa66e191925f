"""Zero false positives on a generated corpus of valid turns, raw and server-parsed."""

from __future__ import annotations

import json

from repro.checkers import AssistantOutput, ToolCall, check_turn
from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.toolset import toolset_for
from tests.dsml_corpus import TOOLS, samples

CORPUS = samples(2500, seed=2026)
TOOLSET = toolset_for(TOOLS)


def test_the_corpus_covers_what_it_claims() -> None:
    """The shapes the zero-false-positive claim is about are really in it."""
    texts = [s.text for s in CORPUS]
    calls = [c for s in CORPUS for c in s.calls]
    assert sum(not s.calls for s in CORPUS) > 300  # prose-only turns
    assert sum(len(s.calls) >= 3 for s in CORPUS) > 300  # several calls per block
    assert sum(bool(s.calls) and s.content != "" for s in CORPUS) > 300  # prose before a block
    assert sum(bool(s.calls) and s.content == "" for s in CORPUS) > 300
    assert sum(s.eos for s in CORPUS) > 1000 and sum(not s.eos for s in CORPUS) > 1000
    assert sum(not args for _, args in calls) > 300  # zero-argument calls
    assert sum(s.padded for s in CORPUS) > 200
    assert any(
        "\n" in v and "<" in v and '"' in v
        for _, a in calls
        for v in a.values()
        if isinstance(v, str)
    )
    assert any(
        isinstance(v, dict) and any(isinstance(x, dict) for x in v.values())
        for _, a in calls
        for v in a.values()
    )
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts)
    assert any(len(t) > 4000 for t in texts)


def test_no_defect_on_any_valid_raw_turn() -> None:
    for sample in CORPUS:
        verdict = parse_dsml(sample.text, TOOLSET)
        assert verdict.defects == (), sample.text
        assert [(c.name, json.loads(c.arguments)) for c in verdict.calls] == list(sample.calls)


def test_no_defect_on_any_valid_server_parsed_turn() -> None:
    for sample in CORPUS:
        calls = tuple(ToolCall(n, json.dumps(a, ensure_ascii=False)) for n, a in sample.calls)
        content = sample.content or ("" if calls else "ok")
        output = AssistantOutput(content=content, reasoning=sample.content, tool_calls=calls)
        assert check_turn(output, TOOLS).defects == (), sample
