"""Flag search: the whole conjunction of knobs that turns a clean configuration corrupting.

1. Endpoints: bad must decide CORRUPTING and good CLEAN, or the search refuses.
2. Knock-out (≤ 16 differing knobs): revert each knob from bad and class it (classify.py).
3. Sufficiency: good + needed knobs must reproduce bad's failure; if not, add the amplifiers.
4. ddmin over the differing knobs when more than 16 differ, or when step 3 fails (an OR-type
   or non-monotone failure, which knock-out cannot see).
Background and costs: shared/research/bisect.md §0, §1, §5.4, §7.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from repro.bisect.classify import KnobClass, knockout_class, lowered_p, reproduces
from repro.bisect.ddmin import ddmin
from repro.bisect.evidence import Evidence
from repro.bisect.sprt import Decision, expected_sessions
from repro.bisect.trial import Question, Trial, TrialRunner
from repro.errors import UsageError
from repro.knobs import describe

KNOCKOUT_MAX_KNOBS = 16


@dataclass(frozen=True, slots=True)
class FlagReport:
    bad: Trial
    good: Trial
    differing: tuple[str, ...]
    culprit: dict[str, str]  # knob -> its bad value
    culprit_trial: Trial | None  # good + culprit, the confirmation
    classes: dict[str, KnobClass]
    knockouts: dict[str, Trial]  # knob -> bad with that knob reverted
    method: str  # "knock-out" or "ddmin"
    trials: tuple[Trial, ...]
    notes: tuple[str, ...]

    @property
    def sessions(self) -> int:
        return sum(t.sessions_run for t in self.trials)

    @property
    def wall_s(self) -> float:
        return sum(t.evidence.wall_s for t in self.trials)


async def search_flags(
    runner: TrialRunner, bad: Mapping[str, str], good: Mapping[str, str]
) -> FlagReport:
    """Run the whole search; raises UsageError when the endpoints do not bracket a failure."""
    bad_config, good_config = runner.oracle.resolve(bad), runner.oracle.resolve(good)
    differing = tuple(k for k in bad_config if bad_config[k] != good_config[k])
    if not differing:
        raise UsageError(
            f"--bad and --good resolve to the same configuration ({describe(bad_config)}); "
            "give them at least one knob with different values."
        )
    bad_trial = await runner.measure("bad", bad_config)
    _require(bad_trial, Decision.CORRUPTING, "bad", runner)
    good_trial = await runner.measure("good", good_config)
    _require(good_trial, Decision.CLEAN, "good", runner)
    search = _Search(runner, bad_config, good_config, bad_trial, good_trial, differing)
    if len(differing) > KNOCKOUT_MAX_KNOBS:
        note = f"{len(differing)} knobs differ (more than {KNOCKOUT_MAX_KNOBS}): ddmin."
        return await search.by_ddmin((note,))
    return await search.by_knockout()


class _Search:
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

    async def by_knockout(self) -> FlagReport:
        classes: dict[str, KnobClass] = {}
        knockouts: dict[str, Trial] = {}
        for knob in self.differing:
            knockouts[knob], classes[knob] = await self._knock_out(knob)
        needed = [k for k in self.differing if classes[k] is KnobClass.NEEDED]
        amplifiers = [k for k in self.differing if classes[k] is KnobClass.AMPLIFIER]
        # Knock-outs classed irrelevant measured the same failure as bad: pooling them makes
        # the reference for the sufficiency checks several waves strong instead of one.
        irrelevant = [knockouts[k] for k in self.differing if classes[k] is KnobClass.IRRELEVANT]
        self.reference = _pool(self.bad, [self.bad_trial, *irrelevant])
        found = await self._sufficient(needed, amplifiers)
        if found is not None:
            subset, trial, notes = found
            return self._report(subset, trial, classes, knockouts, "knock-out", notes)
        note = (
            "Applying the needed and amplifying knobs to good did not reproduce the failure "
            "(an OR-type or non-monotone interaction); fell back to ddmin."
        )
        return await self.by_ddmin((note,), knockouts=knockouts, knockout_classes=classes)

    async def _knock_out(self, knob: str) -> tuple[Trial, KnobClass]:
        """Revert one knob from bad and class it; an unsettled comparison gets another wave
        on whichever side has fewer sessions, the knock-out or bad (as Pinpoint does)."""
        # Bonferroni over the knock-outs, so red herrings stay irrelevant with 1 - alpha overall.
        alpha_each = self.alpha / len(self.differing)
        config = {**self.bad, knob: self.good[knob]}

        def judge(ev: Evidence) -> KnobClass | None:
            reference = self.bad_trial.evidence
            return knockout_class(ev, reference, self.settings, alpha=alpha_each)

        def settled(ev: Evidence) -> bool:
            return judge(ev) is not None or (
                ev.sessions_run > self.bad_trial.sessions_run
                and not self.runner.at_cap(self.bad_trial.evidence)
            )

        while True:
            trial = await self.runner.measure(f"revert {knob}", config, settled)
            found = judge(trial.evidence)
            if found is not None:
                return trial, found
            if self.runner.at_cap(trial.evidence) and self.runner.at_cap(self.bad_trial.evidence):
                return trial, KnobClass.UNKNOWN
            if trial.sessions_run > self.bad_trial.sessions_run:
                more = self.bad_trial.sessions_run + 1
                self.bad_trial = await self.runner.measure(
                    "bad", self.bad, lambda ev, n=more: ev.sessions_run >= n
                )

    async def _sufficient(
        self, needed: list[str], amplifiers: list[str]
    ) -> tuple[list[str], Trial, tuple[str, ...]] | None:
        """good + needed, then good + needed + amplifiers: the first that reproduces bad."""
        if needed:
            # With amplifiers in hand, "needed alone reproduces" must be shown, not just
            # failed to be refuted: an unsettled comparison runs another wave, and one
            # still unsettled at the cap counts as not reproducing.
            strict = bool(amplifiers)

            def settled(ev: Evidence) -> bool:
                return self._reproduces(ev, strict) is not None

            trial = await self._from_good(needed, settled)
            verdict = self._reproduces(trial.evidence, strict)
            if verdict is True:
                return needed, trial, ()
            if not amplifiers and trial.result.decision is Decision.CORRUPTING:
                return needed, trial, (self._lower_note(trial),)
        if amplifiers:
            subset = needed + amplifiers
            trial = await self._from_good(subset)
            if trial.result.decision is Decision.CORRUPTING:
                lower = self._reproduces(trial.evidence) is False
                return subset, trial, (self._lower_note(trial),) if lower else ()
        return None

    def _lower_note(self, trial: Trial) -> str:
        return (
            f"{trial.label} corrupts at {trial.rate}, significantly below bad's "
            f"{self.reference.corrupted}/{self.reference.sessions}: knobs classed irrelevant "
            "may amplify it further."
        )

    async def by_ddmin(
        self,
        notes: tuple[str, ...],
        knockouts: dict[str, Trial] | None = None,
        knockout_classes: dict[str, KnobClass] | None = None,
    ) -> FlagReport:
        # ddmin asks many questions; Bonferroni over the knobs keeps false "lower" rare.
        alpha_ddmin = self.alpha / len(self.differing)

        def settles(ev: Evidence) -> bool:
            return self._reproduces(ev, alpha=alpha_ddmin) is not None

        async def fails(subset: tuple[str, ...]) -> bool | None:
            trial = await self._from_good(subset, settles)
            return self._reproduces(trial.evidence, alpha=alpha_ddmin)

        culprit = list(await ddmin(self.differing, fails))
        while True:
            culprit_trial, members = await self._member_classes(culprit)
            # Re-test the answer (bisect.md §5.4): a member whose removal changed nothing on a
            # closer look (more sessions) is dropped, and ddmin goes on from what is left.
            spare = [k for k in culprit if members[k] is KnobClass.IRRELEVANT]
            if not spare or len(culprit) == 1:
                break
            culprit = list(await ddmin([k for k in culprit if k != spare[0]], fails))
        classes = {k: KnobClass.IRRELEVANT for k in self.differing} | members
        if knockout_classes:
            notes = (*notes, "Classes below come from ddmin's final round, not the knock-outs.")
        return self._report(culprit, culprit_trial, classes, knockouts or {}, "ddmin", notes)

    async def _member_classes(self, culprit: list[str]) -> tuple[Trial, dict[str, KnobClass]]:
        """Drop each member from good + culprit in turn and judge it against good + culprit."""
        culprit_trial = await self._from_good(culprit)
        reference = culprit_trial.evidence
        alpha_each = self.alpha / len(culprit)

        def judge(ev: Evidence) -> KnobClass | None:
            return knockout_class(ev, reference, self.settings, alpha=alpha_each)

        members = {}
        for knob in culprit:
            rest = [k for k in culprit if k != knob]
            trial = await self._from_good(rest, lambda ev: judge(ev) is not None)
            members[knob] = judge(trial.evidence) or KnobClass.UNKNOWN
        return culprit_trial, members

    async def _from_good(self, subset: Sequence[str], settled: Question | None = None) -> Trial:
        config = {**self.good, **{k: self.bad[k] for k in subset}}
        label = "good + " + (" + ".join(f"{k}={self.bad[k]}" for k in subset) or "nothing")
        question = settled or (lambda ev: self._reproduces(ev) is not None)
        return await self.runner.measure(label, config, question)

    def _reproduces(
        self, evidence: Evidence, strict: bool = False, alpha: float | None = None
    ) -> bool | None:
        return reproduces(
            evidence, self.reference, self.settings, alpha=alpha or self.alpha, strict=strict
        )

    def _report(
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
            if classes[knob] is KnobClass.AMPLIFIER:
                reverted = knockouts.get(knob)
                if reverted is not None:
                    p = lowered_p(reverted.evidence, self.bad_trial.evidence)
                    extra.append(
                        f"{knob}={self.bad[knob]} amplifies: bad {self.bad_trial.rate}, "
                        f"with {knob}={self.good[knob]} {reverted.rate} (Fisher p={p:.2g})."
                    )
        return FlagReport(
            bad=self.bad_trial,
            good=self.good_trial,
            differing=self.differing,
            culprit={k: self.bad[k] for k in self.differing if k in culprit},
            culprit_trial=culprit_trial,
            classes=classes,
            knockouts=knockouts,
            method=method,
            trials=tuple(self.runner.trials.values()),
            notes=tuple(extra),
        )


def _pool(config: Mapping[str, str], trials: Sequence[Trial]) -> Evidence:
    """One evidence holding every wave of the given trials (they measure one failure)."""
    return Evidence(config, tuple(w for t in trials for w in t.evidence.waves))


def _require(trial: Trial, wanted: Decision, side: str, runner: TrialRunner) -> None:
    """Refuse, with the arithmetic, when an endpoint does not decide the way it must."""
    got = trial.result.decision
    if got is wanted:
        return
    where = f"The {side} configuration ({describe(trial.config)})"
    measured = f"{trial.rate} of sessions corrupted"
    if got is Decision.UNKNOWN:
        need = expected_sessions(trial.rate.value, runner.settings)
        raise UsageError(
            f"{where} stayed UNKNOWN at the cap of {runner.settings.max_sessions} sessions "
            f"({measured}): that rate lies between p0={runner.settings.p0} and "
            f"p1={runner.settings.p1}, where the SPRT needs about {need:.0f} sessions on "
            "average; raise the load (--context-max, --sessions) or --sessions-cap."
        )
    if side == "bad":
        raise UsageError(
            f"{where} did not reproduce: {measured}, decided CLEAN. Nothing to bisect; "
            "raise the load (--context-max, --sessions per wave) until `repro run` shows "
            "corruption, then bisect."
        )
    raise UsageError(
        f"{where} is not clean: {measured}, decided CORRUPTING. A flag search needs a clean "
        "endpoint; pick a good configuration that `repro run` shows clean, or raise --p0 "
        "to its background rate."
    )
