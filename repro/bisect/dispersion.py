"""How much more whole waves of one configuration spread than the binomial says.

The sessions of a wave share one run: its load, and on the load-induced engine the stuck
hand-over that reshapes the rest of it. So waves of the same configuration spread more than
independent sessions would (docs/sim.md, "Run to run": 10-24 of 80 over four runs of one
configuration), and a test that treats every session as an independent draw over-states a
difference between two trials. The dispersion factor phi is the quasi-binomial one
(McCullagh & Nelder, Generalized Linear Models, 2nd ed., §4.5): Pearson's chi-square of the
waves of each trial around that trial's own rate, over its degrees of freedom. Only the
spread *within* a trial is used: trials differ by design. A campaign reports phi beside its
classes; the classes guard against it by their margin (classify.py), not by dividing it out.
"""

from __future__ import annotations

from collections.abc import Iterable

from repro.bisect.evidence import CORRUPTED, ERRORED, Evidence


def dispersion(trials: Iterable[Evidence]) -> float:
    """phi >= 1, from the waves of every trial with two or more that saw some corruption; 1
    (the binomial) while no trial has shown any spread to measure."""
    chi_square, freedom = 0.0, 0
    for trial in trials:
        waves = [
            (w.outcomes.count(CORRUPTED), w.sessions - w.outcomes.count(ERRORED))
            for w in trial.waves
        ]
        trial_chi_square, trial_freedom = pearson(waves)
        chi_square += trial_chi_square
        freedom += trial_freedom
    return phi(chi_square, freedom)


def phi(chi_square: float, freedom: int) -> float:
    """The dispersion factor, never below the binomial's 1; 1 with nothing to measure."""
    return max(1.0, chi_square / freedom) if freedom else 1.0


def pearson(groups: Iterable[tuple[int, int]]) -> tuple[float, int]:
    """Pearson's chi-square of (corrupted, sessions) groups around their pooled rate, and its
    degrees of freedom; (0, 0) for one group, or a rate of 0 or 1: no spread to see."""
    groups = [(k, n) for k, n in groups if n]
    corrupted, sessions = sum(k for k, _ in groups), sum(n for _, n in groups)
    if len(groups) < 2 or corrupted in (0, sessions):
        return 0.0, 0
    rate = corrupted / sessions
    chi_square = sum((k - n * rate) ** 2 / (n * rate * (1 - rate)) for k, n in groups)
    return chi_square, len(groups) - 1
