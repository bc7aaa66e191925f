"""Wald's binomial SPRT over sessions: corrupted or not, one at a time, truncated at a cap.

H0: p <= p0 (clean) against H1: p >= p1 (corrupting). The log-likelihood ratio moves by
ln(p1/p0) per corrupted session and by ln((1-p1)/(1-p0)) per clean one; it stops at the first
crossing of ln((1-beta)/alpha) (CORRUPTING) or ln(beta/(1-alpha)) (CLEAN). Facts and worked
numbers: shared/research/bisect.md §3.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Decision(enum.StrEnum):
    CORRUPTING = "CORRUPTING"
    CLEAN = "CLEAN"
    UNKNOWN = "UNKNOWN"  # no bound crossed in the sessions run (the SPRT's "dithering" zone)


class SprtSettings(BaseModel):
    """The test's hypotheses, error rates and cap; every default is written here, once."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    p0: float = Field(0.005, gt=0, lt=1, description="session corruption rate that counts as clean")
    p1: float = Field(
        0.05, gt=0, lt=1, description="session corruption rate that counts as corrupting"
    )
    alpha: float = Field(
        0.05, gt=0, lt=0.5, description="chance of calling a clean config corrupting"
    )
    beta: float = Field(
        0.05, gt=0, lt=0.5, description="chance of calling a corrupting config clean"
    )
    max_sessions: int = Field(
        400, ge=1, description="cap: the most sessions one configuration gets"
    )

    @model_validator(mode="after")
    def _ordered(self) -> SprtSettings:
        if self.p0 >= self.p1:
            raise ValueError("p0 must be below p1")
        return self

    @property
    def upper_bound(self) -> float:
        return math.log((1 - self.beta) / self.alpha)

    @property
    def lower_bound(self) -> float:
        return math.log(self.beta / (1 - self.alpha))

    @property
    def corrupted_step(self) -> float:
        return math.log(self.p1 / self.p0)

    @property
    def clean_step(self) -> float:
        return math.log((1 - self.p1) / (1 - self.p0))

    @property
    def indifference_rate(self) -> float:
        """The rate at which the LLR has no drift: the SPRT is a coin toss there (≈2% at defaults)."""
        return -self.clean_step / (self.corrupted_step - self.clean_step)


@dataclass(frozen=True, slots=True)
class SprtResult:
    """Where the test stood: `sessions`/`corrupted` count up to the decision (or all, if none)."""

    decision: Decision
    sessions: int
    corrupted: int
    llr: float

    @property
    def decided(self) -> bool:
        return self.decision is not Decision.UNKNOWN


def run_sprt(outcomes: Iterable[bool], settings: SprtSettings) -> SprtResult:
    """Feed per-session outcomes (True = corrupted) in order; stop at the first bound crossed.

    Only the first `settings.max_sessions` outcomes are read; if no bound is crossed by then
    (or by the end of the outcomes) the result is UNKNOWN with the counts so far.
    """
    llr, sessions, corrupted = 0.0, 0, 0
    for corrupt in outcomes:
        if sessions >= settings.max_sessions:
            break
        sessions += 1
        corrupted += corrupt
        llr += settings.corrupted_step if corrupt else settings.clean_step
        if llr >= settings.upper_bound:
            return SprtResult(Decision.CORRUPTING, sessions, corrupted, llr)
        if llr <= settings.lower_bound:
            return SprtResult(Decision.CLEAN, sessions, corrupted, llr)
    return SprtResult(Decision.UNKNOWN, sessions, corrupted, llr)


def expected_sessions(rate: float, settings: SprtSettings) -> float:
    """Wald's approximate mean sessions to a decision at a true rate (ignores overshoot).

    Uses the operating characteristic L(p) through Wald's h(p) parametrisation; at the
    indifference rate the drift is zero and the formula's limit -A*B/E[z^2] is used.
    """
    a, b = settings.upper_bound, settings.lower_bound
    up, down = settings.corrupted_step, settings.clean_step
    drift = rate * up + (1 - rate) * down
    if rate <= 0:
        return b / down
    if abs(drift) < 1e-12:
        return -a * b / (rate * up**2 + (1 - rate) * down**2)
    accept_h0 = _operating_characteristic(rate, settings)
    return (accept_h0 * b + (1 - accept_h0) * a) / drift


def clean_verdict_probability(rate: float, settings: SprtSettings) -> float:
    """Wald's operating characteristic L(p): the chance the test accepts CLEAN at a true rate
    (truncation ignored): 1 at rate 0, 1 - alpha near p0, beta near p1, 0 at rate 1."""
    if rate <= 0:
        return 1.0
    if rate >= 1:
        return 0.0
    drift = rate * settings.corrupted_step + (1 - rate) * settings.clean_step
    if abs(drift) < 1e-12:  # at the indifference rate: the limit h -> 0
        a, b = settings.upper_bound, settings.lower_bound
        return a / (a - b)
    return _operating_characteristic(rate, settings)


def _operating_characteristic(rate: float, settings: SprtSettings) -> float:
    """L(p): chance of accepting H0 at rate p, from Wald's h solving E[exp(h z)] = 1."""
    up, down = settings.corrupted_step, settings.clean_step
    a, b = settings.upper_bound, settings.lower_bound

    def moment(h: float) -> float:
        return rate * math.exp(h * up) + (1 - rate) * math.exp(h * down) - 1

    # h > 0 below the indifference rate and h < 0 above it; bracket and bisect.
    drift = rate * up + (1 - rate) * down
    low, high = (1e-9, 50.0) if drift < 0 else (-50.0, -1e-9)
    for _ in range(200):
        mid = (low + high) / 2
        if (moment(mid) > 0) == (moment(high) > 0):
            high = mid
        else:
            low = mid
    h = (low + high) / 2
    return (math.exp(h * a) - 1) / (math.exp(h * a) - math.exp(h * b))
