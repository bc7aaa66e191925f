"""RunSpec: everything one run needs, validated once; spec.json is its dump."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from repro.errors import UsageError

REPO_ROOT = Path(__file__).resolve().parent.parent
# The bundled profiles ship inside the package, so a wheel install has them too.
PROFILES_DIR = Path(str(files("repro") / "profiles"))
SESSIONS_PER_WORKER = 250  # what one event loop holds at 5 ms per token (bench/RESULTS.md)
MAX_OUTPUT_TOKENS_LIMIT = 1_048_576  # far above any model's output window; keeps JSON ints small
DEFAULT_PROFILES = {"sim": PROFILES_DIR / "sim.toml", "sglang": PROFILES_DIR / "sglang-0.5.23.toml"}


class RunSpec(BaseModel):
    """One configuration driven by one load; every default is written here, once."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["sim", "sglang"] = Field(
        "sim",
        description="which bundled profile launches the engine when --profile is not given: sim (the embedded engine) or sglang",
    )
    profile: Path | None = Field(
        None, description="launch profile (TOML); default: the bundled profile for --backend"
    )
    knobs: dict[str, str] = Field(
        default_factory=dict, description="requested knob values (profile fills the rest)"
    )
    settings: dict[str, str] = Field(
        default_factory=dict, description="profile settings overrides (--set K=V)"
    )
    scenario: str = Field("agentic-coding", description="workload scenario")
    sessions: int = Field(80, ge=1, le=100_000, description="agent sessions to run")
    concurrency: int | None = Field(
        None, ge=1, description="sessions in flight (default: all of them)"
    )
    seed: int = Field(0, ge=0, description="seed for the scenario and the engine")
    context_max_tokens: int = Field(
        80_000, ge=4_000, le=1_000_000, description="prompt size a session grows to"
    )
    max_turns: int = Field(100, ge=1, description="turn cap per session")
    max_output_tokens: int = Field(
        2048,
        ge=16,
        le=MAX_OUTPUT_TOKENS_LIMIT,
        description="max_tokens per request: the most tokens one assistant turn may generate",
    )
    ramp_up_s: float = Field(2.0, ge=0, description="seconds over which sessions start")
    workers: int | None = Field(
        None,
        ge=1,
        le=64,
        description="client processes the sessions are shared over, one event loop each "
        f"(default: one per {SESSIONS_PER_WORKER} sessions in flight, at most one per CPU)",
    )
    turn_timeout_s: float = Field(180.0, gt=0, description="deadline for one whole turn")
    stall_after_s: float = Field(30.0, gt=0, description="no token anywhere for this long = wedge")
    abort_rate: float = Field(0.0, ge=0, le=1, description="share of requests cancelled mid-stream")
    url: str | None = Field(None, description="use this running endpoint; launch nothing")
    port: int | None = Field(None, ge=1, le=65535, description="entry port (default: a free one)")
    model: str | None = Field(
        None, description="model name in requests (default: the server's first)"
    )
    server_python: str | None = Field(None, description="the engine's interpreter")
    server_args: tuple[str, ...] = Field((), description="appended to every engine role's argv")
    health_timeout_s: float | None = Field(
        None, gt=0, description="start-up deadline per role (profile default)"
    )
    thinking: bool = Field(True, description="ask for thinking mode (reasoning before calls)")

    @field_validator("url")
    @classmethod
    def _url_has_scheme(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url.rstrip("/") if url else url

    @classmethod
    def build(cls, **fields: object) -> RunSpec:
        """Validate user input into a spec; a bad field becomes one UsageError sentence."""
        try:
            return cls(**{k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise usage_error(exc) from None

    def profile_path(self) -> Path:
        return self.profile or DEFAULT_PROFILES[self.backend]

    def effective_concurrency(self) -> int:
        return min(self.concurrency or self.sessions, self.sessions)

    def effective_workers(self) -> int:
        """--workers, else what the load needs: one worker per SESSIONS_PER_WORKER sessions in
        flight, at most one per CPU this process may use; never more than sessions in flight."""
        if self.workers is not None:
            return min(self.workers, self.effective_concurrency())
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        needed = -(-self.effective_concurrency() // SESSIONS_PER_WORKER)
        return max(1, min(needed, cpus or 1))


def usage_error(exc: ValidationError, names: Mapping[str, str] | None = None) -> UsageError:
    """Pydantic's first complaint about user input as one sentence: `Invalid <where>: <why>.`

    `where` is the field's dotted path, or what `names` calls it (the option the user typed);
    a rule across fields (no path) not in `names` is its message alone, as a sentence.
    """
    first = exc.errors()[0]
    message = first["msg"].removeprefix("Value error, ")  # pydantic's, for a validator
    path = ".".join(str(p) for p in first["loc"])
    where = (names or {}).get(path) or path.replace("_", "-")
    if not where:
        return UsageError(f"{message[0].upper()}{message[1:]}.")
    return UsageError(f"Invalid {where}: {message}.")
