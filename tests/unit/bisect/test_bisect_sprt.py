"""The SPRT against the worked numbers in shared/research/bisect.md §3.2 (defaults)."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from repro.bisect.sprt import Decision, SprtSettings, expected_sessions, run_sprt

DEFAULTS = SprtSettings()


def outcomes(corrupted_at: set[int], sessions: int) -> list[bool]:
    return [i in corrupted_at for i in range(sessions)]


def test_defaults_are_the_issue_s():
    assert (DEFAULTS.p0, DEFAULTS.p1, DEFAULTS.alpha, DEFAULTS.beta) == (0.005, 0.05, 0.05, 0.05)


def test_steps_and_bounds():
    assert DEFAULTS.corrupted_step == pytest.approx(2.3026, abs=1e-4)
    assert DEFAULTS.clean_step == pytest.approx(-0.04628, abs=1e-5)
    assert DEFAULTS.upper_bound == pytest.approx(2.944, abs=1e-3)
    assert DEFAULTS.lower_bound == pytest.approx(-2.944, abs=1e-3)
    # The slope of the decision lines in the (n, k) plane is the indifference rate.
    assert DEFAULTS.indifference_rate == pytest.approx(0.0197, abs=1e-4)


def test_clean_after_64_clean_sessions_not_63():
    assert run_sprt(outcomes(set(), 63), DEFAULTS).decision is Decision.UNKNOWN
    result = run_sprt(outcomes(set(), 200), DEFAULTS)
    assert (result.decision, result.sessions, result.corrupted) == (Decision.CLEAN, 64, 0)
    assert result.llr <= DEFAULTS.lower_bound


# Corruptions (0-based session indexes) spread out so that no bound is crossed before.
@pytest.mark.parametrize(
    ("corrupted_at", "clean_after"), [({0}, 115), ({50}, 115), ({29, 79}, 166)]
)
def test_clean_after_115_with_one_corruption_and_166_with_two(corrupted_at, clean_after):
    before = run_sprt(outcomes(corrupted_at, clean_after - 1), DEFAULTS)
    assert before.decision is Decision.UNKNOWN
    result = run_sprt(outcomes(corrupted_at, 400), DEFAULTS)
    assert (result.decision, result.sessions) == (Decision.CLEAN, clean_after)
    assert result.corrupted == len(corrupted_at)


@pytest.mark.parametrize(("earlier", "within"), [({19}, 37), ({29, 59}, 88), ({34, 69, 104}, 139)])
def test_corrupting_at_k_within_n_but_not_one_session_later(earlier, within):
    # The last corruption lands on session number `within`: just in time.
    result = run_sprt(outcomes(earlier | {within - 1}, within), DEFAULTS)
    assert (result.decision, result.sessions) == (Decision.CORRUPTING, within)
    assert result.corrupted == len(earlier) + 1
    # One session later is too late: one more clean session pulled the LLR down.
    late = run_sprt(outcomes(earlier | {within}, within + 1), DEFAULTS)
    assert late.decision is Decision.UNKNOWN


def test_stops_at_the_first_crossing_and_ignores_the_rest():
    result = run_sprt([True, True] + [False] * 300, DEFAULTS)
    assert (result.decision, result.sessions, result.corrupted) == (Decision.CORRUPTING, 2, 2)
    assert result.llr == pytest.approx(2 * math.log(10))


def test_truncated_at_the_cap_is_unknown():
    capped = DEFAULTS.model_copy(update={"max_sessions": 100})
    # 2% exactly: one corruption every 50 sessions keeps the LLR between the bounds.
    result = run_sprt(outcomes({10, 60, 110}, 300), capped)
    assert (result.decision, result.sessions, result.corrupted) == (Decision.UNKNOWN, 100, 2)


@pytest.mark.parametrize(
    ("rate", "wald"), [(0.0, 63.6), (0.005, 76.7), (0.02, 81.0), (0.05, 37.2), (0.17, 8.3)]
)
def test_expected_sessions_match_wald_column(rate, wald):
    assert expected_sessions(rate, DEFAULTS) == pytest.approx(wald, abs=0.1)


def test_settings_reject_p0_not_below_p1():
    with pytest.raises(ValidationError, match="p0 must be below p1"):
        SprtSettings(p0=0.05, p1=0.05)
