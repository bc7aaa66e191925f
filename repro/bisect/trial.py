"""Trials: one configuration measured in waves of sessions until a question is settled.

A campaign asks each trial a question (the SPRT decided; a knob's class is settled) and the
runner adds waves until it is answered or the session cap is reached. Evidence comes from
the cache first and every wave is written back at once, so nothing decided is run twice.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

from repro.bisect.ahead import WaveJob, WavePlan, WavesAhead, run_afresh
from repro.bisect.cache import TrialCache, key_digest, trial_key
from repro.bisect.evidence import Evidence, Wave
from repro.bisect.oracle import Oracle
from repro.bisect.parallel import OraclePool
from repro.bisect.progress import CampaignState, Progress
from repro.bisect.sprt import SprtResult, SprtSettings
from repro.results import Rate
from repro.spec import RunSpec

# A trial the search stopped because its question was answered before the SPRT decided.
STOPPED_SETTLED = "stopped: settled"


@dataclass(frozen=True, slots=True)
class Trial:
    """One configuration as this campaign used it."""

    label: str
    config: Mapping[str, str]
    evidence: Evidence
    result: SprtResult
    cached_sessions: int  # sessions that were already in the cache when this run began
    digest: str
    settled: bool = False  # the campaign's question of it was answered when it stopped

    @property
    def outcome(self) -> str:
        """What a table says of it: the SPRT's decision; "stopped: settled" when the search
        stopped it because its question was answered before the SPRT decided; UNKNOWN when
        the cap came first (no bound crossed, as the docs define it)."""
        if self.result.decided:
            return self.result.decision.value
        return STOPPED_SETTLED if self.settled else self.result.decision.value

    @property
    def rate(self) -> Rate:
        return self.evidence.rate()

    @property
    def sessions_run(self) -> int:
        return self.evidence.sessions_run

    @property
    def new_sessions(self) -> int:
        return self.evidence.sessions_run - self.cached_sessions


Question = Callable[[Evidence], bool]


class SpentOnTrials:
    """What a campaign report's trials cost in all: sessions run (cached ones included) and
    engine time."""

    __slots__ = ()
    trials: tuple[Trial, ...]

    @property
    def sessions(self) -> int:
        return sum(t.sessions_run for t in self.trials)

    @property
    def wall_s(self) -> float:
        return sum(t.evidence.wall_s for t in self.trials)


class TrialRunner:
    """Measures configurations for one campaign; remembers every trial it touched, in order.

    Given an OraclePool of K oracles, up to K trials run at once (together.measure_together),
    each on its own deployment, and idle deployments run waves ahead of need (ahead.py)."""

    def __init__(
        self,
        oracle: Oracle | OraclePool,
        cache: TrialCache,
        base: RunSpec,
        settings: SprtSettings,
        trials_dir: Path,
        progress: Progress | None = None,
    ) -> None:
        self.pool = oracle if isinstance(oracle, OraclePool) else OraclePool([oracle])
        self.oracle = self.pool.oracles[0]  # for what any of them answers alike: resolve, identity
        self.cache = cache
        self.base = base
        self.wave_sessions = base.sessions
        # A smaller last wave would be a lighter load, so the cap is rounded up to whole waves.
        waves = math.ceil(settings.max_sessions / self.wave_sessions)
        self.settings = settings.model_copy(update={"max_sessions": waves * self.wave_sessions})
        self.trials_dir = trials_dir
        self.progress = progress
        self.trials: dict[str, Trial] = {}
        self.started_at_s = time.monotonic()
        self._locks: dict[str, anyio.Lock] = {}
        self._measuring: set[str] = set()  # trials asked for and not yet answered
        self._running: dict[str, tuple[Trial, WaveJob | None]] = {}  # of those, waves in flight
        # With --parallel: waves run ahead of need on idle deployments (set by `running_ahead`).
        self.ahead: WavesAhead | None = None

    @property
    def parallel(self) -> int:
        """How many trials may run at once (one deployment each)."""
        return self.pool.size

    @contextlib.asynccontextmanager
    async def running_ahead(self) -> AsyncIterator[None]:
        """While inside, idle deployments run waves ahead of need (ahead.py); K = 1 has none."""
        if self.parallel == 1:
            yield
            return
        failure: BaseException | None = None
        async with anyio.create_task_group() as group:
            self.ahead = WavesAhead(self.pool, group, self.settings.max_sessions, self._show)
            group.start_soon(self.ahead.run)
            try:
                yield
            except (Exception, KeyboardInterrupt) as exc:  # raised as is, not in a group
                failure = exc
            finally:
                self.ahead = None
                group.cancel_scope.cancel()
        if failure is not None:
            raise failure

    @property
    def sessions_spent(self) -> int:
        """Sessions run by this campaign run (cache hits excluded)."""
        return sum(t.new_sessions for t in self.trials.values())

    def at_cap(self, evidence: Evidence) -> bool:
        return evidence.sessions_run >= self.settings.max_sessions

    async def measure(
        self, label: str, requested: Mapping[str, str], settled: Question | None = None
    ) -> Trial:
        """Run waves on this configuration until `settled` (default: the SPRT decided) or the cap."""
        plan = self.plan(label, requested)
        digest = plan.digest
        # One measurement of a configuration at a time. Taken without waiting when free, so
        # trials asked for together are recorded in the order asked (the report's order).
        lock = self._locks.setdefault(digest, anyio.Lock())
        try:
            lock.acquire_nowait()
        except anyio.WouldBlock:
            await lock.acquire()
        self._measuring.add(digest)
        # Read after the lock: a measurement of the same configuration may just have ended.
        evidence = self.cache.load(plan.key) or plan.evidence
        try:
            known = self.trials.get(digest)
            cached = known.cached_sessions if known else evidence.sessions_run
            question = settled or (lambda ev: ev.sprt(self.settings).decided)
            config = plan.spec.knobs
            trial = self._record(label, config, evidence, cached, digest, known, question(evidence))
            async with _Deployment(self.pool, digest) as deployment:
                while not trial.settled and not self.at_cap(evidence):
                    plan = replace(plan, evidence=evidence)
                    wave = await self._next_wave(plan, trial, deployment)
                    evidence = evidence.with_wave(wave)
                    self.cache.save(plan.key, evidence)
                    trial = self._record(
                        label, config, evidence, cached, digest, known, question(evidence)
                    )
            return trial
        finally:
            if self.ahead is not None:
                self.ahead.finished(digest, evidence)
            self._measuring.discard(digest)
            lock.release()
            self._show()

    def plan(self, label: str, requested: Mapping[str, str]) -> WavePlan:
        """What measuring `requested` runs: the resolved spec, its cache key, its evidence."""
        config = self.oracle.resolve(requested)
        spec = self.base.model_copy(update={"knobs": config})
        key = trial_key(spec, config, self.oracle.identity())
        digest = key_digest(key)
        evidence = self.cache.load(key) or Evidence(config)
        return WavePlan(label, spec, key, digest, self.trials_dir / digest, evidence)

    def expect(self, labelled: Sequence[tuple[str, Mapping[str, str]]]) -> None:
        """The search will ask for these next: with --parallel, their first waves may start
        on deployments left idle meanwhile (ahead.py). Nothing changes with K = 1."""
        if self.ahead is not None:
            self.ahead.expect([self.plan(label, config) for label, config in labelled])

    async def _next_wave(self, plan: WavePlan, trial: Trial, deployment: _Deployment) -> Wave:
        """The trial's next wave: the one run ahead on another deployment, when there is one
        (waited for); else run here, on the trial's own."""
        first = plan.evidence.next_session_id
        if self.ahead is None:
            oracle = await deployment.oracle()
            with self._in_flight(trial):
                return await run_afresh(oracle, plan, first)
        self.ahead.measuring(plan)
        # One that failed or was cancelled there is run here; none is started ahead meanwhile.
        while (job := self.ahead.job(plan.digest, first)) is not None:
            with self._in_flight(trial, job):
                await job.done.wait()
            self.ahead.take(plan.digest, first, job)
            if job.wave is not None:
                return job.wave
        job = self.ahead.start(plan, first, await deployment.oracle())
        deployment.running = job
        try:
            with self._in_flight(trial, job):
                return await job.result()
        finally:
            if job.done.is_set():  # if this trial is being cancelled, `finished` stops it
                self.ahead.take(plan.digest, first, job)

    @contextlib.contextmanager
    def _in_flight(self, trial: Trial, job: WaveJob | None = None) -> Iterator[None]:
        """The progress view shows `trial` running while inside (and its `job` runs)."""
        self._running[trial.digest] = (trial, job)
        self._show(started=trial.label if job is None or not job.done.is_set() else None)
        try:
            yield
        finally:
            self._running.pop(trial.digest, None)

    def _record(
        self,
        label: str,
        config: Mapping[str, str],
        evidence: Evidence,
        cached: int,
        digest: str,
        known: Trial | None,
        settled: bool,
    ) -> Trial:
        # A configuration met again (ddmin revisits; good + set == bad) keeps its first label.
        name = known.label if known else label
        result = evidence.sprt(self.settings)
        trial = Trial(name, config, evidence, result, cached, digest, settled)
        self.trials[digest] = trial
        return trial

    def _show(self, started: str | None = None) -> None:
        """Tell the progress view; `started` names the trial whose wave just started."""
        if self.progress is None:
            return
        # A wave run ahead ends a moment before its trial wakes up to take it.
        running = [t for t, job in self._running.values() if job is None or not job.done.is_set()]
        self.progress.update(
            CampaignState(
                running=tuple((t.label, t.evidence.corrupted, t.sessions_run) for t in running),
                waiting=len(self._measuring) - len(running),
                wave_started=started,
                decisions=tuple(
                    (t.label, t.outcome, t.evidence.corrupted, t.evidence.sessions)
                    for d, t in self.trials.items()
                    if d not in self._measuring
                ),
                sessions_spent=self.sessions_spent,
                elapsed_s=time.monotonic() - self.started_at_s,
                parallel=self.parallel,
                busy=self.pool.busy,
                ahead=self.ahead.in_flight if self.ahead is not None else 0,
            )
        )


class _Deployment:
    """A trial's own deployment: borrowed from the pool when the trial first runs a wave
    itself (not when every wave it needs was run ahead), kept for all its waves. On leaving,
    a wave still running on it (the trial was cancelled) is stopped and waited for, so the
    deployment goes back idle."""

    def __init__(self, pool: OraclePool, key: str) -> None:
        self.pool, self.key = pool, key
        self.running: WaveJob | None = None
        self._stack = contextlib.AsyncExitStack()
        self._oracle: Oracle | None = None

    async def oracle(self) -> Oracle:
        if self._oracle is None:
            self._oracle = await self._stack.enter_async_context(self.pool.slot(self.key))
        return self._oracle

    async def __aenter__(self) -> _Deployment:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.running is not None and not self.running.done.is_set():
            self.running.scope.cancel()
            with anyio.CancelScope(shield=True):
                await self.running.done.wait()
        await self._stack.aclose()
