"""RunSpec: everything one run needs, validated once; spec.json is its dump."""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from repro.errors import UsageError

REPO_ROOT = Path(__file__).resolve().parent.parent
# The bundled profiles ship inside the package, so a wheel install has them too.
PROFILES_DIR = Path(str(files("repro") / "profiles"))
DEFAULT_PROFILES = {"sim": PROFILES_DIR / "sim.toml", "sglang": PROFILES_DIR / "sglang-0.5.23.toml"}


# Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or no limit.
SLURM_TIME = r"\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE"
# The options that pass through to Slurm, by the RunSpec field each sets.
SLURM_OPTIONS = {
    "--nodes": "nodes",
    "--partition": "partition",
    "--account": "account",
    "--time": "time_limit",
}


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
    max_output_tokens: int = Field(2048, ge=16, description="max_tokens per request")
    ramp_up_s: float = Field(2.0, ge=0, description="seconds over which sessions start")
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
    launcher: Literal["local", "slurm"] = Field(
        "local",
        description="how the engine's roles start: local (child processes of repro) or slurm "
        "(job steps on the nodes the profile's placement names; docs/slurm.md)",
    )
    nodes: int | None = Field(
        None, ge=1, description="Slurm: nodes to allocate (default: what the placement needs)"
    )
    partition: str | None = Field(None, description="Slurm: the partition to allocate in")
    account: str | None = Field(None, description="Slurm: the account to charge")
    time_limit: str | None = Field(
        None,
        description="Slurm: the allocation's time limit, in Slurm's format (90, 2:00:00, "
        "1-12:00:00); it also bounds how long a crashed repro's engines can outlive it",
    )

    @field_validator("url")
    @classmethod
    def _url_has_scheme(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url.rstrip("/") if url else url

    @field_validator("time_limit")
    @classmethod
    def _slurm_time(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(SLURM_TIME, value):
            raise ValueError(
                f"'{value}' is not a Slurm time; write minutes (90), HH:MM:SS (2:00:00) or "
                "D-HH:MM:SS (1-12:00:00)"
            )
        return value

    @model_validator(mode="after")
    def _slurm_options_need_slurm(self) -> RunSpec:
        given = [o for o, f in SLURM_OPTIONS.items() if getattr(self, f) is not None]
        if given and self.launcher != "slurm":
            raise ValueError(f"{given[0]} applies only with --launcher slurm")
        if self.url and self.launcher == "slurm":
            raise ValueError(
                "--url attaches to a running server: there is nothing to place on Slurm"
            )
        return self

    @classmethod
    def build(cls, **fields: object) -> RunSpec:
        """Validate user input into a spec; a bad field becomes one UsageError sentence."""
        try:
            return cls(**{k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise usage_error(exc, {f: o for o, f in SLURM_OPTIONS.items()}) from None

    def profile_path(self) -> Path:
        return self.profile or DEFAULT_PROFILES[self.backend]

    def effective_concurrency(self) -> int:
        return min(self.concurrency or self.sessions, self.sessions)


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
