"""Evidence for one configuration: every session's outcome, in session-id order, wave by wave.

A verdict is never stored, only recomputed from these outcomes under the settings in force,
so a cached trial can be neither stale nor repeated: it can only be extended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from repro.bisect.sprt import SprtResult, SprtSettings, run_sprt
from repro.results import Rate, wilson

CORRUPTED = "C"
CLEAN = "."
ERRORED = "E"  # ended in an error before any corruption: no evidence either way


@dataclass(frozen=True, slots=True)
class Wave:
    """One batch of sessions run together against one engine (they share the load)."""

    first_session_id: int
    outcomes: str  # one of CORRUPTED / CLEAN / ERRORED per session, in session-id order
    wall_s: float
    run_dir: str

    @property
    def sessions(self) -> int:
        return len(self.outcomes)


@dataclass(frozen=True, slots=True)
class Evidence:
    config: Mapping[str, str]
    waves: tuple[Wave, ...] = field(default=())

    def with_wave(self, wave: Wave) -> Evidence:
        return Evidence(self.config, (*self.waves, wave))

    @property
    def outcomes(self) -> list[bool]:
        """Counted sessions only (errored ones dropped), True = corrupted, in session-id order."""
        return [c == CORRUPTED for w in self.waves for c in w.outcomes if c != ERRORED]

    @property
    def sessions_run(self) -> int:
        """Every session started, errored ones included: what the trial cost."""
        return sum(w.sessions for w in self.waves)

    @property
    def sessions(self) -> int:
        return sum(w.sessions - w.outcomes.count(ERRORED) for w in self.waves)

    @property
    def corrupted(self) -> int:
        return sum(w.outcomes.count(CORRUPTED) for w in self.waves)

    @property
    def errored(self) -> int:
        return sum(w.outcomes.count(ERRORED) for w in self.waves)

    @property
    def wall_s(self) -> float:
        return sum(w.wall_s for w in self.waves)

    @property
    def next_session_id(self) -> int:
        last = self.waves[-1] if self.waves else None
        return last.first_session_id + last.sessions if last else 0

    def rate(self) -> Rate:
        """All counted sessions, including those run after the SPRT had decided."""
        return wilson(self.corrupted, self.sessions)

    def sprt(self, settings: SprtSettings) -> SprtResult:
        return run_sprt(self.outcomes, settings)
