"""Run-to-run dispersion of waves, and the ratio test the classes rest on."""

from __future__ import annotations

import random

import pytest

from repro.bisect.dispersion import dispersion
from repro.bisect.evidence import CLEAN, CORRUPTED, ERRORED, Evidence, Wave
from repro.results import ratio_below_p


def trial(*corrupted: int, sessions: int = 80) -> Evidence:
    waves = tuple(
        Wave(i * sessions, CORRUPTED * k + CLEAN * (sessions - k), 1.0, "x")
        for i, k in enumerate(corrupted)
    )
    return Evidence({}, waves)


def test_waves_that_agree_show_no_dispersion():
    assert dispersion([trial(14, 14, 14)]) == 1.0
    assert dispersion([trial(14)]) == 1.0  # one wave: nothing to compare
    assert dispersion([trial(0, 0, 0)]) == 1.0  # a cured trial says nothing about spread


def test_the_load_induced_engines_four_runs_spread_about_three_times_the_binomial():
    # docs/sim.md "Run to run": 13, 24, 14 and 10 of 80 sessions of one configuration.
    phi = dispersion([trial(13, 24, 14, 10)])
    assert phi == pytest.approx(3.0, abs=0.1)


def test_only_the_spread_within_a_trial_counts():
    # Two trials at very different rates (an amplifier and its reference), each steady.
    assert dispersion([trial(2, 2), trial(20, 20)]) == 1.0
    # Degrees of freedom add up across trials: 1 + 2.
    assert dispersion([trial(10, 20), trial(15, 15, 15)]) == pytest.approx(
        dispersion([trial(10, 20)]) / 3
    )


def test_errored_sessions_are_left_out_of_a_waves_count():
    errored = Evidence({}, (Wave(0, ERRORED * 40 + CORRUPTED * 7 + CLEAN * 33, 1.0, "x"),
                            Wave(80, CORRUPTED * 7 + CLEAN * 33, 1.0, "x")))  # fmt: skip
    assert dispersion([errored]) == 1.0  # 7/40 and 7/40


def test_binomial_waves_average_a_dispersion_near_one():
    rng = random.Random(7)
    trials = [trial(*(sum(rng.random() < 0.18 for _ in range(80)) for _ in range(5))) for _ in range(200)]  # fmt: skip
    assert dispersion(trials) == pytest.approx(1.0, abs=0.12)


def test_the_ratio_test_has_the_margin_as_its_null():
    # 11.2% against 21.2% is lower (Fisher p = 0.006) but nowhere near below half of it.
    assert ratio_below_p(18, 160, 51, 240, 0.5) > 0.5
    assert ratio_below_p(18, 160, 51, 240, 1.0) < 0.01
    # 2.5% against 21.2%: below half, shown after one wave at 5%, not at 0.05 / 6.
    assert 0.0083 < ratio_below_p(2, 80, 51, 240, 0.5) < 0.05
    assert ratio_below_p(5, 240, 51, 240, 0.5) < 0.001
