"""The real oracle: waves of sessions through the harness, one engine kept per configuration.

The engine stays up from wave to wave while only client-side fields of the spec change
(a trial's next wave, a retry right after); it is restarted when an engine-side field
(knobs, settings, profile, backend, interpreter, extra args, port, seed) differs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from repro.bisect.evidence import CLEAN, CORRUPTED, ERRORED, Wave
from repro.errors import EngineError, ReproError, UsageError, first_repro_error
from repro.harness import Profile, check_plan, fill_from_profile, load_profile
from repro.spec import RunSpec

if TYPE_CHECKING:
    from repro.harness.launch.slurm import AllocationHolder
    from repro.results import RunSummary

ENGINE_FIELDS = frozenset(
    {"knobs", "settings", "profile", "backend", "server_python", "server_args", "port", "seed"}
)


def engine_key(spec: RunSpec) -> str:
    return json.dumps(spec.model_dump(mode="json", include=set(ENGINE_FIELDS)), sort_keys=True)


def session_outcomes(run_dir: Path, first_session_id: int, sessions: int) -> str:
    """One outcome per session id, counted by RunSummary's rule (corrupted_by_session),
    after the divergence oracle's verdicts, if it ran, are applied to the turns.

    A session with no judged turn (errors only, never started, or not in the replay's
    sample) is ERRORED: no evidence either way.
    """
    from repro.harness import read_replayed
    from repro.results import corrupted_by_session, judged_turns, read_turn_table, with_verdict

    path = run_dir / "turns.parquet"
    if not path.exists():
        return ERRORED * sessions
    columns = ["session_id", "turn", "outcome", "corrupted", "judged"]
    turns = read_turn_table(path, columns).to_pandas()
    replayed = read_replayed(run_dir)
    if replayed:
        verdicts = [
            with_verdict(bool(judged), bool(corrupted), replayed.get((sid, turn)))
            for sid, turn, judged, corrupted in zip(
                turns["session_id"], turns["turn"], turns["judged"], turns["corrupted"], strict=True
            )
        ]
        turns["judged"] = [j for j, _ in verdicts]
        turns["corrupted"] = [c for _, c in verdicts]
    by_session = corrupted_by_session(judged_turns(turns))
    ids = range(first_session_id, first_session_id + sessions)
    return "".join(
        ERRORED if sid not in by_session.index else CORRUPTED if by_session[sid] else CLEAN
        for sid in ids
    )


class HarnessOracle:
    def __init__(
        self,
        profile: Profile,
        profile_bytes: bytes,
        spec: RunSpec,
        slurm: AllocationHolder | None = None,
    ) -> None:
        self.profile = profile
        self.spec = spec  # the campaign's: its settings, seed and port reach every launch
        self._digest = hashlib.sha256(profile_bytes).hexdigest()[:12]
        self._stack: contextlib.AsyncExitStack | None = None
        self._key: str | None = None
        self._endpoint: object = None
        self._starts = 0
        # --launcher slurm: one allocation kept from engine to engine (grown when needed), so
        # a campaign queues for nodes once per deployment slot, not once per configuration.
        self._slurm = slurm

    @classmethod
    def for_spec(cls, spec: RunSpec, slot: int = 0) -> HarnessOracle:
        """The oracle for deployment `slot` of a campaign (0 to --parallel - 1)."""
        path = spec.profile_path()
        profile = load_profile(path)  # raises UsageError naming the file and key
        slurm = None
        if spec.launcher == "slurm":
            from repro.harness.launch.slurm import AllocationHolder, check_share

            # Inside one job, each slot takes nodes of its own, as many as the widest placement.
            placements = [profile.placement_for(t) for t in profile.topologies]
            widest = max(placements, key=lambda p: p.nodes)
            check_share(spec, widest, slot)  # too few nodes for this slot: fail before trial 1
            slurm = AllocationHolder(spec, slot, widest.nodes)
        return cls(profile, Path(path).read_bytes(), spec, slurm)

    def identity(self) -> str:
        # The profile's bytes too: two profiles may name the same engine version but map
        # knobs differently, and a trial under one says nothing about the other.
        return f"{self.profile.identity()} (profile {self._digest})"

    def knob_names(self) -> list[str]:
        return self.profile.knob_names()

    def resolve(self, requested: Mapping[str, str]) -> dict[str, str]:
        return self.profile.resolve_knobs(dict(requested))

    def check(self, configs: Sequence[Mapping[str, str]]) -> None:
        spec = fill_from_profile(
            self.spec, self.profile.run, self.profile.engine.oracle, self.profile.settings
        )
        plans = [check_plan(self.profile, spec, dict(c)) for c in configs]
        if any(self.profile.roles[r.name].preflight for plan in plans for r in plan.roles):
            from repro.harness import check_plans

            # One probe per interpreter for every plan: a bad flag that only a later trial
            # would launch fails now, not hours into the campaign.
            for report in check_plans(plans, self.profile):
                if not report.ok:
                    raise UsageError(report.failure_message())

    async def run_wave(self, spec: RunSpec, wave_dir: Path, first_session_id: int) -> Wave:
        started_s = time.monotonic()
        spec, summary = await self.record_wave(spec, wave_dir, first_session_id)
        outcomes = session_outcomes(wave_dir, first_session_id, spec.sessions)
        if outcomes.count(ERRORED) == len(outcomes):
            raise EngineError(
                f"No session of the wave in {wave_dir} got a single judged turn "
                f"({summary.errors} errors, {summary.stalls} stalls); see its logs."
            )
        return Wave(first_session_id, outcomes, time.monotonic() - started_s, str(wave_dir))

    async def record_wave(
        self, spec: RunSpec, wave_dir: Path, first_session_id: int
    ) -> tuple[RunSpec, RunSummary]:
        """Drive one wave into its run folder (the engine started or kept); the spec as the
        profile filled it, and the run's summary. Judging its sessions is the caller's."""
        from repro.harness import drive

        spec = fill_from_profile(
            spec, self.profile.run, self.profile.engine.oracle, self.profile.settings
        )
        endpoint = await self._engine_for(spec, wave_dir)
        wave_dir.mkdir(parents=True, exist_ok=True)
        try:
            summary = await drive(spec, endpoint, wave_dir, first_session_id=first_session_id)  # type: ignore[arg-type]
        except BaseException:
            # Stopped mid-wave (a wave run ahead that its trial no longer needs, Ctrl-C): its
            # sessions may still be in the engine, so the next wave gets a fresh one.
            self._key = None
            raise
        return spec, summary

    async def _engine_for(self, spec: RunSpec, wave_dir: Path) -> object:
        from repro.harness import engine

        key = engine_key(spec)
        if key == self._key and self._stack is not None:
            return self._endpoint
        await self._stop_engine()  # the Slurm allocation, if any, is kept for the next one
        stack = contextlib.AsyncExitStack()
        self._starts += 1
        # The engine's logs live with the first wave that used it.
        try:
            self._endpoint = await stack.enter_async_context(
                engine(spec, wave_dir / "engine-logs", allocations=self._slurm)
            )
        except* ReproError as failed:  # the launcher starts roles in a task group: unwrap
            raise first_repro_error(failed) from None
        self._stack, self._key = stack, key
        return self._endpoint

    @property
    def engine_starts(self) -> int:
        return self._starts

    async def _stop_engine(self) -> None:
        stack, self._stack, self._key = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def aclose(self) -> None:
        await self._stop_engine()
        if self._slurm is not None:
            await self._slurm.aclose()
