"""Text defects on their own: markup classification, characters, runaway repetition."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.checkers import char_scan
from repro.checkers.free_text import check_free_text
from repro.checkers.markup_scan import Where, scan_markup
from repro.checkers.repetition import (
    MAX_PERIOD_CHARS,
    MIN_REPEATS,
    MIN_RUN_CHARS,
    PROBE_CHARS,
    PROBE_STRIDE_CHARS,
    RepetitionProbe,
)
from repro.checkers.text_watch import TextWatch


def kinds(text: str, where: Where = Where.CONTENT) -> list[tuple[str, int]]:
    return [(str(f.kind), f.start) for f in scan_markup(text, where)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('x <｜DSML｜invoke name="a">', [("markup_in_content", 2)]),
        ("x </｜DSML｜function_calls>", [("markup_in_content", 2)]),
        ("the ｜DSML｜ token", [("markup_in_content", 4)]),
        ("x <｜DSML｜tool_calls>", [("wrong_block_name", 2)]),
        ("x <｜DSML｜toolcalls>", [("unknown_tag", 2)]),
        ("x <｜DSML｜param name=", [("unknown_tag", 2)]),
        ("x <|DSML|invoke", [("ascii_bars", 2)]),
        ("x </|DSML|parameter>", [("ascii_bars", 2)]),
        ("x <｜DSML|invoke", [("ascii_bars", 2)]),
        ("x <｜｜DSML｜｜invoke", [("doubled_bars", 2)]),
        ("x <||DSML||tool_calls>", [("ascii_bars", 2)]),
        ("x < | DSML | tool_use>", [("ascii_bars", 2)]),
        ("x <｜ DSML ｜invoke", [("garbled_marker", 2)]),
        ("x <｜DSMLinvoke", [("garbled_marker", 2)]),
        ("x <DSML｜invoke", [("garbled_marker", 2)]),
        ("x <function_calls>", [("missing_dsml_prefix", 2)]),
        ("x </tool_calls>", [("missing_dsml_prefix", 2)]),
        ('x <invoke name="get">', [("missing_dsml_prefix", 2)]),
        ('x <parameter name="k" string="true">', [("missing_dsml_prefix", 2)]),
        ("x <think>", [("special_token", 2)]),
        ("x </think>", [("special_token", 2)]),
        ("x <｜end▁of▁sentence｜>", [("special_token", 2)]),
        ("x <｜User｜>", [("special_token", 2)]),
        ("a <｜DSML｜｜DSML｜invoke", [("doubled_bars", 2)]),  # one defect for one doubled token
    ],
)
def test_garbled_and_misplaced_markup(text: str, expected: list[tuple[str, int]]) -> None:
    assert kinds(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The DSML format wraps calls in tags.",
        "<parameter>value</parameter> and <invoke/> are plain XML here",
        '<parameter name="timeout">30</parameter>',
        "a | b || c, 名称｜数量｜价格",
        "Some models end text with <|endoftext|> or <|im_end|>.",
        "if a<b and c>d: x = {'think': True}",
        "function_calls are listed; see tool_calls below",
    ],
)
def test_text_that_only_looks_like_markup_is_left_alone(text: str) -> None:
    assert kinds(text) == []


def test_place_decides_the_kind_of_a_well_formed_tag() -> None:
    tag = 'x <｜DSML｜invoke name="a">'
    assert kinds(tag, Where.REASONING) == [("markup_in_reasoning", 2)]
    assert kinds(tag, Where.VALUE) == [("markup_in_value", 2)]
    assert kinds(tag, Where.STRUCTURE) == [("unbalanced_markup", 2)]
    assert kinds(tag, Where.TRAILER) == []  # the trailing text is one defect already
    assert kinds("x <|DSML|invoke", Where.TRAILER) == [("ascii_bars", 2)]


def watch(text: str) -> list[tuple[str, int, str]]:
    w = TextWatch()
    w.advance(text, 0, final=True)
    return [(str(d.kind), d.offset, d.message) for d in w.defects("content")]


@pytest.mark.parametrize(
    ("text", "kind", "offset", "meant"),
    [
        ("café Ã© ok", "mojibake", 5, "é"),
        ("It’s â€™ here", "mojibake", 5, "’"),
        ("Ð´Ð°", "mojibake", 0, "д"),
        ("ï»¿header", "mojibake", 0, "\ufeff"),
        ("emoji ðŸ˜€", "mojibake", 6, "😀"),
        ("degree 20Â°C", "mojibake", 9, "°"),
    ],
)
def test_mojibake_is_found_and_decoded(text: str, kind: str, offset: int, meant: str) -> None:
    [(found, at, message)] = watch(text)
    assert (found, at) == (kind, offset)
    assert f"`{meant}`" in message


def test_replacement_and_invalid_characters_are_counted_once() -> None:
    found = watch("a\ufffdb\ufffd c\x00 d\x85 e\udcff")
    assert found[0][:2] == ("replacement_char", 1) and "(1 more in content)" in found[0][2]
    assert found[1][:2] == ("invalid_char", 6) and "(2 more in content)" in found[1][2]


@pytest.mark.parametrize(
    "text",
    [
        "Voilà — c'est fait ! « Bonjour », 20 °C, © 2024, ½ tasse, naïve façade, São Paulo.",
        "¿Qué tal? Ñandú, pingüino, Ärger, Öl, Übermaß, ß, ø, æ, å, ł.",
        "数据 · 张三 × 李四, 3×4, ±5, µs, ¼",
        "Ã alone, Â alone, â€ alone.",
    ],
)
def test_legitimate_latin1_text_is_not_mojibake(text: str) -> None:
    assert watch(text) == []


def test_runaway_repetition() -> None:
    unit = "I will check the file again. "
    text = "Intro:" + unit * 40
    [(kind, offset, message)] = watch(text)
    assert kind == "runaway_repetition"
    assert offset == len("Intro:")  # where the periodic stretch starts
    assert f"a {len(unit)}-character unit" in message


def test_repetition_thresholds() -> None:
    assert watch("=" * (MIN_RUN_CHARS - 1)) == []
    assert [k for k, _, _ in watch("=" * (MIN_RUN_CHARS + PROBE_STRIDE_CHARS))] == [
        "runaway_repetition"
    ]
    # A 301-character unit needs 8 copies, not 512 characters.
    rng = random.Random(0)
    sentence = "".join(rng.choice("abcdefghij klmnop") for _ in range(300)) + "."
    assert watch(sentence * 4) == []
    assert [k for k, _, _ in watch(sentence * 10)] == ["runaway_repetition"]


def test_repetition_in_pieces_matches_whole() -> None:
    text = "prefix " * 3 + "abcdefghij" * 200 + " suffix"
    whole = RepetitionProbe()
    whole.advance(text, 0, final=True)
    pieces = RepetitionProbe()
    for end in range(50, len(text), 50):
        pieces.advance(text[:end], 0, final=False)
    pieces.advance(text, 0, final=True)
    assert pieces.run == whole.run and whole.run is not None


def test_free_text_check_combines_markup_and_text_defects() -> None:
    defects = check_free_text(
        "Thinking <｜DSML｜invoke here, Ã© and ", "reasoning", Where.REASONING
    )
    assert [(str(d.kind), d.field) for d in defects] == [
        ("markup_in_reasoning", "reasoning"),
        ("mojibake", "reasoning"),
    ]


def test_a_c1_character_inside_mojibake_is_part_of_it() -> None:
    assert [k for k, _, _ in watch("caf\u00c3\u0083 ok")] == ["mojibake"]  # Latin-1 reading
    assert [k for k, _, _ in watch("caf\u00c3\u0083 ok \u0085")] == ["mojibake", "invalid_char"]


@pytest.mark.parametrize("step", [1, 2, 3, 5, 8])
def test_character_scan_in_pieces_matches_whole(step: int) -> None:
    text = "".join(f"ok{i} Ã\u0083 x\u0085y â€™ \ufffd é · " for i in range(30)) + "end Ã"
    whole = watch(text)
    pieces = TextWatch()
    for end in range(step, len(text), step):
        pieces.advance(text[:end], 0, final=False)
    pieces.advance(text, 0, final=True)
    assert [(str(d.kind), d.offset, d.message) for d in pieces.defects("content")] == whole
    assert [k for k, _, _ in whole] == ["mojibake", "invalid_char", "replacement_char"]
    assert "(59 more in content)" in whole[0][2]  # Ã\u0083 and â€™, thirty times each


# Where character defects come from: accents, C1 controls, cp1252's continuation shapes,
# U+FFFD, a surrogate, NUL, and ordinary text around them.
_CHAR_SOUP = st.text(
    st.sampled_from(list("aé ÃÂâðÜ»©€™’\u0083\u0085\u009f\ufffd\ud800\x00中｜\n") + ["x"] * 4),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(_CHAR_SOUP, st.integers(1, 7))
def test_the_close_look_at_accented_text_changes_no_finding(text: str, step: int) -> None:
    """DEFECT_START lets accented text skip the full character scan: with it forced to
    match, as before, the findings are the same, whole and in pieces."""

    def findings(pieces: int) -> list[tuple[str, int, str]]:
        w = TextWatch()
        for end in range(pieces, len(text), pieces) if pieces else ():
            w.advance(text[:end], 0, final=False)
        w.advance(text, 0, final=True)
        return [(str(d.kind), d.offset, d.message) for d in w.defects("content")]

    fast = [findings(0), findings(step)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(char_scan, "DEFECT_START", re.compile(r"[\s\S]"))
        assert [findings(0), findings(step)] == fast


def _reference_run(text: str) -> tuple[int, int] | None:
    """The documented rule, without shortcuts: every PROBE_STRIDE_CHARS, the next
    PROBE_CHARS characters; their first four recurrences within MAX_PERIOD_CHARS each
    tried as the period of max(MIN_RUN_CHARS, MIN_REPEATS * period) characters."""
    for i in range(0, len(text) - PROBE_CHARS + 1, PROBE_STRIDE_CHARS):
        probe, stop = text[i : i + PROBE_CHARS], min(len(text), i + PROBE_CHARS + MAX_PERIOD_CHARS)
        j = text.find(probe, i + 1, stop)
        for _ in range(4):
            if j == -1:
                break
            period = j - i
            span = max(MIN_RUN_CHARS, MIN_REPEATS * period)
            if i + span <= len(text) and text[i : i + span - period] == text[j : i + span]:
                return i, period
            j = text.find(probe, j + 1, stop)
    return None


@settings(max_examples=300, deadline=None)
@given(
    st.text("ab c", max_size=300),
    st.text("ab", min_size=1, max_size=70),
    st.integers(0, 40),
    st.text("xy", max_size=200),
)
def test_the_probes_shortcuts_find_what_the_rule_finds(before, unit, repeats, after) -> None:
    """Probes too close to the end are not taken, recurrences too far for the text are not
    tried: the run found is the one the rule finds (and its period)."""
    text = before + unit * repeats + after
    probe = RepetitionProbe()
    probe.advance(text, 0, final=True)
    expected = _reference_run(text)
    assert (probe.long_run is None) == (expected is None)
    if probe.long_run is not None and expected is not None:
        assert probe.long_run.period_chars == expected[1]
        assert probe.long_run.offset <= expected[0]  # traced back from the probe


@pytest.mark.parametrize("extra", [-1, 0, 1])
@pytest.mark.parametrize("probes", [0, 1, 3])
def test_a_run_that_ends_with_the_text_is_found_by_the_last_probe(probes, extra) -> None:
    rng = random.Random(probes)
    noise = "".join(rng.choice("xyz") for _ in range(probes * PROBE_STRIDE_CHARS))
    text = noise + ("ab" * MIN_RUN_CHARS)[: MIN_RUN_CHARS + extra]
    probe = RepetitionProbe()
    probe.advance(text, 0, final=True)
    assert _reference_run(text) == ((len(noise), 2) if extra >= 0 else None)
    assert (probe.long_run is not None) == (extra >= 0)
