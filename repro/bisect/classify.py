"""What knock-out trials say about their knobs, judged against the failing reference.

The SPRT alone cannot tell "cured" from "lowered": a knob whose revert leaves a 0.5–5%
residual rate sits in the SPRT's indifference zone (p0=0.5%..p1=5%), where CLEAN, UNKNOWN
and CORRUPTING are all likely. So a class rests on counts over all sessions run:
  needed      cured: a CLEAN decision and not one corrupted session in enough sessions to put
              the rate below the SPRT's indifference rate (about 2%) at 1-alpha;
  amplifier   corruption seen, and lower than the reference (one-sided Fisher exact);
  irrelevant  CORRUPTING, and shown not much lower: its rate's 95% Wilson lower bound is at
              least SAME_FRACTION of the reference's rate;
  otherwise   unsettled (None): the campaign adds sessions, then calls it unknown at the cap.
Both tests converge as sessions are added (a p-value would not: under "no effect" it stays
uniform), so every unsettled knob is settled by more sessions unless the cap comes first.
Knock-outs that are not amplifiers measured the same failure as the reference, so each
knock-out is judged against the reference pooled with the others (see classify_knockouts).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping

from repro.bisect.evidence import Evidence
from repro.bisect.sprt import Decision, SprtSettings
from repro.results import fisher_less, wilson

# "Shown as high": a knock-out keeps at least this share of the reference's rate. An
# amplifier must at least halve the rate to be told from a red herring in a budget.
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


def lowered_p(trial: Evidence, reference: Evidence) -> float:
    """One-sided Fisher exact p-value that the trial's rate is below the reference's."""
    if trial.sessions == 0 or reference.sessions == 0:
        return 1.0
    return fisher_less(trial.corrupted, trial.sessions, reference.corrupted, reference.sessions)


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
    other such knock-out not (yet) found to be an amplifier: red herrings measure the same
    failure, so they make the reference several waves strong, and a noisy first wave of bad
    cannot decide alone. Amplifiers found are dropped from the pool and all are judged again,
    until no new amplifier appears. `alpha` is the Fisher level for "lower" (the caller
    divides the campaign's alpha over the knobs).
    """
    classes: dict[str, KnobClass | None] = {}
    corrupted = [k for k in knockouts if knockouts[k].corrupted > 0]
    for knob in knockouts:
        if knob not in corrupted:
            cured = is_cured(knockouts[knob], settings)
            classes[knob] = KnobClass.NEEDED if cured else None
    amplifiers: set[str] = set()
    while True:
        for knob in corrupted:
            others = [knockouts[k] for k in corrupted if k != knob and k not in amplifiers]
            pooled = pool(reference, *others)
            trial = knockouts[knob]
            if lowered_p(trial, pooled) < alpha:
                classes[knob] = KnobClass.AMPLIFIER
            elif trial.sprt(settings).decision is Decision.CORRUPTING and shown_as_high(
                trial, pooled
            ):
                classes[knob] = KnobClass.IRRELEVANT
            else:
                classes[knob] = None
        found = {k for k in corrupted if classes[k] is KnobClass.AMPLIFIER}
        if found <= amplifiers:
            break
        amplifiers |= found
    irrelevant = [knockouts[k] for k in corrupted if classes[k] is KnobClass.IRRELEVANT]
    return {k: classes[k] for k in knockouts}, pool(reference, *irrelevant)


def shown_as_high(trial: Evidence, reference: Evidence, confidence: float = 0.95) -> bool:
    """The trial keeps at least SAME_FRACTION of the reference's rate: its Wilson lower bound
    says so. Unlike a p-value, a bound converges as sessions are added."""
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
    """Does the trial show the reference's failure: CORRUPTING, and not at a lower rate?

    Lower means Fisher p < alpha. When `strict`, "not lower" must also be shown (the rate's
    99% Wilson bound keeps SAME_FRACTION of the reference's); short of that it is unsettled.
    """
    decision = trial.sprt(settings).decision
    if decision is Decision.CLEAN:
        return False
    if trial.corrupted and lowered_p(trial, reference) < alpha:
        return False
    shown = not strict or shown_as_high(trial, reference, STRICT_CONFIDENCE)
    if decision is Decision.CORRUPTING and shown:
        return True
    return None
