"""Removals (a knob reverted, or dropped from a culprit) judged against one reference trial,
with sessions added one wave at a time where a class is still unsettled."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from repro.bisect.classify import KnobClass, classify_knockouts, is_cured
from repro.bisect.evidence import Evidence
from repro.bisect.flag_search import FlagSearch
from repro.bisect.together import Request, measure_together
from repro.bisect.trial import Trial


@dataclass(frozen=True, slots=True)
class Removals:
    """Knock-out trials judged against one reference trial, and what they concluded."""

    reference: Trial
    pooled: Evidence
    trials: dict[str, Trial]
    classes: dict[str, KnobClass]


async def judge_removals(
    search: FlagSearch, reference: Trial, removals: Mapping[str, tuple[str, dict[str, str]]]
) -> Removals:
    """Measure each removal, then add sessions where a class is unsettled, up to the cap.

    Unsettled evidence gets more waves on its smaller side, the removal or the reference (as
    Pinpoint does, bisect.md §2.3), a round at a time: one wave for each unsettled removal no
    bigger than the pooled reference, all at once, else one for the reference.
    """
    # Bonferroni over the knobs. Repeated looks (one per added wave) inflate this a little;
    # a false amplifier is caught later, when good + the culprit without it still
    # reproduces (see knockout.py), so power to find the real one comes first.
    alpha = search.alpha / len(removals)

    def first_pass(ev: Evidence) -> bool:  # until corruption shows, or the revert is cured
        return ev.corrupted > 0 or is_cured(ev, search.settings)

    asked = [Request(label, config, first_pass) for label, config in removals.values()]
    trials = dict(zip(removals, await measure_together(search.runner, asked), strict=True))
    while True:
        evidence = {k: t.evidence for k, t in trials.items()}
        found, pooled = classify_knockouts(
            reference.evidence, evidence, search.settings, alpha=alpha, phi=search.phi
        )
        unsettled = sorted(
            (k for k, c in found.items() if c is None), key=lambda k: trials[k].sessions_run
        )
        growable = [k for k in unsettled if not search.runner.at_cap(trials[k].evidence)]
        # A bigger reference only helps a comparison; an uncured 0/n needs its own sessions.
        compared = any(trials[k].evidence.corrupted for k in unsettled)
        reference_growable = compared and not search.runner.at_cap(reference.evidence)
        if not unsettled or not (growable or reference_growable):
            classes = {k: c or KnobClass.UNKNOWN for k, c in found.items()}
            return Removals(reference, pooled, trials, classes)
        # One round: the next wave of every unsettled removal on the smaller side, measured
        # together (K at a time); the reference when it is the smaller side of them all. The
        # round's trials depend on the evidence only, never on K.
        smaller = [k for k in growable if trials[k].sessions_run <= pooled.sessions_run]
        if smaller or not reference_growable:
            grow = smaller or growable[:1]
            asked = [_next_wave(trials[k], removals[k][1]) for k in grow]
            grown = await measure_together(search.runner, asked)
            trials |= dict(zip(grow, grown, strict=True))
        else:
            (reference,) = await measure_together(
                search.runner, [_next_wave(reference, dict(reference.config))]
            )


def _next_wave(trial: Trial, config: dict[str, str]) -> Request:
    wanted = trial.sessions_run + 1
    return Request(trial.label, config, lambda ev: ev.sessions_run >= wanted)
