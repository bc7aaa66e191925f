"""Knob classes and "reproduces" from evidence: cured vs lowered vs the same failure."""

from __future__ import annotations

import pytest

from repro.bisect.classify import KnobClass, cure_sessions, knockout_class, reproduces
from repro.bisect.evidence import CLEAN, CORRUPTED, ERRORED, Evidence, Wave
from repro.bisect.sprt import SprtSettings

SETTINGS = SprtSettings()
ALPHA_EACH = 0.05 / 6


def evidence(*waves: str) -> Evidence:
    built, first = [], 0
    for outcomes in waves:
        built.append(Wave(first, outcomes, 1.0, "x"))
        first += len(outcomes)
    return Evidence({"k": "v"}, tuple(built))


def spread(corrupted: int, sessions: int) -> str:
    """`corrupted` corruptions spaced evenly through `sessions`."""
    at = {round(i * sessions / corrupted) for i in range(corrupted)} if corrupted else set()
    return "".join(CORRUPTED if i in at else CLEAN for i in range(sessions))


BAD = evidence(spread(14, 80))  # 17.5%


def test_cure_needs_151_clean_sessions_at_defaults():
    # 0 of 151 bounds the rate below the SPRT's indifference rate (1.97%) at 95%.
    assert cure_sessions(SETTINGS) == 151
    assert cure_sessions(SETTINGS.model_copy(update={"max_sessions": 100})) == 100


def test_needed_only_after_enough_clean_sessions():
    one_wave = evidence(CLEAN * 80)
    assert one_wave.sprt(SETTINGS).decided  # CLEAN after 64...
    assert knockout_class(one_wave, BAD, SETTINGS, alpha=ALPHA_EACH) is None  # ...not cured yet
    two_waves = evidence(CLEAN * 80, CLEAN * 80)
    assert knockout_class(two_waves, BAD, SETTINGS, alpha=ALPHA_EACH) is KnobClass.NEEDED


def test_any_corruption_rules_out_needed_even_if_the_sprt_says_clean():
    # 1 in 160 (0.6%): the SPRT decides CLEAN, but the revert did not cure.
    lowered = evidence(CLEAN * 40 + CORRUPTED + CLEAN * 39, CLEAN * 80)
    assert lowered.sprt(SETTINGS).decision.value == "CLEAN"
    assert knockout_class(lowered, BAD, SETTINGS, alpha=ALPHA_EACH) is KnobClass.AMPLIFIER


def test_unknown_sprt_with_a_significant_drop_is_an_amplifier_without_more_sessions():
    two_percent = evidence(spread(2, 80))
    assert two_percent.sprt(SETTINGS).decision.value == "UNKNOWN"
    assert knockout_class(two_percent, BAD, SETTINGS, alpha=ALPHA_EACH) is KnobClass.AMPLIFIER


def test_irrelevant_when_corrupting_at_the_same_rate():
    same = evidence(spread(13, 80))
    assert knockout_class(same, BAD, SETTINGS, alpha=ALPHA_EACH) is KnobClass.IRRELEVANT


def test_a_drop_neither_significant_nor_excluded_is_unsettled():
    # 6/80 vs 14/80: Fisher p ~ 0.05 (not below 0.05/6), and 7.5% is not shown >= half of 17.5%.
    gray = evidence(spread(6, 80))
    assert knockout_class(gray, BAD, SETTINGS, alpha=ALPHA_EACH) is None


def test_errored_sessions_are_not_counted():
    ev = evidence(ERRORED * 10 + CLEAN * 70)
    assert (ev.sessions_run, ev.sessions, ev.errored) == (80, 70, 10)


@pytest.mark.parametrize(
    ("outcomes", "strict", "expected"),
    [
        (spread(13, 80), False, True),  # same failure
        (spread(13, 80), True, True),  # and shown to be high
        (spread(1, 80), False, False),  # significantly lower
        (CLEAN * 80, False, False),  # CLEAN
        (spread(8, 80), False, True),  # not significantly lower (p = 0.13) is enough...
        (spread(8, 80), True, None),  # ...unless it must be shown
    ],
)
def test_reproduces(outcomes, strict, expected):
    assert reproduces(evidence(outcomes), BAD, SETTINGS, alpha=0.05, strict=strict) is expected
