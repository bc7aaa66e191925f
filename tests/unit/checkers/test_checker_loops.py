"""Short-period loops (a word repeated 100 times in under 512 characters) are runaway
repetition; legitimate repetition (tables, rulers, indentation, base64, hex, CSV) is not."""

from __future__ import annotations

import string
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from legit_repetition import legit_texts, real_documents

from repro.checkers.dsml.stream import DsmlStream, parse_dsml
from repro.checkers.repetition import (
    LOOP_MAX_PERIOD_CHARS,
    LOOP_MIN_CHARS,
    LOOP_MIN_REPEATS,
    MIN_RUN_CHARS,
    RepetitionProbe,
)
from repro.checkers.text_watch import TextWatch
from repro.checkers.toolset import ToolSet
from repro.dsml.encode import encode_completion
from tests.dsml_corpus import TOOLS, samples

TOOLSET = ToolSet.from_openai(TOOLS)


def repetition(text: str) -> list[str]:
    watch = TextWatch()
    watch.advance(text, 0, final=True)
    return [d.message for d in watch.defects("content") if d.kind == "runaway_repetition"]


@pytest.mark.parametrize(
    ("loop", "unit"),
    [
        (" ".join(["the"] * 100), " the"),  # 399 characters: the last word has no space
        ("no, " * 100, " no,"),
        ("yes. " * 100, " yes."),
        ("哈" * 160, "哈"),  # a caseless letter needs no separator; one alone, 160 copies
        ("是的，" * 100, "是的，"),
        ("Ok " * 100, " Ok"),
    ],
)
def test_a_word_repeated_100_times_is_flagged(loop: str, unit: str) -> None:
    assert len(loop) < MIN_RUN_CHARS
    [message] = repetition("The answer is: " + loop + " Done.")
    copies = max(100, 160 // len(unit))
    assert f"unit ({unit!r}) repeats {copies} times" in message
    # One copy fewer is not a loop yet.
    shorter = loop[: len(loop) - len(unit)]
    assert repetition("The answer is: " + shorter + " Done.") == []


def test_a_loop_inside_a_tool_call_is_flagged_at_its_offset() -> None:
    loop = " ".join(["again"] * 100)
    call = ("write_file", {"path": "notes.txt", "content": "Note:" + loop + "\nend"})
    text = encode_completion([call], content="Writing the notes.")
    verdict = parse_dsml(text, TOOLSET)
    [defect] = [d for d in verdict.defects if d.kind == "runaway_repetition"]
    assert text[defect.offset :].startswith("again again")
    assert text[: defect.offset].endswith('string="true">Note:')
    assert [c.name for c in verdict.calls] == ["write_file"]  # the call itself still parses


@pytest.mark.parametrize("name", sorted(legit_texts()))
def test_legitimate_repetition_is_not_flagged(name: str) -> None:
    text = legit_texts()[name]
    assert repetition(text) == [], name
    assert [d for d in parse_dsml(text, TOOLSET).defects if d.kind == "runaway_repetition"] == []


def test_real_documents_are_not_flagged() -> None:
    documents = real_documents()
    assert len(documents) > 100 and sum(map(len, documents.values())) > 3_000_000
    flagged = {name: found for name, text in documents.items() if (found := repetition(text))}
    assert flagged == {}


def test_the_corpus_has_no_loop() -> None:
    for sample in samples(2500, seed=2026):
        assert repetition(sample.text) == [], sample.text


@pytest.mark.parametrize("step", [1, 7, 64, 300])
def test_a_loop_found_in_pieces_is_the_one_found_whole(step: int) -> None:
    text = "Prose first. " * 30 + "sure " * 130 + "and then the rest. " * 40
    whole = RepetitionProbe()
    whole.advance(text, 0, final=True)
    stream = DsmlStream(TOOLSET, step_chars=step)
    for at in range(0, len(text), step):
        stream.feed(text[at : at + step])
    [defect] = [d for d in stream.finish().defects if d.kind == "runaway_repetition"]
    assert whole.loop is not None and defect.offset == whole.loop.offset
    assert text[defect.offset :].startswith(whole.loop.unit)


def _reference_loop(text: str) -> tuple[int, int] | None:
    """The documented rule without probes: the earliest maximal stretch whose smallest period
    p <= 5 has a word's unit, round(length / p) >= 100 copies and 160 characters."""
    found = []
    for p in range(1, LOOP_MAX_PERIOD_CHARS + 1):
        i = 0
        while i + p < len(text):
            if text[i] != text[i + p]:
                i += 1
                continue
            j = i
            while j + p < len(text) and text[j] == text[j + p]:
                j += 1
            length = j + p - i
            unit = text[i : i + p]
            smallest = next(
                q for q in range(1, p + 1) if text[i + q : i + length] == text[i : i + length - q]
            )
            enough = (length + p // 2) // p >= LOOP_MIN_REPEATS and length >= LOOP_MIN_CHARS
            if smallest == p and enough and is_word(unit):
                found.append((i, p))
            i = j + 1
    return min(found) if found else None


def is_word(unit: str) -> bool:
    """A lowercase or caseless letter, and a character neither base64 nor a field separator."""
    data = string.ascii_letters + string.digits + "+/=,;|\t\n"
    letter = any(unicodedata.category(ch) in ("Ll", "Lt", "Lo") for ch in unit)
    return letter and any(ch not in data for ch in unit)


@settings(max_examples=200, deadline=None)
@given(
    st.text("ab .\n", max_size=200),
    st.text("ab .哈,", min_size=1, max_size=LOOP_MAX_PERIOD_CHARS),
    st.integers(90, 170),
    st.text("xy ", max_size=200),
)
def test_the_probes_find_what_the_rule_finds(before, unit, repeats, after) -> None:
    text = before + unit * repeats + after
    probe = RepetitionProbe()
    probe.advance(text, 0, final=True)
    expected = _reference_loop(text)
    assert (probe.loop is None) == (expected is None), (text, probe.loop, expected)
    if probe.loop is not None and expected is not None:
        assert (probe.loop.offset, probe.loop.period_chars) == expected
