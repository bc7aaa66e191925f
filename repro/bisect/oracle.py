"""What a campaign asks of an engine: resolve a configuration, run one wave of sessions.

The real one drives the harness (harness_oracle.py); unit tests pass a seeded fake.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from repro.bisect.evidence import Wave
from repro.spec import RunSpec


class Oracle(Protocol):
    def identity(self) -> str:
        """Engine name, version and launch profile: part of every trial's cache key."""
        ...

    def knob_names(self) -> list[str]: ...

    def resolve(self, requested: Mapping[str, str]) -> dict[str, str]:
        """The full configuration: every knob the engine defines, defaults filled.

        Raises UsageError on an unknown knob or value.
        """
        ...

    def check(self, configs: Sequence[Mapping[str, str]]) -> None:
        """Everything about launching these full configurations that can fail before a wave
        starts (settings, placeholders, the engine's own flag parser); raises UsageError."""
        ...

    async def run_wave(self, spec: RunSpec, wave_dir: Path, first_session_id: int) -> Wave:
        """Run spec.sessions sessions (ids from first_session_id) on spec.knobs; one outcome each."""
        ...

    async def aclose(self) -> None:
        """Stop whatever engine is still running."""
        ...
