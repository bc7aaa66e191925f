"""What `repro sweep` asks for, validated once: a base run and the session counts and prompt
ceilings to cross. Each point is the base run with its own --sessions and --context-max."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from repro.errors import UsageError
from repro.spec import RUNS_DIR, RunSpec, usage_error

DEFAULT_SESSIONS = (1, 10, 20, 40, 60, 80)


def parse_counts(text: str, option: str) -> tuple[int, ...]:
    """'1,10,20' -> (1, 10, 20); anything else is one sentence naming the option."""
    items = [item.strip().replace("_", "") for item in text.split(",")]
    if not items or not all(item.isdigit() for item in items):
        raise UsageError(
            f"{option} '{text}' is not a comma-separated list of whole numbers (e.g. 1,10,20)."
        )
    counts = tuple(int(item) for item in items)
    if len(set(counts)) != len(counts):
        raise UsageError(f"{option} '{text}' lists a value twice; list each once.")
    return counts


@dataclass(frozen=True, slots=True)
class SweepPoint:
    sessions: int
    context_max_tokens: int
    spec: RunSpec

    @property
    def label(self) -> str:
        return f"s{self.sessions:03d}-c{self.context_max_tokens}"

    def describe(self) -> str:
        noun = "session" if self.sessions == 1 else "sessions"
        return f"{self.sessions} {noun} to {self.context_max_tokens:,} tokens"


class SweepPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run: RunSpec = Field(description="the run each point repeats with its own sessions and context")
    sessions: tuple[int, ...] = Field(DEFAULT_SESSIONS, min_length=1)
    contexts_tokens: tuple[int, ...] = Field((80_000,), min_length=1)
    out_dir: Path = Field(RUNS_DIR, description="output folder; points live in <out>/sweep/")

    @field_validator("sessions", "contexts_tokens")
    @classmethod
    def _within_run_bounds(cls, values: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        """Each value as RunSpec itself bounds --sessions or --context-max."""
        name = "sessions" if info.field_name == "sessions" else "context_max_tokens"
        for value in values:
            try:
                RunSpec(**{name: value})
            except ValidationError as exc:
                raise ValueError(f"{value:,}: {exc.errors()[0]['msg'].lower()}") from None
        return values

    @model_validator(mode="after")
    def _launches(self) -> SweepPlan:
        if self.run.url is not None:
            raise ValueError(
                "sweep starts a fresh engine for each point (a warm cache would carry over), "
                "so --url cannot be used"
            )
        return self

    @classmethod
    def build(cls, **fields: object) -> Self:
        """Validate user input; a bad field becomes one UsageError sentence."""
        try:
            plan = cls(**{k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise usage_error(
                exc, {"sessions": "--sessions", "contexts_tokens": "--context-max"}
            ) from None
        return plan

    @property
    def folder(self) -> Path:
        return self.out_dir / "sweep"

    def points(self) -> list[SweepPoint]:
        """Every (context, sessions) pair, by context then sessions, ascending: the curves."""
        base = self.run.model_dump()
        return [
            SweepPoint(n, c, RunSpec.build(**(base | {"sessions": n, "context_max_tokens": c})))
            for c in sorted(self.contexts_tokens)
            for n in sorted(self.sessions)
        ]
