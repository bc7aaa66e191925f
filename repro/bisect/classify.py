"""What one trial says about a knob, judged against a reference trial (the bad endpoint).

The SPRT alone cannot tell "cured" from "lowered": a knob whose revert leaves a 0.5–5%
residual rate sits in the SPRT's indifference zone (p0=0.5%..p1=5%), where CLEAN, UNKNOWN
and CORRUPTING are all likely. So a class rests on two things measured on all sessions run:
  cured    = not one corrupted session in enough sessions to put the residual rate below the
             SPRT's indifference rate (about 2%) at 1-alpha confidence, and a CLEAN decision;
  lowered  = one-sided Fisher exact test against the reference, p below the given alpha.
Each function returns None while the evidence does not settle the question yet.
"""

from __future__ import annotations

import enum
import math

from repro.bisect.evidence import Evidence
from repro.bisect.sprt import Decision, SprtSettings
from repro.results.stats import fisher_less

# A knock-out whose rate is shown to keep at least this share of bad's is not an amplifier.
SAME_FRACTION = 0.5


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


def lowered_p(trial: Evidence, reference: Evidence) -> float:
    """One-sided Fisher exact p-value that the trial's rate is below the reference's."""
    if trial.sessions == 0 or reference.sessions == 0:
        return 1.0
    return fisher_less(trial.corrupted, trial.sessions, reference.corrupted, reference.sessions)


def shown_as_high(trial: Evidence, reference: Evidence) -> bool:
    """The trial's rate is at least SAME_FRACTION of the reference's, at 95% (Wilson bound).

    "Not significantly lower" alone is weak when one side is small (a 3% knock-out against an
    unlucky 8/80 bad endpoint passes it); a confidence bound, unlike a p-value, converges as
    sessions are added, so asking for it always settles.
    """
    return trial.rate().low >= SAME_FRACTION * reference.rate().value


def look_alpha(alpha: float, trial: Evidence, reference: Evidence) -> float:
    """Alpha spending over repeated looks: the k-th spends alpha / 2^k, so all stay under alpha.

    A comparison is looked at again each time either side gets a wave; testing every look at
    the full alpha would call a red herring an amplifier far more often than alpha.
    """
    look = max(1, len(trial.waves) + len(reference.waves) - 1)
    return alpha / 2**look


def knockout_class(
    trial: Evidence,
    reference: Evidence,
    settings: SprtSettings,
    *,
    alpha: float,
) -> KnobClass | None:
    """The class of the knob whose revert turned `reference` into `trial`, or None if unsettled.

    Amplifier: lowered (Fisher p below this look's share of alpha). Irrelevant: CORRUPTING,
    not lowered, and shown as high (above). Anything else is unsettled and needs more
    sessions, on either side.
    """
    decision = trial.sprt(settings).decision
    if trial.corrupted == 0:
        if decision is Decision.CLEAN and trial.sessions >= cure_sessions(settings):
            return KnobClass.NEEDED
        return None
    # Corruption seen: the revert did not cure, whatever the SPRT says.
    if lowered_p(trial, reference) < look_alpha(alpha, trial, reference):
        return KnobClass.AMPLIFIER
    if decision is Decision.CORRUPTING and shown_as_high(trial, reference):
        return KnobClass.IRRELEVANT
    return None


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
    Wilson bound keeps SAME_FRACTION of the reference's); short of that it is unsettled.
    """
    decision = trial.sprt(settings).decision
    if decision is Decision.CLEAN:
        return False
    if trial.corrupted and lowered_p(trial, reference) < alpha:
        return False
    if decision is Decision.CORRUPTING and (not strict or shown_as_high(trial, reference)):
        return True
    return None
