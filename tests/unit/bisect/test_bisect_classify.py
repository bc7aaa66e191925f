"""Knob classes and "reproduces" from evidence: cured vs lowered vs the same failure."""

from __future__ import annotations

import pytest

from repro.bisect.classify import (
    KnobClass,
    classify_knockouts,
    cure_sessions,
    ratio_llr,
    reproduces,
)
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


def judge(trial: Evidence, *others: Evidence, reference: Evidence = BAD) -> KnobClass | None:
    """The class of knob "x" whose knock-out is `trial`, next to red herrings `others`."""
    knockouts = {"x": trial} | {f"other{i}": o for i, o in enumerate(others)}
    classes, _ = classify_knockouts(reference, knockouts, SETTINGS, alpha=ALPHA_EACH)
    return classes["x"]


def test_needed_only_after_enough_clean_sessions():
    one_wave = evidence(CLEAN * 80)
    assert one_wave.sprt(SETTINGS).decided  # CLEAN after 64...
    assert judge(one_wave) is None  # ...but 0/80 does not rule out a 2% residual rate
    assert judge(evidence(CLEAN * 80, CLEAN * 80)) is KnobClass.NEEDED


def test_any_corruption_rules_out_needed_even_if_the_sprt_says_clean():
    # 1 in 240 (0.4%): the SPRT decides CLEAN, but the revert did not cure.
    lowered = evidence(CLEAN * 40 + CORRUPTED + CLEAN * 39, CLEAN * 80, CLEAN * 80)
    assert lowered.sprt(SETTINGS).decision.value == "CLEAN"
    assert judge(lowered) is KnobClass.AMPLIFIER


def test_unknown_sprt_with_a_significant_drop_is_an_amplifier_not_needed():
    two_percent = evidence(spread(1, 80), spread(2, 80), spread(2, 80))
    assert two_percent.sprt(SETTINGS).decision.value == "UNKNOWN"
    assert judge(two_percent) is KnobClass.AMPLIFIER


def test_irrelevant_when_corrupting_and_shown_to_keep_the_rate():
    assert judge(evidence(spread(13, 80))) is KnobClass.IRRELEVANT


def test_a_drop_neither_shown_below_half_nor_above_is_unsettled():
    # 5/80 vs 14/80: one wave is never an amplifier, and 6% is not shown >= half of 17.5%.
    assert judge(evidence(spread(5, 80))) is None


def test_one_wave_is_never_an_amplifier_however_low():
    # 1/80 against 14/80: a likelihood ratio of e^4.9, but a wave that came out low is the
    # likeliest false alarm where waves spread; three waves decide.
    one = evidence(spread(1, 80))
    assert ratio_llr(one, BAD) > 4.78 and judge(one) is None
    assert judge(evidence(spread(1, 80), spread(2, 80))) is None
    assert judge(evidence(spread(1, 80), spread(2, 80), spread(2, 80))) is KnobClass.AMPLIFIER


def test_red_herrings_pool_into_the_reference_and_expose_the_amplifier():
    # Against bad's single wave, 15/240 (6.25%) falls short of the bound ln(0.9917/0.0083) =
    # 4.78 (its log likelihood ratio for x0.4 of bad's rate against x1.0 is 4.0)...
    amplifier = evidence(spread(5, 80), spread(5, 80), spread(5, 80))
    assert judge(amplifier) is None
    # ...but two red herrings at bad's rate make the reference three waves strong (7.9).
    herrings = (evidence(spread(14, 80)), evidence(spread(15, 80)))
    assert judge(amplifier, *herrings) is KnobClass.AMPLIFIER
    classes, pooled = classify_knockouts(
        BAD, {"x": amplifier, "a": herrings[0], "b": herrings[1]}, SETTINGS, alpha=ALPHA_EACH
    )
    assert classes == {"x": "amplifier", "a": "irrelevant", "b": "irrelevant"}
    assert (pooled.corrupted, pooled.sessions) == (43, 240)  # bad + the two red herrings


def test_a_weak_amplifier_is_decided_where_the_half_line_left_it_unknown():
    # 2.5x (5% against 12.5%), the 16k engine's topology: its ratio, 0.4, sat on the old
    # "shown below half" line for good. Against a reference of five waves (bad and its red
    # herrings) it is an amplifier after three waves of its own (240 sessions, under the cap);
    # a red herring at its rate is irrelevant at once.
    reference = evidence(*[spread(10, 80)] * 5)
    assert judge(evidence(*[spread(4, 80)] * 3), reference=reference) is KnobClass.AMPLIFIER
    assert judge(evidence(*[spread(4, 80)] * 2), reference=reference) is None
    assert judge(evidence(spread(10, 80)), reference=reference) is KnobClass.IRRELEVANT


def test_spread_between_waves_counts_the_evidence_for_less():
    amplifier = evidence(spread(3, 80), spread(2, 80), spread(3, 80))
    assert ratio_llr(amplifier, BAD) > 6 > ratio_llr(amplifier, BAD, phi=3.0) * 2.5
    knockouts = {"x": amplifier}
    plain, _ = classify_knockouts(BAD, knockouts, SETTINGS, alpha=ALPHA_EACH)
    spread_out, _ = classify_knockouts(BAD, knockouts, SETTINGS, alpha=ALPHA_EACH, phi=3.0)
    assert plain["x"] is KnobClass.AMPLIFIER and spread_out["x"] is None


def test_the_80k_campaigns_false_amplifier_is_not_one():
    # The 80k campaign's false amplifier (docs/bisect.md, seed 0): custom_kernels reverted gave
    # 18/160 against the pooled 51/240. Fisher's "lower" said p = 0.006, under 0.05/6; here
    # its likelihood ratio for x0.4 against x1.0 is e^2.9, short of the bound: more sessions.
    bad, herrings = evidence(spread(13, 80)), (evidence(spread(20, 80)), evidence(spread(18, 80)))
    knockout = evidence(spread(9, 80), spread(9, 80))
    assert judge(knockout, *herrings, reference=bad) is None
    # Three waves at 11% do not show half the reference kept (27/240: Wilson low 7.8% < 10.6%);
    # two at 11% and three at 16% do (57/400: 11.2%): a red herring.
    more = evidence(spread(9, 80), spread(9, 80), spread(9, 80))
    assert judge(more, *herrings, reference=bad) is None
    settled = evidence(*[spread(9, 80)] * 2, *[spread(13, 80)] * 3)
    assert judge(settled, *herrings, reference=bad) is KnobClass.IRRELEVANT


def test_errored_sessions_are_not_counted():
    ev = evidence(ERRORED * 10 + CLEAN * 70)
    assert (ev.sessions_run, ev.sessions, ev.errored) == (80, 70, 10)


@pytest.mark.parametrize(
    ("outcomes", "strict", "expected"),
    [
        (spread(13, 80), False, True),  # same failure
        (spread(14, 80) * 3, True, True),  # and shown to be high (99% bound, 240 sessions)
        (spread(13, 80), True, None),  # one wave cannot show it at 99%
        (spread(1, 80), False, False),  # shown below half (p = 0.012)
        (CLEAN * 80, False, False),  # CLEAN
        (spread(8, 80), False, True),  # not shown below half is enough...
        (spread(8, 80), True, None),  # ...unless it must be shown
    ],
)
def test_reproduces(outcomes, strict, expected):
    assert reproduces(evidence(outcomes), BAD, SETTINGS, alpha=0.05, strict=strict) is expected
