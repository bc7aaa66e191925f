"""Streaming gives the whole-text verdict at every split point and for any chunking."""

from __future__ import annotations

import random

import pytest
from dsml_corruptions import corrupt
from dsml_samples import SEARCH_CALL, TOOLSET, TWO_CALLS
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.checkers.dsml.stream import DsmlStream, parse_dsml
from repro.checkers.repetition import MIN_RUN_CHARS
from repro.dsml.markers import EOS
from tests.dsml_corpus import samples

_rng = random.Random(5)
_CORPUS = samples(40, seed=3)

_FIXED = [
    TWO_CALLS,
    SEARCH_CALL,
    TWO_CALLS.replace("｜DSML｜invoke", "|DSML|invoke", 1),
    TWO_CALLS.replace("\n\n<｜DSML", "<｜DSML"),
    TWO_CALLS.replace('string="true">San', 'string="yes">San'),
    TWO_CALLS.replace("San Francisco", "San Ã© Francisco\ufffd"),
    TWO_CALLS + "trailing",
    TWO_CALLS[:150],
    "Prose that stops at <｜end▁of",
    "Plain prose " * 4 + EOS,
    "loop " * (MIN_RUN_CHARS // 4),
    'Prose.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_date">\n<｜DSML｜parameter'
    + ' name="x" string="true">'
    + "v" * 40,
]
_SHORT = [s.text for s in _CORPUS if len(s.text) < 400][:8]
TEXTS = [*_FIXED, *(corrupt(t, _CORPUS[0].text, _rng).text for t in _SHORT)]


def _streamed(text: str, cuts: list[int], step_chars: int = 1, finish_reason: str | None = None):
    stream = DsmlStream(TOOLSET, step_chars=step_chars)
    last = 0
    for cut in [*cuts, len(text)]:
        stream.feed(text[last:cut])
        last = cut
    return stream.finish(finish_reason)


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_every_split_point_gives_the_whole_text_verdict(text: str) -> None:
    whole = parse_dsml(text, TOOLSET)
    for cut in range(len(text) + 1):
        assert _streamed(text, [cut]) == whole, f"split at {cut}"


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_one_character_at_a_time(text: str) -> None:
    assert _streamed(text, list(range(1, len(text)))) == parse_dsml(text, TOOLSET)
    assert _streamed(text, list(range(1, len(text))), finish_reason="length") == parse_dsml(
        text, TOOLSET, "length"
    )


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    index=st.integers(0, len(_CORPUS) - 1),
    seed=st.integers(0, 2**32),
    step=st.sampled_from([1, 7, 512]),
)
def test_random_chunkings_of_corpus_and_corrupted_texts(
    data, index: int, seed: int, step: int
) -> None:
    sample = _CORPUS[index]
    corrupted = corrupt(sample.text, TWO_CALLS, random.Random(seed)).text
    text = data.draw(st.sampled_from([sample.text, corrupted]))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=30)))
    assert _streamed(text, cuts, step) == parse_dsml(text, TOOLSET)


def test_long_streams_are_trimmed_and_still_agree() -> None:
    """Past the trim threshold the buffer drops consumed text; the verdict must not change."""
    body = "".join(s.text.removesuffix(EOS).replace("｜DSML｜", "") for s in _CORPUS) * 4
    text = body + "\n\n" + TWO_CALLS.split("\n\n", 1)[1]
    chunks = list(range(0, len(text), 5))[1:]
    assert _streamed(text, chunks, step_chars=64) == parse_dsml(text, TOOLSET)


def test_feed_after_finish_is_an_error() -> None:
    stream = DsmlStream(TOOLSET)
    stream.feed("hello")
    first = stream.finish()
    assert stream.finish() is first
    with pytest.raises(RuntimeError):
        stream.feed("more")
