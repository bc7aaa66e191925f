"""Trials: one configuration measured in waves of sessions until a question is settled.

A campaign asks each trial a question (the SPRT decided; a knob's class is settled) and the
runner adds waves until it is answered or the session cap is reached. Evidence comes from
the cache first and every wave is written back at once, so nothing decided is run twice.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from repro.bisect.cache import TrialCache, key_digest, trial_key
from repro.bisect.evidence import Evidence
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


def _fresh(wave_dir: Path) -> Path:
    """A wave folder left by an interrupted run is kept, renamed, for its logs; never reused."""
    if wave_dir.exists():
        n = 1
        while (aside := wave_dir.with_name(f"{wave_dir.name}-interrupted-{n}")).exists():
            n += 1
        wave_dir.rename(aside)
    return wave_dir


class TrialRunner:
    """Measures configurations for one campaign; remembers every trial it touched, in order.

    Given an OraclePool of K oracles, up to K trials run at once (parallel.measure_together),
    each on its own deployment for all its waves."""

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
        self._running: dict[str, Trial] = {}  # of those, the ones with a wave in flight

    @property
    def parallel(self) -> int:
        """How many trials may run at once (one deployment each)."""
        return self.pool.size

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
        config = self.oracle.resolve(requested)
        spec = self.base.model_copy(update={"knobs": config})
        key = trial_key(spec, config, self.oracle.identity())
        digest = key_digest(key)
        # One measurement of a configuration at a time. Taken without waiting when free, so
        # trials asked for together are recorded in the order asked (the report's order).
        lock = self._locks.setdefault(digest, anyio.Lock())
        try:
            lock.acquire_nowait()
        except anyio.WouldBlock:
            await lock.acquire()
        self._measuring.add(digest)
        try:
            evidence = self.cache.load(key) or Evidence(config)
            known = self.trials.get(digest)
            cached = known.cached_sessions if known else evidence.sessions_run
            question = settled or (lambda ev: ev.sprt(self.settings).decided)
            trial = self._record(label, config, evidence, cached, digest, known, question(evidence))
            if trial.settled or self.at_cap(evidence):
                return trial
            async with self.pool.slot(digest) as oracle:  # one deployment for all its waves
                while not trial.settled and not self.at_cap(evidence):
                    self._running[digest] = trial
                    self._show(started=trial.label)
                    wave_dir = _fresh(
                        self.trials_dir / digest / f"wave-{len(evidence.waves) + 1:03d}"
                    )
                    try:
                        wave = await oracle.run_wave(spec, wave_dir, evidence.next_session_id)
                    finally:
                        self._running.pop(digest, None)
                    evidence = evidence.with_wave(wave)
                    self.cache.save(key, evidence)
                    trial = self._record(
                        label, config, evidence, cached, digest, known, question(evidence)
                    )
            return trial
        finally:
            self._measuring.discard(digest)
            lock.release()
            self._show()

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
        running = [self.trials[d] for d in self._running]
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
            )
        )
