"""The engine at a point of a history: a campaign's oracle, launched from the point's
environment.

A trial's configuration holds the point (`@point`, plus what else keys it: the build command's
digest, the package) beside the knobs, so the trial cache keys each point apart while the
run spec stays the same for every point. A wave strips those keys and launches the engine
with the point's interpreter as the profile's `{python}` (what `--server-python` sets).

With the divergence reference, each wave is driven with scripted history and logprobs and
then judged against the good endpoint's first run (reference.py) instead of by the run's
own oracle.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from repro.bisect.evidence import ERRORED, Wave
from repro.bisect.history.reference import compare_runs, self_outcomes
from repro.bisect.oracle import Oracle
from repro.errors import EngineError, ReproError
from repro.spec import RunSpec

POINT = "@point"  # in a trial's configuration: the commit id or the release
AGAIN = "@again"  # the good endpoint measured a second time (the divergence reference)


@dataclass
class PointEnvironments:
    """Shared by every deployment slot: each built point's interpreter, and the reference run
    (the good endpoint's first wave) once there is one."""

    interpreters: dict[str, Path] = field(default_factory=dict)
    reference_dir: Path | None = None
    numerical_margin_nats: float = 1.0


def point_keys(config: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in config.items() if k.startswith("@")}


def knobs_only(config: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in config.items() if not k.startswith("@")}


class PointOracle:
    """One deployment slot's oracle for a history search (see the module's text)."""

    def __init__(
        self, inner: Oracle, shared: PointEnvironments, reference: bool, releases: bool = False
    ) -> None:
        self.inner = inner
        self.shared = shared
        self.reference = reference
        # Points are releases: a profile that maps flags per version range ([engine]
        # version_setting) is told each point's release through that setting.
        self.releases = releases

    def _version_setting(self) -> str | None:
        profile = getattr(self.inner, "profile", None)
        engine = getattr(profile, "engine", None)
        named = getattr(engine, "version_setting", None)
        return named if self.releases and isinstance(named, str) else None

    def identity(self) -> str:
        return self.inner.identity()

    def knob_names(self) -> list[str]:
        return self.inner.knob_names()

    def resolve(self, requested: Mapping[str, str]) -> dict[str, str]:
        return self.inner.resolve(knobs_only(requested)) | point_keys(requested)

    def check(self, configs: Sequence[Mapping[str, str]]) -> None:
        self.inner.check([knobs_only(c) for c in configs])

    async def run_wave(self, spec: RunSpec, wave_dir: Path, first_session_id: int) -> Wave:
        point = spec.knobs.get(POINT, "")
        python = self.shared.interpreters.get(point)
        if python is None:
            raise ReproError(f"No environment was built for {point}.")
        update: dict[str, object] = {"knobs": knobs_only(spec.knobs), "server_python": str(python)}
        if (named := self._version_setting()) is not None:
            update["settings"] = {**spec.settings, named: point}
        inner_spec = spec.model_copy(update=update)
        if not self.reference:
            return await self.inner.run_wave(inner_spec, wave_dir, first_session_id)
        inner_spec = inner_spec.model_copy(
            update={"oracle": "divergence", "history": "scripted", "replay_sample": "1"}
        )
        record = getattr(self.inner, "record_wave", None)
        if record is None:  # a stand-in engine (tests) judges its own waves
            return await self.inner.run_wave(inner_spec, wave_dir, first_session_id)
        started = time.monotonic()
        filled, _ = await record(inner_spec, wave_dir, first_session_id)
        sessions = filled.sessions
        if self.shared.reference_dir is None:  # this is the reference run itself
            outcomes = self_outcomes(wave_dir, first_session_id, sessions)
        else:
            outcomes = compare_runs(
                wave_dir,
                self.shared.reference_dir,
                first_session_id,
                sessions,
                self.shared.numerical_margin_nats,
            ).outcomes
        if outcomes.count(ERRORED) == len(outcomes):
            raise EngineError(
                f"No turn of the wave in {wave_dir} could be compared with the reference run's "
                "(errors, or other requests); see its logs."
            )
        return Wave(first_session_id, outcomes, time.monotonic() - started, str(wave_dir))

    async def aclose(self) -> None:
        await self.inner.aclose()
