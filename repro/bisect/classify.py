"""What knock-out trials say about their knobs, judged against the failing reference.

The SPRT alone cannot tell "cured" from "lowered": a knob whose revert leaves a 0.5–5%
residual rate sits in the SPRT's indifference zone (p0=0.5%..p1=5%), where CLEAN, UNKNOWN
and CORRUPTING are all likely. So a class rests on counts over all sessions run:
  needed      cured: a CLEAN decision and not one corrupted session in enough sessions to put
              the rate below the SPRT's indifference rate (about 2%) at 1-alpha;
  amplifier   corruption seen, and shown to be below SAME_FRACTION of the reference's rate
              (a one-sided score test of the ratio, Farrington-Manning);
  irrelevant  CORRUPTING, and shown not much lower: its rate's 95% Wilson lower bound is at
              least SAME_FRACTION of the reference's rate;
  otherwise   unsettled (None): the campaign adds sessions, then calls it unknown at the cap.
The two tests are mirror images around the same fraction, and both converge as sessions are
added. The amplifier test's null is "at least half", not "no effect": against "no effect", a
red herring with a small real effect, or one whose wave came out low, passes for an amplifier
(bench/bisect_accuracy.py: 45 false amplifiers in 100 campaigns whose waves spread as the
load-induced engine's runs do; 2 with the margin). The sessions of a wave are not independent
draws; their spread is measured (dispersion.py) and reported, not divided out: at the cap,
dividing it out left more classes unknown than it corrected.
Knock-outs that are not amplifiers measured the same failure as the reference, so each
knock-out is judged against the reference pooled with the others (see classify_knockouts).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping

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
) -> tuple[dict[str, KnobClass | None], Evidence]:
    """Each knob's class (None = unsettled) and the reference pooled from the irrelevant ones.

    Each knock-out that shows corruption is judged against the reference pooled with every
    other knock-out shown to be a red herring: they measure the same failure, so they make the
    reference several waves strong, and a noisy first wave of bad cannot decide alone. Only
    the shown ones join: two amplifiers, each still unsettled, would otherwise dilute each
    other's reference until neither is shown below half of it. The first pass judges against
    the reference alone; each next pass pools what the last one found irrelevant, until the
    pool stops changing. `alpha` is the level for "below half" (the caller divides the
    campaign's alpha over the knobs).
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
            if below_half_p(trial, pooled) < alpha:
                classes[knob] = KnobClass.AMPLIFIER
            elif trial.sprt(settings).decision is Decision.CORRUPTING and shown_as_high(
                trial, pooled
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
