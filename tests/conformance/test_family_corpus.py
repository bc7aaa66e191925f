"""repro's validators on the format corpus (tests/formats_corpus.py): every healthy turn
passes with the calls the model meant, at least 98% of corrupted turns are caught, every bug
class is in the corpus, and each miss is one docs/checkers.md names."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from repro.checkers.families import FAMILIES
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from tests.formats_corpus import BUGS, TOOLS, cases

TOOLSET = ToolSet.from_openai(TOOLS)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "checkers.md"
# Corrupted turns no grammar can tell from a healthy one: a value swallows a broken closer
# and stays a valid string (docs/checkers.md, "Misses").
MISSES = {
    "qwen3_coder": {"qwen3_coder/drop_bytes/29", "qwen3_coder/splice/16"},
    "glm45": {"glm45/dup_bytes/2"},
    "glm47": {"glm47/dup_bytes/24", "glm47/dup_bytes/27"},
    "minimax_m2": {
        "minimax_m2/drop_bytes/15",
        "minimax_m2/splice/7",
        "minimax_m2/splice/14",
        "minimax_m2/splice/27",
    },
    "mistral": {"mistral/splice/8"},
}


def verdict(case):
    output = AssistantOutput(
        content=case.text, reasoning=case.reasoning, finish_reason=case.finish_reason
    )
    return FAMILIES[case.family].check(output, TOOLSET)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_corpus_scores(family: str) -> None:
    corpus = cases(family)
    clean = [c for c in corpus if c.clean]
    corrupted = [c for c in corpus if not c.clean]
    assert len(clean) >= 100 and len(corrupted) >= 100
    for case in clean:
        v = verdict(case)
        assert v.clean, (case.id, v.defects)
        assert [(c.name, json.loads(c.arguments)) for c in v.calls] == list(case.calls), case.id
    missed = {c.id for c in corrupted if verdict(c).clean}
    assert missed == MISSES.get(family, set())
    assert 1 - len(missed) / len(corrupted) >= 0.98


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_bug_class_is_in_the_corpus(family: str) -> None:
    found = Counter(c.bug for c in cases(family) if not c.clean)
    assert {bug: found[bug] for bug in BUGS if found[bug] < 20} == {}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_hand_written_defects_are_reported_as_their_kind(family: str) -> None:
    hand = [c for c in cases(family) if "/bad-hand/" in c.id]
    assert len(hand) >= 2
    for case in hand:
        assert case.note in {d.kind for d in verdict(case).defects}, case.id


def test_the_docs_name_each_miss() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    assert [m for ms in MISSES.values() for m in sorted(ms) if f"`{m}`" not in docs] == []
