"""The posterior over where a history changes state, and which point to measure next.

Points 0..N are ordered oldest to newest; point 0 is in the old endpoint's state, point N in
the new one's. The culprit b (1..N) is the first point in the new state: every point before
it behaves like the old endpoint, every point from it on like the new one. Each measured
point brings counts, k corrupted of n sessions.

The two states' rates are not assumed known: each side's counts are pooled under a Beta
prior and integrated out (a Beta-binomial marginal), so a culprit hypothesis is scored by how
well one rate explains everything before it and another everything after it. The endpoints,
measured first and usually the largest samples, pin both rates down; every other point
sharpens them. Waves of one configuration spread more than independent sessions would
(dispersion.py), so the log-likelihood is divided by the measured dispersion factor phi
(a quasi-likelihood): a wave that came out high or low moves the posterior as much as the
binomial would let a phi-times smaller sample move it.

The next point is the one whose answer is expected to leave the least entropy in the
posterior (research/bisect.md §2.2: probabilistic bisection), with the answer modelled as a
noisy verdict: a point in the old state is called new with probability e_old and a point in
the new state old with e_new, the trial's error rates at the measured rates (the SPRT's
operating characteristic there). Under symmetric noise this is the posterior median, not the
middle of the range: a history with a noisy verdict in it is not halved blindly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln

# A weak prior on each state's rate (Jeffreys'): the endpoints' counts outweigh it at once.
PRIOR_A, PRIOR_B = 0.5, 0.5
# Error rates are never taken as zero: a verdict that cannot be wrong would make one bad
# draw final. Nor above this, where a verdict says nothing.
MIN_ERROR, MAX_ERROR = 0.01, 0.45


@dataclass(frozen=True, slots=True)
class Counts:
    corrupted: int
    sessions: int


@dataclass(frozen=True, slots=True)
class Interval:
    """The culprit lies in (low, high]: `low` is the last point before it that was measured,
    `high` the first from it on; the points strictly between are unmeasured or untestable."""

    low: int
    high: int
    probability: float


class CulpritPosterior:
    """P(culprit = b | counts), b = 1..N, for N + 1 ordered points."""

    def __init__(
        self,
        points: int,
        counts: Mapping[int, Counts],
        phi: float = 1.0,
        prior: Sequence[float] | None = None,
    ) -> None:
        if points < 2:
            raise ValueError("a history needs two points at least")
        self.points = points
        self.counts = dict(counts)
        self.phi = max(1.0, phi)
        n = points - 1  # culprits 1..N
        k_at = np.zeros(points)
        n_at = np.zeros(points)
        for index, c in self.counts.items():
            k_at[index] += c.corrupted
            n_at[index] += c.sessions
        # Culprit b (array position b - 1): the old side is points 0..b-1, the new b..N.
        k_old = np.cumsum(k_at)[:-1]
        n_old = np.cumsum(n_at)[:-1]
        k_new = k_at.sum() - k_old
        n_new = n_at.sum() - n_old
        log_like = _log_marginal(k_old, n_old) + _log_marginal(k_new, n_new)
        log_prior = np.log(np.asarray(prior, dtype=float)) if prior is not None else np.zeros(n)
        log_post = log_prior + log_like / self.phi
        log_post -= log_post.max()
        post = np.exp(log_post)
        self.p = post / post.sum()

    def of(self, culprit: int) -> float:
        return float(self.p[culprit - 1])

    def cdf(self, point: int) -> float:
        """P(culprit <= point): that `point` is in the new state."""
        if point <= 0:
            return 0.0
        return float(self.p[: min(point, self.points - 1)].sum())

    def entropy(self) -> float:
        return _entropy(self.p)

    def interval(self, low: int, high: int) -> Interval:
        """The mass of culprits in (low, high]."""
        return Interval(low, high, float(self.p[low:high].sum()))

    def best_interval(self, measured: Sequence[int]) -> Interval:
        """Of the stretches between consecutive measured points, the most likely to hold the
        culprit: the answer when it holds no point that could still be measured."""
        marks = sorted(set(measured) | {0, self.points - 1})
        stretches = [self.interval(a, b) for a, b in itertools.pairwise(marks)]
        return max(stretches, key=lambda s: s.probability)

    def expected_entropy(self, e_old: float, e_new: float) -> np.ndarray:
        """For each point 0..N, the posterior entropy expected after a verdict there.

        A verdict at point i says "new" (b <= i) or "old" (b > i), wrong with probability
        e_new and e_old respectively. Computed for every i at once from prefix sums."""
        p = self.p
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
        mass = np.concatenate(([0.0], np.cumsum(p)))  # mass[i] = P(b <= i)
        info = np.concatenate(([0.0], np.cumsum(plogp)))
        total_mass, total_info = mass[-1], info[-1]
        out = np.empty(self.points)
        for i in range(self.points):
            left_mass, left_info = mass[i], info[i]  # culprits 1..i: i is in the new state
            right_mass, right_info = total_mass - left_mass, total_info - left_info
            expected = 0.0
            # The verdict "new": likely 1 - e_new where b <= i, e_old where b > i.
            for a, c in ((1 - e_new, e_old), (e_new, 1 - e_old)):
                z = a * left_mass + c * right_mass
                if z <= 0:
                    continue
                # sum over b of q log q, q = weight * p_b, normalised by z
                s = _scaled(a, left_mass, left_info) + _scaled(c, right_mass, right_info)
                expected += z * (math.log(z) - s / z)
            out[i] = expected
        return out


def _scaled(weight: float, mass: float, info: float) -> float:
    """sum of (w p) log (w p) over a stretch whose sum of p is `mass` and of p log p `info`."""
    if weight <= 0 or mass <= 0:
        return 0.0
    return weight * (info + mass * math.log(weight))


def _log_marginal(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """log of the Beta-binomial marginal of pooled counts (the binomial coefficients are the
    same for every culprit and drop out)."""
    return betaln(PRIOR_A + k, PRIOR_B + n - k) - betaln(PRIOR_A, PRIOR_B)


def _entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def next_points(
    posterior: CulpritPosterior,
    candidates: Sequence[int],
    e_old: float,
    e_new: float,
    how_many: int = 1,
) -> list[int]:
    """The points to measure next: for one, the candidate whose verdict leaves the least
    expected entropy; for K at once, the candidates nearest the posterior's quantiles
    j/(K+1), j = 1..K (FACF's rule for parallel runs, research/bisect.md §2.4), topped up by
    expected entropy where two quantiles fall on one point."""
    if not candidates:
        return []
    expected = posterior.expected_entropy(e_old, e_new)
    ranked = sorted(candidates, key=lambda i: (expected[i], i))
    if how_many <= 1:
        return ranked[:1]
    chosen: list[int] = []
    for j in range(1, how_many + 1):
        rest = [i for i in candidates if i not in chosen]
        if not rest:
            break
        target = j / (how_many + 1)
        chosen.append(min(rest, key=lambda i: (abs(posterior.cdf(i) - target), expected[i], i)))
    chosen += [i for i in ranked if i not in chosen]
    return chosen[:how_many]
