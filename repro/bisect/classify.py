"""What knock-out trials say about their knobs, judged against the failing reference.

The SPRT alone cannot tell "cured" from "lowered": a knob whose revert leaves a 0.5–5%
residual rate sits in the SPRT's indifference zone (p0=0.5%..p1=5%), where CLEAN, UNKNOWN
and CORRUPTING are all likely. So a class rests on counts over all sessions run:
  needed      cured: a CLEAN decision and not one corrupted session in enough sessions to put
              the rate below the SPRT's indifference rate (about 2%) at 1-alpha;
  amplifier   corruption seen over three waves at least, and a sequential likelihood ratio
              between two ratios of its rate to the reference's, AMPLIFIER_RATIO (0.4)
              against HERRING_RATIO (1.0), past its upper bound (ratio_llr);
  irrelevant  CORRUPTING, that likelihood ratio on the red herring's side, and shown not much
              lower: its rate's 95% Wilson lower bound is at least SAME_FRACTION of the
              reference's rate;
  otherwise   unsettled (None): the campaign adds sessions, then calls it unknown at the cap.
Both converge as sessions are added. History of the amplifier rule: Fisher's test against "no
effect" let red herrings through where waves spread (45 false amplifiers in 100 campaigns at
the load-induced engine's spread, bench/bisect_accuracy.py); a score test against "at least
half" (2026-12-01 to 12-05) stopped that, but an amplifier that lowers the rate 2-2.5x sits
on that line and stayed unknown at the cap (25 of 100 campaigns right at 12.5% -> 5%; 18
trials and 3,840 sessions on a real one). Two simple hypotheses either side of the line
(their log-midpoint is a ratio of 0.63) decide both a 2.5x amplifier and a red herring in a
few waves, and the likelihood ratio is divided by the dispersion phi measured between waves
(a quasi-likelihood; the larger of the campaign's and the pooled reference's waves'), so waves
that spread count for fewer sessions (bench/RESULTS.md, 2026-12-05: 89 of 100 campaigns
right at 12.5% -> 5%; at the load-induced engine's spread some 10% of campaigns still call
the x0.8 red herring an amplifier, against 2% under the half line).
Knock-outs that are not amplifiers measured the same failure as the reference, so each
knock-out is judged against the reference pooled with the others (see classify_knockouts).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping

from repro.bisect.dispersion import dispersion
from repro.bisect.evidence import Evidence
from repro.bisect.sprt import Decision, SprtSettings
from repro.results import ratio_below_p, wilson

# The line between a red herring and an amplifier: "irrelevant" is shown to keep at least this
# share of the reference's rate, "amplifier" to fall below it.
SAME_FRACTION = 0.5
STRICT_CONFIDENCE = 0.99  # "reproduces, shown": when amplifiers say it should not


class KnobClass(enum.StrEnum):
    NEEDED = "needed"  # reverting it cures the failure
    AMPLIFIER = "amplifier"  # reverting it lowers the rate significantly, but corruption remains
    IRRELEVANT = "irrelevant"  # reverting it leaves the failure as it was
    UNKNOWN = "unknown"  # the session cap was reached before the evidence settled


def cure_sessions(settings: SprtSettings) -> int:
    """Clean sessions in a row that bound the rate below the indifference rate (151 at defaults).

    Zero events in n bounds the rate below 1 - alpha**(1/n) (one-sided, exact); the SPRT's own
    CLEAN after 64 only bounds it below 4.6%, which a 2% amplifier passes one time in four.
    """
    needed = math.log(settings.alpha) / math.log(1 - settings.indifference_rate)
    return min(math.ceil(needed), settings.max_sessions)


def is_cured(trial: Evidence, settings: SprtSettings) -> bool:
    return (
        trial.corrupted == 0
        and trial.sprt(settings).decision is Decision.CLEAN
        and trial.sessions >= cure_sessions(settings)
    )


def below_half_p(trial: Evidence, reference: Evidence) -> float:
    """One-sided p-value that the trial's rate is below SAME_FRACTION of the reference's."""
    if not trial.sessions or not reference.corrupted:
        return 1.0
    return ratio_below_p(
        trial.corrupted, trial.sessions, reference.corrupted, reference.sessions, SAME_FRACTION
    )


# The two ratios the knock-out's test weighs (its rate over the reference's): an amplifier's
# and a red herring's, either side of the line between them.
AMPLIFIER_RATIO = 0.4
HERRING_RATIO = 1.0
# An amplifier is called on three waves at least: a wave that came out low is the likeliest
# false alarm where waves spread more than the binomial says, and more waves show the spread
# (false amplifiers at the load-induced engine's spread: 10 in 100 campaigns on two waves, 6
# on three; bench/RESULTS.md, 2026-12-05).
AMPLIFIER_WAVES = 3


def ratio_llr(trial: Evidence, reference: Evidence, phi: float = 1.0) -> float:
    """log of how much better "the trial's rate is AMPLIFIER_RATIO times the reference's"
    explains both counts than "HERRING_RATIO times", the common rate profiled out; divided
    by the dispersion factor phi (a quasi-likelihood: waves that spread more than the
    binomial count for fewer sessions)."""
    k, n, kr, nr = trial.corrupted, trial.sessions, reference.corrupted, reference.sessions
    if not n or not nr:
        return 0.0
    return (_profile(k, n, kr, nr, AMPLIFIER_RATIO) - _profile(k, n, kr, nr, HERRING_RATIO)) / max(
        1.0, phi
    )


def _profile(k: int, n: int, kr: int, nr: int, rho: float) -> float:
    """max over r of log Bin(k; n, rho r) + log Bin(kr; nr, r) (binomial coefficients left
    out: they cancel in a ratio). The maximum is a root of a quadratic in r."""
    s = k + kr
    a = rho * (n + nr)
    b = -(s * (1 + rho) + (n - k) * rho + (nr - kr))
    c = float(s)
    disc = max(0.0, b * b - 4 * a * c)
    r = (-b - math.sqrt(disc)) / (2 * a)
    r = min(max(r, 1e-12), min(1.0, 1 / rho) - 1e-12)

    def term(events: int, trials: int, p: float) -> float:
        p = min(max(p, 1e-12), 1 - 1e-12)
        return events * math.log(p) + (trials - events) * math.log(1 - p)

    return term(k, n, rho * r) + term(kr, nr, r)


def pool(reference: Evidence, *others: Evidence) -> Evidence:
    """One evidence holding every wave of several trials that measure the same failure."""
    waves = reference.waves + tuple(w for o in others for w in o.waves)
    return Evidence(reference.config, waves)


def classify_knockouts(
    reference: Evidence,
    knockouts: Mapping[str, Evidence],
    settings: SprtSettings,
    *,
    alpha: float,
    phi: float = 1.0,
) -> tuple[dict[str, KnobClass | None], Evidence]:
    """Each knob's class (None = unsettled) and the reference pooled from the irrelevant ones.

    Each knock-out that shows corruption is judged against the reference pooled with every
    other knock-out shown to be a red herring: they measure the same failure, so they make the
    reference several waves strong, and a noisy first wave of bad cannot decide alone. Only
    the shown ones join: two amplifiers, each still unsettled, would otherwise dilute each
    other's reference until neither is shown below half of it. The first pass judges against
    the reference alone; each next pass pools what the last one found irrelevant, until the
    pool stops changing. `alpha` is each class decision's error (the caller divides the
    campaign's alpha over the knobs): the amplifier's likelihood ratio must pass
    ln((1 - alpha) / alpha). `phi` is the dispersion between waves measured so far.
    """
    classes: dict[str, KnobClass | None] = {}
    corrupted = [k for k in knockouts if knockouts[k].corrupted > 0]
    for knob in knockouts:
        if knob not in corrupted:
            cured = is_cured(knockouts[knob], settings)
            classes[knob] = KnobClass.NEEDED if cured else None
    herrings: set[str] = set()
    for _ in range(len(corrupted) + 1):  # the pool settles in a pass or two; never loop on
        for knob in corrupted:
            pooled = pool(reference, *(knockouts[k] for k in sorted(herrings - {knob})))
            trial = knockouts[knob]
            # The pooled waves all measure one failure: their spread is a measure of phi too.
            llr = ratio_llr(trial, pooled, max(phi, dispersion([pooled])))
            if len(trial.waves) >= AMPLIFIER_WAVES and llr >= math.log((1 - alpha) / alpha):
                classes[knob] = KnobClass.AMPLIFIER
            elif (
                llr < 0
                and trial.sprt(settings).decision is Decision.CORRUPTING
                and shown_as_high(trial, pooled)
            ):
                classes[knob] = KnobClass.IRRELEVANT
            else:
                classes[knob] = None
        found = {k for k in corrupted if classes[k] is KnobClass.IRRELEVANT}
        if found == herrings:
            break
        herrings = found
    irrelevant = [knockouts[k] for k in corrupted if classes[k] is KnobClass.IRRELEVANT]
    return {k: classes[k] for k in knockouts}, pool(reference, *irrelevant)


def shown_as_high(trial: Evidence, reference: Evidence, confidence: float = 0.95) -> bool:
    """The trial keeps at least SAME_FRACTION of the reference's rate: its Wilson lower bound
    says so. Unlike a p-value against "no effect", a bound converges as sessions are added."""
    low = wilson(trial.corrupted, trial.sessions, confidence=confidence).low
    return low >= SAME_FRACTION * reference.rate().value


def reproduces(
    trial: Evidence,
    reference: Evidence,
    settings: SprtSettings,
    *,
    alpha: float,
    strict: bool = False,
) -> bool | None:
    """Does the trial show the reference's failure: CORRUPTING, and not below half its rate?

    Below half means the score test's p < alpha. When `strict`, "not lower" must also be
    shown (the rate's 99% Wilson bound keeps SAME_FRACTION of the reference's); short of that
    it is unsettled.
    """
    decision = trial.sprt(settings).decision
    if decision is Decision.CLEAN:
        return False
    if trial.corrupted and below_half_p(trial, reference) < alpha:
        return False
    shown = not strict or shown_as_high(trial, reference, STRICT_CONFIDENCE)
    if decision is Decision.CORRUPTING and shown:
        return True
    return None
