"""Flag search: the whole conjunction of knobs that turns a clean configuration corrupting.

1. Endpoints: bad must decide CORRUPTING and good CLEAN, or the search refuses.
2. Knock-out (≤ 16 differing knobs): revert each knob from bad; class it (classify.py),
   adding sessions where the evidence is unsettled, up to the cap.
3. Sufficiency: good + needed knobs must reproduce bad's failure; if not, add the amplifiers.
4. ddmin over the differing knobs when more than 16 differ, or when step 3 fails (an OR-type
   or non-monotone failure, which knock-out cannot see).
Background and costs: shared/research/bisect.md §0, §1, §5.4, §7.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from repro.bisect.classify import (
    KnobClass,
    classify_knockouts,
    is_cured,
    lowered_p,
    reproduces,
)
from repro.bisect.ddmin import ddmin
from repro.bisect.evidence import Evidence
from repro.bisect.parallel import Request, measure_together
from repro.bisect.sprt import Decision, expected_sessions
from repro.bisect.trial import Question, SpentOnTrials, Trial, TrialRunner
from repro.errors import UsageError
from repro.knobs import describe

KNOCKOUT_MAX_KNOBS = 16


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


async def search_flags(
    runner: TrialRunner, bad: Mapping[str, str], good: Mapping[str, str]
) -> FlagReport:
    """Run the whole search; raises UsageError when the endpoints do not bracket a failure."""
    bad_config, good_config = runner.oracle.resolve(bad), runner.oracle.resolve(good)
    differing = differing_knobs(bad_config, good_config)

    def brackets(side: str, wanted: Decision) -> Callable[[Trial], None]:
        return lambda trial: _require(trial, wanted, side, runner)

    endpoints = [
        Request("bad", bad_config, check=brackets("bad", Decision.CORRUPTING)),
        Request("good", good_config, check=brackets("good", Decision.CLEAN)),
    ]
    bad_trial, good_trial = await measure_together(runner, endpoints)
    search = _Search(runner, bad_config, good_config, bad_trial, good_trial, differing)
    if len(differing) > KNOCKOUT_MAX_KNOBS:
        note = f"{len(differing)} knobs differ (more than {KNOCKOUT_MAX_KNOBS}): ddmin."
        return await search.by_ddmin((note,))
    return await search.by_knockout()


def differing_knobs(bad: Mapping[str, str], good: Mapping[str, str]) -> tuple[str, ...]:
    """The knobs whose values differ; none is a UsageError (there is nothing to search)."""
    differing = tuple(k for k in bad if bad[k] != good[k])
    if not differing:
        raise UsageError(
            f"--bad and --good resolve to the same configuration ({describe(bad)}); "
            "give them at least one knob with different values."
        )
    return differing


@dataclass(frozen=True, slots=True)
class _Removals:
    """Knock-out trials judged against one reference trial, and what they concluded."""

    reference: Trial
    pooled: Evidence
    trials: dict[str, Trial]
    classes: dict[str, KnobClass]


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
        self.knockouts: dict[str, Trial] = {}

    async def by_knockout(self) -> FlagReport:
        reverts = {k: (f"revert {k}", {**self.bad, k: self.good[k]}) for k in self.differing}
        judged = await self._judge_removals(self.bad_trial, reverts)
        self.bad_trial = judged.reference
        self.reference = judged.pooled
        classes, knockouts = judged.classes, judged.trials
        self.knockouts = knockouts
        needed = [k for k in self.differing if classes[k] is KnobClass.NEEDED]
        amplifiers = [k for k in self.differing if classes[k] is KnobClass.AMPLIFIER]
        found = await self._sufficient(needed, amplifiers, classes)
        if found is not None:
            subset, trial, notes = found
            return self._report(subset, trial, classes, knockouts, "knock-out", notes)
        note = (
            "Applying the needed and amplifying knobs to good did not reproduce the failure "
            "(an OR-type or non-monotone interaction); fell back to ddmin."
        )
        return await self.by_ddmin((note,), knockouts=knockouts)

    async def _judge_removals(
        self, reference: Trial, removals: Mapping[str, tuple[str, dict[str, str]]]
    ) -> _Removals:
        """Measure each removal, then add sessions where a class is unsettled, up to the cap.

        Unsettled evidence gets one more wave at a time on its smaller side, the removal or
        the reference (as Pinpoint does, bisect.md §2.3), least-measured removal first.
        """
        # Bonferroni over the knobs. Repeated looks (one per added wave) inflate this a little;
        # a false amplifier is caught later, when good + the culprit without it still
        # reproduces (see _sufficient), so power to find the real one comes first.
        alpha = self.alpha / len(removals)

        def first_pass(ev: Evidence) -> bool:  # until corruption shows, or the revert is cured
            return ev.corrupted > 0 or is_cured(ev, self.settings)

        asked = [Request(label, config, first_pass) for label, config in removals.values()]
        trials = dict(zip(removals, await measure_together(self.runner, asked), strict=True))
        while True:
            evidence = {k: t.evidence for k, t in trials.items()}
            found, pooled = classify_knockouts(
                reference.evidence, evidence, self.settings, alpha=alpha
            )
            unsettled = sorted(
                (k for k, c in found.items() if c is None), key=lambda k: trials[k].sessions_run
            )
            growable = [k for k in unsettled if not self.runner.at_cap(trials[k].evidence)]
            # A bigger reference only helps a comparison; an uncured 0/n needs its own sessions.
            compared = any(trials[k].evidence.corrupted for k in unsettled)
            reference_growable = compared and not self.runner.at_cap(reference.evidence)
            if not unsettled or not (growable or reference_growable):
                classes = {k: c or KnobClass.UNKNOWN for k, c in found.items()}
                return _Removals(reference, pooled, trials, classes)
            smaller = growable and trials[growable[0]].sessions_run <= pooled.sessions_run
            if smaller or not reference_growable:
                knob = growable[0]
                trials[knob] = await self._one_more_wave(trials[knob], removals[knob][1])
            else:
                reference = await self._one_more_wave(reference, dict(reference.config))

    async def _one_more_wave(self, trial: Trial, config: dict[str, str]) -> Trial:
        wanted = trial.sessions_run + 1
        return await self.runner.measure(trial.label, config, lambda ev: ev.sessions_run >= wanted)

    async def _sufficient(
        self, needed: list[str], amplifiers: list[str], classes: dict[str, KnobClass]
    ) -> tuple[list[str], Trial, tuple[str, ...]] | None:
        """good + needed, then good + needed + amplifiers: the first that reproduces bad.

        "good + needed reproduces" must be shown (strict), not just not refuted: it is the
        claim that nothing else matters. With two or more amplifiers, each is then dropped in
        turn; one without which the rest still reproduces is re-classed irrelevant (its
        knock-out's drop was a false alarm). With none, an amplifier the knock-outs missed is
        looked for among the knobs classed irrelevant, lowest knock-out rate first.
        """
        first: Trial | None = None
        if needed:
            first = await self._confirm(needed, strict=True)
            if self._reproduces(first.evidence, strict=True) is True:
                return needed, first, ()
        if amplifiers:
            return await self._with_amplifiers(needed, amplifiers, classes)
        if first is None:
            return None  # no knob is needed on its own: OR-type, for ddmin
        if self._reproduces(first.evidence) is not False:
            # Corrupting at a rate not shown lower, just not shown the same within the cap.
            return needed, first, ()
        suspects = [k for k in self.differing if classes[k] is KnobClass.IRRELEVANT]
        suspects += [k for k in self.differing if classes[k] is KnobClass.UNKNOWN]
        for knob in sorted(suspects, key=lambda k: self.knockouts[k].rate.value):
            trial = await self._confirm([*needed, knob], strict=False)
            lifted = lowered_p(first.evidence, trial.evidence) < self.alpha
            if self._reproduces(trial.evidence) is True and lifted:
                classes[knob] = KnobClass.AMPLIFIER
                note = (
                    f"{knob}'s knock-out did not look lower ({self.knockouts[knob].rate}), but "
                    f"good + the needed knobs reproduces only with it: {trial.rate} with, "
                    f"{first.rate} without; classed amplifier."
                )
                return [*needed, knob], trial, (note,)
        if first.result.decision is Decision.CORRUPTING:
            return needed, first, (self._lower_note(first),)
        return None

    async def _with_amplifiers(
        self, needed: list[str], amplifiers: list[str], classes: dict[str, KnobClass]
    ) -> tuple[list[str], Trial, tuple[str, ...]] | None:
        subset = needed + amplifiers
        trial = await self._from_good(subset)
        if trial.result.decision is not Decision.CORRUPTING:
            return None
        notes: list[str] = []
        for knob in amplifiers if len(amplifiers) > 1 else []:
            rest = [k for k in subset if k != knob]
            without = await self._confirm(rest, strict=True)
            if self._reproduces(without.evidence, strict=True) is True:
                subset, trial = rest, without
                classes[knob] = KnobClass.IRRELEVANT
                notes.append(
                    f"{knob}'s knock-out looked lower, but {without.label} reproduces without "
                    f"it ({without.rate}): classed irrelevant."
                )
        if self._reproduces(trial.evidence) is False:
            notes.append(self._lower_note(trial))
        return subset, trial, tuple(notes)

    async def _confirm(self, subset: list[str], *, strict: bool) -> Trial:
        """good + subset, measured until it is settled whether it reproduces bad."""
        return await self._from_good(subset, lambda ev: self._reproduces(ev, strict) is not None)

    def _lower_note(self, trial: Trial) -> str:
        return (
            f"{trial.label} corrupts at {trial.rate}, significantly below bad's "
            f"{self.reference.corrupted}/{self.reference.sessions}: knobs classed irrelevant "
            "may amplify it further."
        )

    async def by_ddmin(
        self, notes: tuple[str, ...], knockouts: dict[str, Trial] | None = None
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
        if knockouts:
            notes = (*notes, "Classes below come from ddmin's final round, not the knock-outs.")
        return self._report(culprit, culprit_trial, classes, knockouts or {}, "ddmin", notes)

    async def _member_classes(self, culprit: list[str]) -> tuple[Trial, dict[str, KnobClass]]:
        """Drop each member from good + culprit in turn and judge it against good + culprit."""
        culprit_trial = await self._from_good(culprit)
        removals = {}
        for knob in culprit:
            rest = [k for k in culprit if k != knob]
            removals[knob] = (self._good_label(rest), self._good_plus(rest))
        judged = await self._judge_removals(culprit_trial, removals)
        return judged.reference, judged.classes

    def _good_plus(self, subset: Sequence[str]) -> dict[str, str]:
        return {**self.good, **{k: self.bad[k] for k in subset}}

    def _good_label(self, subset: Sequence[str]) -> str:
        return "good + " + (" + ".join(f"{k}={self.bad[k]}" for k in subset) or "nothing")

    async def _from_good(self, subset: Sequence[str], settled: Question | None = None) -> Trial:
        question = settled or (lambda ev: self._reproduces(ev) is not None)
        return await self.runner.measure(
            self._good_label(subset), self._good_plus(subset), question
        )

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
            reverted = knockouts.get(knob)
            if classes[knob] is KnobClass.AMPLIFIER and reverted is not None:
                p = lowered_p(reverted.evidence, self.reference)
                extra.append(
                    f"{knob}={self.bad[knob]} amplifies: {self.reference.corrupted}/"
                    f"{self.reference.sessions} = {self.reference.rate().value:.1%} with it "
                    f"(bad and the knock-outs found irrelevant, pooled), {reverted.rate} "
                    f"with {knob}={self.good[knob]} (Fisher p={p:.2g})."
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
        )


def _require(trial: Trial, wanted: Decision, side: str, runner: TrialRunner) -> None:
    """Refuse, with the arithmetic, when an endpoint does not decide the way it must."""
    got = trial.result.decision
    if got is wanted:
        return
    where = f"The {side} configuration ({describe(trial.config)})"
    measured = f"{trial.rate} of sessions corrupted"
    if got is Decision.UNKNOWN:
        settings = runner.settings
        need = f"the SPRT needs about {expected_sessions(trial.rate.value, settings):.0f} sessions"
        if settings.p0 < trial.rate.value < settings.p1:
            why = (
                f"that rate lies between p0={settings.p0} and p1={settings.p1}, where {need} on "
                "average; raise the load (--context-max, --sessions) or --sessions-cap."
            )
        else:  # a clear rate, but the cap came before the evidence could settle it
            why = f"at that rate {need} on average to decide; raise --sessions-cap."
        raise UsageError(
            f"{where} stayed UNKNOWN at the cap of {settings.max_sessions} sessions "
            f"({measured}): {why}"
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
