"""What the steps of a flag search share: the two endpoints, the reference the others are
judged against, good plus some of bad's knobs, and the report they end in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from repro.bisect.classify import AMPLIFIER_RATIO, HERRING_RATIO, KnobClass, ratio_llr, reproduces
from repro.bisect.dispersion import dispersion
from repro.bisect.evidence import Evidence
from repro.bisect.together import Request
from repro.bisect.trial import Question, SpentOnTrials, Trial, TrialRunner


@dataclass(frozen=True, slots=True)
class FlagReport(SpentOnTrials):
    bad: Trial
    good: Trial
    differing: tuple[str, ...]
    culprit: dict[str, str]  # knob -> its bad value
    culprit_trial: Trial | None  # good + culprit, the confirmation
    classes: dict[str, KnobClass]
    knockouts: dict[str, Trial]  # knob -> bad with that knob reverted
    reference: Evidence  # what "lower" was judged against: bad + knock-outs found irrelevant
    method: str  # "knock-out" or "ddmin"
    trials: tuple[Trial, ...]
    notes: tuple[str, ...]
    phi: float = 1.0  # run-to-run dispersion of waves, reported (dispersion.py)


class FlagSearch:
    """One search's state: the endpoints and their trials, the knobs that differ, the
    reference, and the knock-outs once they are measured."""

    def __init__(
        self,
        runner: TrialRunner,
        bad: dict[str, str],
        good: dict[str, str],
        bad_trial: Trial,
        good_trial: Trial,
        differing: tuple[str, ...],
    ) -> None:
        self.runner, self.settings = runner, runner.settings
        self.bad, self.good = bad, good
        self.bad_trial, self.good_trial = bad_trial, good_trial
        self.differing = differing
        self.alpha = self.settings.alpha
        self.reference = bad_trial.evidence  # what "reproduces the failure" is judged against
        self.knockouts: dict[str, Trial] = {}

    async def confirm(self, subset: list[str], *, strict: bool) -> Trial:
        """good + subset, measured until it is settled whether it reproduces bad."""
        return await self.from_good(subset, lambda ev: self.reproduces(ev, strict) is not None)

    def confirming(self, subset: Sequence[str], *, strict: bool) -> Request:
        """What `confirm` measures, as a request that can run beside others."""
        question: Question = lambda ev: self.reproduces(ev, strict) is not None  # noqa: E731
        return Request(self.good_label(subset), self.good_plus(subset), question)

    def lower_note(self, trial: Trial) -> str:
        return (
            f"{trial.label} corrupts at {trial.rate}, significantly below bad's "
            f"{self.reference.corrupted}/{self.reference.sessions}: knobs classed irrelevant "
            "may amplify it further."
        )

    def good_plus(self, subset: Sequence[str]) -> dict[str, str]:
        return {**self.good, **{k: self.bad[k] for k in subset}}

    def good_label(self, subset: Sequence[str]) -> str:
        return "good + " + (" + ".join(f"{k}={self.bad[k]}" for k in subset) or "nothing")

    async def from_good(self, subset: Sequence[str], settled: Question | None = None) -> Trial:
        question = settled or (lambda ev: self.reproduces(ev) is not None)
        return await self.runner.measure(self.good_label(subset), self.good_plus(subset), question)

    @property
    def phi(self) -> float:
        """The run-to-run dispersion measured so far, over every trial of the campaign: shown
        with the classes, not used by them (see classify.py)."""
        return dispersion(t.evidence for t in self.runner.trials.values())

    def reproduces(
        self, evidence: Evidence, strict: bool = False, alpha: float | None = None
    ) -> bool | None:
        return reproduces(
            evidence,
            self.reference,
            self.settings,
            alpha=alpha or self.alpha,
            strict=strict,
        )

    def report(
        self,
        culprit: Sequence[str],
        culprit_trial: Trial,
        classes: dict[str, KnobClass],
        knockouts: dict[str, Trial],
        method: str,
        notes: tuple[str, ...],
    ) -> FlagReport:
        extra: list[str] = list(notes)
        for knob in culprit:
            reverted = knockouts.get(knob)
            if classes[knob] is KnobClass.AMPLIFIER and reverted is not None:
                llr = ratio_llr(reverted.evidence, self.reference, self.phi)
                extra.append(
                    f"{knob}={self.bad[knob]} amplifies: {self.reference.corrupted}/"
                    f"{self.reference.sessions} = {self.reference.rate().value:.1%} with it "
                    f"(bad and the knock-outs found irrelevant, pooled), {reverted.rate} "
                    f"with {knob}={self.good[knob]} (log likelihood ratio {llr:+.2f} for "
                    f"x{AMPLIFIER_RATIO} of it against x{HERRING_RATIO})."
                )
        return FlagReport(
            bad=self.bad_trial,
            good=self.good_trial,
            differing=self.differing,
            culprit={k: self.bad[k] for k in self.differing if k in culprit},
            culprit_trial=culprit_trial,
            classes=classes,
            knockouts=knockouts,
            reference=self.reference,
            method=method,
            trials=tuple(self.runner.trials.values()),
            notes=tuple(extra),
            phi=self.phi,
        )
