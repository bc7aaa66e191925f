"""A stand-in for the harness: each session is corrupted with a configuration's fixed rate.

Deterministic: a session's outcome depends only on (seed, configuration, session id), so a
rerun sees exactly the same sessions, and a test can count which ones were run.

`wave_spread` makes waves of one configuration spread more than the binomial says, as the
load-induced engine's runs do (docs/sim.md, "Run to run"): each wave's rate is the
configuration's times a Gamma factor of mean 1 and that coefficient of variation, drawn from
(seed, configuration, first session id).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from repro.bisect.evidence import CLEAN, CORRUPTED, Wave
from repro.errors import UsageError
from repro.knobs import describe
from repro.spec import RunSpec

STORY_KNOBS = {
    "topology": ("single", "pd"),
    "hicache": ("off", "on"),
    "index_k": ("fp8", "bf16"),
    "topk_v2": ("off", "on"),
    "custom_kernels": ("off", "on"),
    "cuda_graph": ("off", "on"),
}


def seed_bug(pd_rate: float, single_rate: float) -> Callable[[Mapping[str, str]], float]:
    """The seed bug: PD amplifies a HiCache + bf16 race; everything else is a red herring."""

    def rate(config: Mapping[str, str]) -> float:
        if config["hicache"] != "on" or config["index_k"] != "bf16":
            return 0.0
        return pd_rate if config["topology"] == "pd" else single_rate

    return rate


story_rate = seed_bug(0.17, 0.02)


class Crash(Exception):
    """Raised by the fake in place of a kill (SIGKILL, power loss, Ctrl-C)."""


@dataclass
class FakeOracle:
    rate: Callable[[Mapping[str, str]], float] = story_rate
    knobs: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(STORY_KNOBS))
    defaults: Mapping[str, str] | None = None
    seed: int = 0
    wave_spread: float = 0.0  # coefficient of variation of a wave's rate around the config's
    wave_ticks: int = 0  # event-loop turns a wave takes (waves can overlap)
    slow: tuple[Mapping[str, str], float] = ({}, 1.0)  # configs with these knobs take x longer
    crash_on_config: int | None = None  # raise Crash on the first wave of the Nth config
    waves: list[tuple[str, int, int]] = field(default_factory=list)  # config, first id, sessions
    closed: bool = False
    checked: list[dict[str, str]] = field(default_factory=list)  # configurations checked
    clock: int = 0  # loop turns taken by all waves so far: the fakes' clock, for spans

    async def tick(self, turns: int) -> None:
        """Take `turns` turns of the event loop, each counted on `clock`. Waves that last loop
        turns, not wall time, overlap the same way however loaded the machine is: nothing in
        the search waits on a timer or a thread, so the loop runs them in the same order."""
        for _ in range(turns):
            self.clock += 1
            await anyio.sleep(0)

    def identity(self) -> str:
        return "fake-engine 1.0"

    def knob_names(self) -> list[str]:
        return list(self.knobs)

    def resolve(self, requested: Mapping[str, str]) -> dict[str, str]:
        config = dict(self.defaults or {k: v[0] for k, v in self.knobs.items()})
        for knob, value in requested.items():
            if knob not in self.knobs:
                raise UsageError(f"Unknown knob '{knob}'.")
            if value not in self.knobs[knob]:
                raise UsageError(f"Knob '{knob}' has no value '{value}'.")
            config[knob] = value
        return config

    def check(self, configs: Sequence[Mapping[str, str]]) -> None:
        """What can fail before a wave: each configuration is one of this engine's."""
        for config in configs:
            assert self.resolve(config) == config, config
            self.checked.append(dict(config))

    async def run_wave(self, spec: RunSpec, wave_dir: Path, first_session_id: int) -> Wave:
        config = describe(spec.knobs)
        seen = list(dict.fromkeys(self.configs_run()))
        if config not in seen and len(seen) + 1 == self.crash_on_config:
            # Killed mid-wave: the harness had started writing the wave's run folder.
            wave_dir.mkdir(parents=True)
            (wave_dir / "spec.json").write_text("{}")
            raise Crash("killed")
        self.waves.append((config, first_session_id, spec.sessions))
        if self.wave_ticks:
            knobs, factor = self.slow
            slow = knobs and all(spec.knobs.get(k) == v for k, v in knobs.items())
            await self.tick(round(self.wave_ticks * (factor if slow else 1.0)))
        rate = self.rate(spec.knobs)
        if self.wave_spread:
            shape = self.wave_spread**-2
            draw = random.Random(f"{self.seed}:{config}:wave:{first_session_id}")
            rate = min(1.0, rate * draw.gammavariate(shape, 1 / shape))
        outcomes = "".join(
            CORRUPTED if random.Random(f"{self.seed}:{config}:{sid}").random() < rate else CLEAN
            for sid in range(first_session_id, first_session_id + spec.sessions)
        )
        return Wave(first_session_id, outcomes, wall_s=1.0, run_dir=str(wave_dir))

    async def aclose(self) -> None:
        self.closed = True

    def configs_run(self) -> list[str]:
        return [config for config, _, _ in self.waves]
