"""The canonical-turn shortcut (repro/checkers/families/canonical.py) gives the verdict the
marker-by-marker reader gives, on every turn of the corpus, clean or corrupted."""

from __future__ import annotations

import pytest

from repro.checkers.families import FAMILIES
from repro.checkers.families.findings import Findings
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from tests.formats_corpus import TOOLS, cases, clean_cases

TOOLSET = ToolSet.from_openai(TOOLS)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_shortcut_and_the_reader_agree_on_the_corpus(family: str) -> None:
    f = FAMILIES[family]
    for case in cases(family):
        output = AssistantOutput(
            content=case.text, reasoning=case.reasoning, finish_reason=case.finish_reason
        )
        assert f.check(output, TOOLSET) == f.check_marker_by_marker(output, TOOLSET), case.id


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_shortcut_takes_the_usual_turn_and_leaves_a_corrupted_one(family: str) -> None:
    f = FAMILIES[family]
    assert f.shortcut is not None
    healthy = clean_cases(family, 100)
    taken = sum(f.shortcut(c.text, Findings(TOOLSET, f.leaks, None), False) for c in healthy)
    assert taken >= 95  # what it exists for: most turns are what the template writes
    bad = [c for c in cases(family) if c.bug == "engine_recovery"]
    assert not any(f.shortcut(c.text, Findings(TOOLSET, f.leaks, None), False) for c in bad)
