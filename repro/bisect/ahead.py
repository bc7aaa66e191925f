"""Waves ahead of need: with --parallel K, a deployment the search leaves idle measures a
wave the search is likely to ask for next, so the wall time is not set by one long trial.

Two kinds, the first before the second:
- the first wave of trials the search will ask for once the current step ends (the
  knock-outs, while the endpoints run), registered with `expect`;
- the next wave of a trial being measured now (a needed knob takes two waves, and on the
  load-induced engine a HiCache-off wave takes several times as long as the others).

A wave ahead is the very wave the trial would run next (the same session ids and folder), and
a trial takes its waves in order, each only while its question is still open. So the evidence,
the cache and every verdict are what the serial search gathers; only the wall time changes.
A wave ahead that its trial no longer needs is cancelled, its folder renamed aside
(`wave-NNN-unused-N`); one that finished is kept, in memory only, for a later ask of the
same trial. With K = 1 nothing runs ahead: there is never an idle deployment to use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from repro.bisect.evidence import Evidence, Wave
from repro.bisect.oracle import Oracle
from repro.bisect.parallel import OraclePool
from repro.spec import RunSpec


@dataclass(frozen=True, slots=True)
class WavePlan:
    """What it takes to run a trial's waves: its spec, its cache key digest, its folder, and
    the evidence it has so far (the next wave starts at its next session id)."""

    label: str
    spec: RunSpec
    key: dict[str, object]
    digest: str
    folder: Path
    evidence: Evidence

    def wave_dir(self, first_session_id: int) -> Path:
        ahead = (first_session_id - self.evidence.next_session_id) // self.spec.sessions
        return self.folder / f"wave-{len(self.evidence.waves) + 1 + ahead:03d}"


@dataclass(slots=True)
class WaveJob:
    """One wave in flight or done; `result` waits for it and raises what it raised."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    wave: Wave | None = None
    error: Exception | None = None
    ahead: bool = False  # on an idle deployment: a failure there is retried, not raised

    async def result(self) -> Wave:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        if self.wave is None:
            raise RuntimeError("a wave ahead was cancelled before its trial asked for it")
        return self.wave


def aside(wave_dir: Path, why: str) -> None:
    """Rename a wave folder that will not be used (`wave-003-unused-1`), so the next run of
    that wave starts afresh and its logs stay for whoever wonders."""
    if not wave_dir.exists():
        return
    n = 1
    while (renamed := wave_dir.with_name(f"{wave_dir.name}-{why}-{n}")).exists():
        n += 1
    wave_dir.rename(renamed)


async def run_afresh(oracle: Oracle, plan: WavePlan, first_session_id: int) -> Wave:
    """Run one wave of `plan` into its folder; a folder left there by a killed run is kept,
    renamed, never reused."""
    wave_dir = plan.wave_dir(first_session_id)
    aside(wave_dir, "interrupted")
    return await oracle.run_wave(plan.spec, wave_dir, first_session_id)


class WavesAhead:
    """The waves of each trial that are in flight or done and not yet taken, by (trial
    digest, first session id), and the task that starts new ones on idle deployments."""

    def __init__(
        self,
        pool: OraclePool,
        group: TaskGroup,
        max_sessions: int,
        show: Callable[[str | None], None] = lambda started: None,
    ) -> None:
        self.pool = pool
        self.group = group
        self.max_sessions = max_sessions
        self.show = show  # the progress view: a wave ahead started (its label) or ended
        self.jobs: dict[tuple[str, int], WaveJob] = {}
        self.open: dict[str, WavePlan] = {}  # trials being measured, in the order asked
        self.expected: dict[str, WavePlan] = {}  # trials the search will ask for next

    @property
    def in_flight(self) -> int:
        """Waves running ahead now."""
        return sum(job.ahead and not job.done.is_set() for job in self.jobs.values())

    def job(self, digest: str, first_session_id: int) -> WaveJob | None:
        return self.jobs.get((digest, first_session_id))

    def start(
        self,
        plan: WavePlan,
        first_session_id: int,
        oracle: Oracle,
        release: Callable[[], None] = lambda: None,
        *,
        ahead: bool = False,
    ) -> WaveJob:
        """Run one wave of `plan` on `oracle` in the background; `release` when it ends."""
        job = WaveJob(ahead=ahead)
        self.jobs[(plan.digest, first_session_id)] = job
        self.group.start_soon(self._run, job, plan, first_session_id, oracle, release)
        return job

    def expect(self, plans: list[WavePlan]) -> None:
        """Trials the search asks for once its current step ends: their first waves are
        started, in this order, on deployments that would otherwise sit idle."""
        for plan in plans:
            if not plan.evidence.waves:  # one with cached waves may need none at all
                self.expected.setdefault(plan.digest, plan)
        self.pool.poke()

    def measuring(self, plan: WavePlan) -> None:
        """`plan`'s trial is being measured: its next waves may be run ahead."""
        self.expected.pop(plan.digest, None)
        self.open[plan.digest] = plan
        self.pool.poke()

    def finished(self, digest: str, evidence: Evidence) -> None:
        """The trial's question is answered (or it failed): cancel its waves still in flight
        that it did not take; finished ones are kept for a later ask."""
        self.open.pop(digest, None)
        taken = evidence.next_session_id
        for (key, first), job in list(self.jobs.items()):
            if key == digest and first >= taken and not job.done.is_set():
                job.scope.cancel()
        self.pool.poke()

    def take(self, digest: str, first_session_id: int, job: WaveJob) -> None:
        """Forget `job`, not a later job of the same wave started meanwhile."""
        if self.jobs.get((digest, first_session_id)) is job:
            del self.jobs[(digest, first_session_id)]

    async def run(self) -> None:
        """Forever (until the campaign's task group is cancelled): whenever a deployment is
        idle and no trial waits for one, start the most useful wave ahead on it."""
        while True:
            wanted = self._next_wanted()
            index = self.pool.idle(wanted[0].digest) if wanted else None
            if wanted is None or index is None:
                await self.pool.changed()
                continue
            plan, first = wanted
            oracle, release = self.pool.oracles[index], lambda i=index: self.pool.release(i)
            self.start(plan, first, oracle, release, ahead=True)
            self.show(f"{plan.label} (a wave ahead)")

    def _next_wanted(self) -> tuple[WavePlan, int] | None:
        for plan in self.expected.values():
            first = plan.evidence.next_session_id
            if self.job(plan.digest, first) is None:
                return plan, first
        # Of the trials being measured, the one with the fewest waves started beyond the one
        # it waits for (the earliest asked first), as long as its cap allows one more.
        allowed = []
        for order, plan in enumerate(self.open.values()):
            first = self._frontier(plan)
            started = first - plan.evidence.next_session_id
            if plan.evidence.sessions_run + started + plan.spec.sessions <= self.max_sessions:
                allowed.append((started, order, plan, first))
        if not allowed:
            return None
        _, _, plan, first = min(allowed, key=lambda choice: choice[:2])
        return plan, first

    def _frontier(self, plan: WavePlan) -> int:
        """The first wave of `plan` after its next one that nobody runs or ran yet. The next
        one itself is the trial's: it waits for it, or starts it on its own deployment."""
        first = plan.evidence.next_session_id + plan.spec.sessions
        while self.job(plan.digest, first) is not None:
            first += plan.spec.sessions
        return first

    async def _run(
        self,
        job: WaveJob,
        plan: WavePlan,
        first_session_id: int,
        oracle: Oracle,
        release: Callable[[], None],
    ) -> None:
        try:
            with job.scope:
                try:
                    job.wave = await run_afresh(oracle, plan, first_session_id)
                except Exception as exc:  # raised to the trial when it takes this wave
                    job.error = exc
        finally:
            if job.ahead and job.wave is None and job.error is None:  # cancelled: not needed
                aside(plan.wave_dir(first_session_id), "unused")
                self.take(plan.digest, first_session_id, job)
            release()
            job.done.set()
            if job.ahead:
                self.show(None)
