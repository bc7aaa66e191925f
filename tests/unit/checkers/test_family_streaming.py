"""Any split of a completion into chunks gets the verdict of the whole text: multi-token
deltas are a bug class of the engines (research/toolformats.md §4.1), never of the checker."""

from __future__ import annotations

import random

import pytest

from repro.checkers.families import FAMILIES
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from tests.formats_corpus import TOOLS, cases

TOOLSET = ToolSet.from_openai(TOOLS)


def streamed(family: str, chunks: list[str], finish_reason: str | None = None):
    stream = FAMILIES[family].stream(TOOLSET)
    for chunk in chunks:
        stream.feed(chunk)
    return stream.finish(finish_reason)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_random_chunkings_of_the_whole_corpus(family: str) -> None:
    rng = random.Random(family)
    corpus = [c for c in cases(family) if not c.reasoning]
    assert len(corpus) > 600
    for case in corpus:
        whole = FAMILIES[family].check(AssistantOutput(content=case.text), TOOLSET)
        chunks, at = [], 0
        while at < len(case.text):
            size = rng.choice((1, 2, 3, 5, 8, 13, 40))
            chunks.append(case.text[at : at + size])
            at += size
        assert streamed(family, chunks) == whole, case.id


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_split_point_of_a_corrupted_turn(family: str) -> None:
    case = next(c for c in cases(family) if c.bug == "engine_recovery" and len(c.text) < 400)
    whole = FAMILIES[family].check(AssistantOutput(content=case.text), TOOLSET)
    assert not whole.clean
    for cut in range(len(case.text) + 1):
        assert streamed(family, [case.text[:cut], case.text[cut:]]) == whole, cut


def test_one_character_at_a_time_with_the_length_limit() -> None:
    text = FAMILIES["kimi_k2"]  # a turn cut inside its arguments
    cut = '<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{"query": "x'
    whole = text.check(AssistantOutput(content=cut, finish_reason="length"), TOOLSET)
    assert [d.kind for d in whole.defects] == ["truncated_call"]
    assert streamed("kimi_k2", list(cut), "length") == whole


def test_feeding_after_finish_is_refused() -> None:
    stream = FAMILIES["hermes"].stream(TOOLSET)
    stream.finish()
    with pytest.raises(RuntimeError, match="after finish"):
        stream.feed("x")
