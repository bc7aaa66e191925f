"""The search along a history (commits or releases) for the point where its state changes.

1. Endpoints first: the good one must decide CLEAN and the bad one CORRUPTING (with the
   divergence reference: good's answers again the same as good's, bad's different); else the
   search stops and prints both measured rates.
2. Then, until the answer is sure: the posterior over the culprit's position (posterior.py)
   from every point's counts; the next point (or K at once) chosen by expected entropy under
   the measured error rates; each point built (environments.py), then measured by the same
   trial as flags (an SPRT on its corruption rate, the trial cache) or, with the divergence
   reference, one wave compared with good's answers.
3. The answer is the stretch between two adjacent measured points, the last in the old
   endpoint's state and the first in the new one's, with nothing testable left between them,
   once its posterior probability reaches the confidence asked for. Where that probability
   stays short with the stretch closed, its two ends get another wave each, the smaller first.

Untestable points (the build fails or exits 125, the engine does not start, no turn is
judged) are skipped and reported, never blamed: the culprit may then be any of the skipped
points between the answer's two ends, and the answer names them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from repro.bisect.dispersion import dispersion
from repro.bisect.history.point_oracle import AGAIN
from repro.bisect.history.posterior import (
    MAX_ERROR,
    MIN_ERROR,
    Counts,
    CulpritPosterior,
    Interval,
    next_points,
)
from repro.bisect.sprt import Decision, clean_verdict_probability
from repro.bisect.trial import Question, SpentOnTrials, Trial, TrialRunner
from repro.errors import ReproError, UsageError

DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Point:
    index: int
    id: str  # a full commit id, or a version
    label: str  # what the tables say: the short id and subject, or the version


@dataclass(frozen=True, slots=True)
class Skip:
    point: Point
    reason: str  # one sentence: why it cannot be tested


@dataclass(frozen=True, slots=True)
class Settings:
    confidence: float = DEFAULT_CONFIDENCE
    reference: bool = False  # --oracle divergence --reference good
    max_points: int | None = None  # points measured, the endpoints included
    terms: tuple[str, str] | None = None  # (old term, new term); default from the direction


@dataclass(frozen=True, slots=True)
class HistoryReport(SpentOnTrials):
    points: tuple[Point, ...]
    good_index: int
    terms: tuple[str, str]  # what the older and the newer endpoint's states are called
    measured: dict[int, tuple[Trial, ...]]  # point -> its trials (the reference: two at good)
    verdicts: dict[int, str]  # point -> the term its own trial says, or "unsure"
    skipped: tuple[Skip, ...]
    answer: Interval
    decided: bool
    confidence: float
    reference: bool
    phi: float
    trials: tuple[Trial, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def direction(self) -> str:
        """ "broke": the older endpoint is the good one; "fixed": the newer one is."""
        return "broke" if self.good_index == 0 else "fixed"

    @property
    def skipped_between(self) -> tuple[Skip, ...]:
        low, high = self.answer.low, self.answer.high
        return tuple(s for s in self.skipped if low < s.point.index < high)


class SkipRecords:
    """Points found untestable when measured (the engine would not start, no turn judged),
    one file each, so a resumed search does not try them again."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, digest: str) -> str | None:
        try:
            return str(json.loads((self.folder / f"{digest}.json").read_text())["reason"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, digest: str, point: Point, reason: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{digest}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"point": point.id, "reason": reason}), encoding="utf-8")
        os.replace(tmp, path)


class _Failed(Exception):
    """A trial of several asked together failed: which one, and its error."""

    def __init__(self, index: int, error: ReproError) -> None:
        super().__init__(str(error))
        self.index, self.error = index, error


Prepare = Callable[[Point], Awaitable[str | None]]  # builds; the reason it cannot, or None
Say = Callable[[str], None]


class HistorySearch:
    def __init__(
        self,
        runner: TrialRunner,
        points: Sequence[Point],
        good_index: int,
        config: Callable[[Point], dict[str, str]],
        prepare: Prepare,
        skips: SkipRecords,
        settings: Settings,
        say: Say = lambda _: None,
        on_reference: Callable[[Trial], None] = lambda _: None,
    ) -> None:
        if len(points) < 2:
            raise UsageError("A history needs two points at least; the endpoints are the same.")
        self.runner = runner
        self.points = list(points)
        self.good_index = good_index
        self.bad_index = len(points) - 1 if good_index == 0 else 0
        self.config = config
        self.prepare = prepare
        self.skips = skips
        self.settings = settings
        self.say = say
        self.on_reference = on_reference
        self.measured: dict[int, list[Trial]] = {}
        self.skipped: dict[int, Skip] = {}
        self.notes: list[str] = []

    # -- the whole search ---------------------------------------------------------------

    async def run(self) -> HistoryReport:
        await self._endpoints()
        while True:
            posterior = self.posterior()
            best = posterior.best_interval(sorted(self.measured))
            inside = [i for i in range(best.low + 1, best.high) if self._open(i)]
            if not inside and best.probability >= self.settings.confidence:
                return self.report(best, decided=True)
            limit = self.settings.max_points
            if limit is not None and len(self.measured) >= limit:
                self.notes.append(f"stopped at --max-points {limit}.")
                return self.report(best, decided=False)
            candidates = [i for i in range(len(self.points)) if self._open(i)]
            e_old, e_new = self.error_rates()
            if inside:
                chosen = next_points(posterior, candidates, e_old, e_new, self.runner.parallel)
                await self._measure_points(chosen)
                continue
            ends = [i for i in (best.low, best.high) if self._extendable(i)]
            if ends:
                smaller = min(ends, key=lambda i: (self._sessions(i), i))
                await self._extend(smaller)
                continue
            if candidates:  # the doubt lies elsewhere: a point out there contradicts
                chosen = next_points(posterior, candidates, e_old, e_new, self.runner.parallel)
                await self._measure_points(chosen)
                continue
            return self.report(best, decided=False)

    # -- endpoints ----------------------------------------------------------------------

    async def _endpoints(self) -> None:
        good, bad = self.points[self.good_index], self.points[self.bad_index]
        for point in (good, bad):
            reason = await self.prepare(point)
            if reason is not None:
                side = "good" if point is good else "bad"
                raise UsageError(f"The {side} endpoint {point.label} cannot be tested: {reason}.")
        if self.settings.reference:
            try:
                reference = await self._trial(good, {})
            except ReproError as exc:
                raise UsageError(
                    f"The good endpoint {good.label} cannot be tested: {exc}"
                ) from None
            self.on_reference(reference)
            asked = [(good, {AGAIN: "1"}), (bad, {})]
        else:
            asked = [(good, {}), (bad, {})]
        try:
            trials = await self._together(asked)
        except _Failed as failed:
            side = "good" if failed.index == 0 else "bad"
            point = asked[failed.index][0]
            raise UsageError(
                f"The {side} endpoint {point.label} cannot be tested: {failed.error}"
            ) from None
        for (point, _), trial in zip(asked, trials, strict=True):
            self.measured.setdefault(point.index, []).append(trial)
        again, bad_trial = trials
        good_ok, bad_ok = self._state(again) == "good", self._state(bad_trial) == "bad"
        if not (good_ok and bad_ok):
            raise UsageError(self._refusal(again, bad_trial))

    def _refusal(self, good: Trial, bad: Trial) -> str:
        if self.settings.reference:
            return (
                f"The endpoints do not bracket a change of answers: good ({good.label}) run "
                f"again differs from its first run in {good.rate} of sessions "
                f"({'as it must not' if good.evidence.corrupted else 'as it must'}), and bad "
                f"({bad.label}) differs from good in {bad.rate} "
                f"({'as it must' if bad.evidence.corrupted else 'and must differ'}). An engine "
                "that answers the same request differently run to run cannot be bisected by "
                "this oracle: use the SPRT oracle (drop --reference good)."
            )
        return (
            f"The endpoints do not bracket a failure: good ({good.label}) "
            f"{good.rate} of sessions corrupted, decided {good.outcome}; bad ({bad.label}) "
            f"{bad.rate}, decided {bad.outcome}. good must decide CLEAN and bad CORRUPTING: "
            "raise the load (--context-max, --sessions) until bad reproduces, or set --p0/--p1 "
            "around the two rates."
        )

    # -- measuring ----------------------------------------------------------------------

    def _question(self) -> Question | None:
        if self.settings.reference:
            wave = self.runner.wave_sessions
            return lambda ev: ev.sessions_run >= wave  # deterministic: one run per point
        return None  # the SPRT decided (or the cap)

    async def _trial(self, point: Point, extra: Mapping[str, str]) -> Trial:
        label = point.label + (" (again)" if extra.get(AGAIN) else "")
        config = self.config(point) | dict(extra)
        return await self.runner.measure(label, config, self._question())

    async def _together(self, asked: Sequence[tuple[Point, Mapping[str, str]]]) -> list[Trial]:
        """Trials at once (up to K), in the order asked; the first error is raised (_Failed)."""
        results: list[Trial | None] = [None] * len(asked)
        failures: dict[int, ReproError] = {}

        async def one(index: int, point: Point, extra: Mapping[str, str]) -> None:
            try:
                results[index] = await self._trial(point, extra)
            except ReproError as exc:
                failures[index] = exc

        if self.runner.parallel == 1:
            for index, (point, extra) in enumerate(asked):
                await one(index, point, extra)
        else:
            async with anyio.create_task_group() as group:
                for index, (point, extra) in enumerate(asked):
                    group.start_soon(one, index, point, extra)
        if failures:
            first = min(failures)
            raise _Failed(first, failures[first])
        return results  # type: ignore[return-value]

    async def _measure_points(self, indices: Sequence[int]) -> None:
        async def one(index: int) -> None:
            point = self.points[index]
            digest = self.runner.plan(point.label, self.config(point)).digest
            known = self.skips.get(digest)
            if known is not None:
                self._skip(point, known)
                return
            reason = await self.prepare(point)
            if reason is not None:
                self._skip(point, reason)
                return
            try:
                trial = await self._trial(point, {})
            except ReproError as exc:  # the engine did not start, or no turn was judged
                self.skips.put(digest, point, str(exc))
                self._skip(point, str(exc))
                return
            self.measured.setdefault(index, []).append(trial)

        if len(indices) == 1 or self.runner.parallel == 1:
            for index in indices:
                await one(index)
            return
        async with anyio.create_task_group() as group:
            for index in indices:
                group.start_soon(one, index)

    async def _extend(self, index: int) -> None:
        """One more wave for a measured point (its main trial)."""
        trial = self.measured[index][-1]
        wanted = trial.sessions_run + 1
        config = dict(trial.config)
        grown = await self.runner.measure(trial.label, config, lambda ev: ev.sessions_run >= wanted)
        self.measured[index][-1] = grown

    def _skip(self, point: Point, reason: str) -> None:
        self.skipped[point.index] = Skip(point, reason)
        self.say(f"skipped {point.label}: {reason}")

    # -- what the evidence says ---------------------------------------------------------

    def _open(self, index: int) -> bool:
        return index not in self.measured and index not in self.skipped

    def _extendable(self, index: int) -> bool:
        if self.settings.reference or index not in self.measured:
            return False
        return not self.runner.at_cap(self.measured[index][-1].evidence)

    def _sessions(self, index: int) -> int:
        return sum(t.sessions_run for t in self.measured[index])

    def counts(self) -> dict[int, Counts]:
        out = {}
        for index, trials in self.measured.items():
            out[index] = Counts(
                sum(t.evidence.corrupted for t in trials), sum(t.evidence.sessions for t in trials)
            )
        return out

    def phi(self) -> float:
        if self.settings.reference:
            return 1.0
        return dispersion(t.evidence for trials in self.measured.values() for t in trials)

    def posterior(self) -> CulpritPosterior:
        return CulpritPosterior(len(self.points), self.counts(), self.phi())

    def error_rates(self) -> tuple[float, float]:
        """(e_old, e_new): the chance a trial's verdict is wrong at each state's measured rate
        (the SPRT's operating characteristic there; a floor for the deterministic oracle)."""
        if self.settings.reference:
            return MIN_ERROR, MIN_ERROR
        counts = self.counts()
        good, bad = counts[self.good_index], counts[self.bad_index]
        good_rate = (good.corrupted + 0.5) / (good.sessions + 1)
        bad_rate = (bad.corrupted + 0.5) / (bad.sessions + 1)
        sprt = self.runner.settings
        wrong_good = 1 - clean_verdict_probability(good_rate, sprt)
        wrong_bad = clean_verdict_probability(bad_rate, sprt)
        clamp = lambda e: min(MAX_ERROR, max(MIN_ERROR, e))  # noqa: E731
        pair = (clamp(wrong_good), clamp(wrong_bad))
        return pair if self.good_index == 0 else (pair[1], pair[0])

    def _state(self, trial: Trial) -> str:
        """What a trial's own evidence says: good, bad, or unsure."""
        if self.settings.reference:
            if not trial.evidence.sessions:
                return "unsure"
            return "bad" if trial.evidence.corrupted else "good"
        decision = trial.result.decision
        if decision is Decision.CLEAN:
            return "good"
        return "bad" if decision is Decision.CORRUPTING else "unsure"

    def terms(self) -> tuple[str, str]:
        if self.settings.terms is not None:
            return self.settings.terms
        return ("good", "bad") if self.good_index == 0 else ("bad", "good")

    def report(self, answer: Interval, decided: bool) -> HistoryReport:
        old_term, new_term = self.terms()
        good_is_old = self.good_index == 0
        named = {
            "good": old_term if good_is_old else new_term,
            "bad": new_term if good_is_old else old_term,
            "unsure": "unsure",
        }
        verdicts = {i: named[self._state(ts[-1])] for i, ts in sorted(self.measured.items())}
        if not decided:
            self.notes.append(
                f"not decided: the most likely stretch holds the change with probability "
                f"{answer.probability:.3f}, short of {self.settings.confidence}."
            )
        return HistoryReport(
            points=tuple(self.points),
            good_index=self.good_index,
            terms=(old_term, new_term),
            measured={i: tuple(ts) for i, ts in sorted(self.measured.items())},
            verdicts=verdicts,
            skipped=tuple(self.skipped[i] for i in sorted(self.skipped)),
            answer=answer,
            decided=decided,
            confidence=self.settings.confidence,
            reference=self.settings.reference,
            phi=self.phi(),
            trials=tuple(self.runner.trials.values()),
            notes=tuple(self.notes),
        )
