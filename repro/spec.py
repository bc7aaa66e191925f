"""RunSpec: everything one run needs, validated once; spec.json is its dump."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from repro.errors import UsageError

if TYPE_CHECKING:
    from repro.shapes import Mix

# The bundled profiles ship inside the package, so a wheel install has them too.
PROFILES_DIR = Path(str(files("repro") / "profiles"))
SESSIONS_PER_WORKER = 250  # what one event loop holds at 5 ms per token (bench/RESULTS.md)
MAX_OUTPUT_TOKENS_LIMIT = 1_048_576  # far above any model's output window; keeps JSON ints small
# Where runs, trial caches and sweeps go unless --out says otherwise. (Older versions wrote to
# ./results, the name of the part that writes them; a folder there is read like any other.)
RUNS_DIR = Path("runs")
DEFAULT_PROFILES = {
    "sim": PROFILES_DIR / "sim.toml",
    "sglang": PROFILES_DIR / "sglang-0.5.23.toml",
    "vllm": PROFILES_DIR / "vllm-cpu-0.32.toml",
}
# Bounds on what a user can type: every wait finite (a day is longer than any real one), and
# every count small enough for spec.json, the engine's own parser and a parquet int64 column.
MAX_WAIT_S = 86_400.0
MAX_SEED = 2**63 - 1
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


# Slurm's time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or no limit.
SLURM_TIME = r"\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE"
# The options that pass through to Slurm, by the RunSpec field each sets.
SLURM_OPTIONS = {
    "--nodes": "nodes",
    "--partition": "partition",
    "--account": "account",
    "--time": "time_limit",
}

Oracle = Literal["validity", "divergence", "both"]  # what a profile may default to
# What a run judges with besides the consistency checks, which judge every turn: "none" is
# those checks alone (`--oracle stream` without validity or divergence).
RunOracle = Literal["validity", "divergence", "both", "none"]
History = Literal["live", "scripted"]
MAX_REPLAY_CONCURRENCY = 256


class RunSpec(BaseModel):
    """One configuration driven by one load; every default is written here, once."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    backend: Literal["sim", "sglang", "vllm"] = Field(
        "sim",
        description="which bundled profile launches the engine when --profile is not given: sim (the embedded engine), sglang, or vllm (vLLM on CPU serving a tiny local model)",
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
    scenario: str = Field(
        "agentic-coding",
        description="workload scenario: agentic-coding, or a recorded trace as trace:FILE "
        "(docs/traces.md)",
    )
    sessions: int = Field(80, ge=1, le=100_000, description="agent sessions to run")
    concurrency: int | None = Field(
        None, ge=1, le=100_000, description="sessions in flight (default: all of them)"
    )
    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed for the scenario and the engine")
    context_max_tokens: int = Field(
        80_000, ge=4_000, le=1_000_000, description="prompt size a session grows to"
    )
    max_turns: int = Field(100, ge=1, le=100_000, description="turn cap per session")
    max_output_tokens: int = Field(
        2048,
        ge=16,
        le=MAX_OUTPUT_TOKENS_LIMIT,
        description="max_tokens per request: the most tokens one assistant turn may generate",
    )
    ramp_up_s: float = Field(
        2.0, ge=0, le=MAX_WAIT_S, description="seconds over which sessions start"
    )
    workers: int | None = Field(
        None,
        ge=1,
        le=64,
        description="client processes the sessions are shared over, one event loop each "
        f"(default: one per {SESSIONS_PER_WORKER} sessions in flight, at most one per CPU)",
    )
    turn_timeout_s: float = Field(
        180.0, gt=0, le=MAX_WAIT_S, description="deadline for one whole turn"
    )
    stall_after_s: float = Field(
        30.0, gt=0, le=MAX_WAIT_S, description="no token anywhere for this long = wedge"
    )
    abort_rate: float = Field(0.0, ge=0, le=1, description="share of requests cancelled mid-stream")
    url: str | None = Field(None, description="use this running endpoint; launch nothing")
    port: int | None = Field(None, ge=1, le=65535, description="entry port (default: a free one)")
    model: str | None = Field(
        None, description="model name in requests (default: the server's first)"
    )
    server_python: str | None = Field(None, description="the engine's interpreter")
    server_args: tuple[str, ...] = Field((), description="appended to every engine role's argv")
    health_timeout_s: float | None = Field(
        None, gt=0, le=MAX_WAIT_S, description="start-up deadline per role (profile default)"
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
    oracle: RunOracle | None = Field(
        None,
        description="how turns are judged: validity (DSML grammar, tool schemas, the scenario's "
        "semantic oracle), divergence (each turn against the same request replayed alone), or "
        "both (default: the profile's; validity for models that write DSML); add ,stream for "
        "the oracle of streamed against unstreamed answers (stream alone: that and the invariants only). "
        "The consistency invariants judge every turn whatever is chosen (docs/consistency.md)",
    )
    stream_oracle: bool = Field(
        False,
        description="the oracle of streamed against unstreamed answers: sampled turns are sent again the "
        "other way, at the same time, and both answers must agree (--oracle ...,stream)",
    )
    stream_sample: str = Field(
        "0.25",
        description="turns the stream oracle sends twice: all, or a share (seeded per turn)",
    )
    mix: tuple[str, ...] = Field(
        (),
        description="request shapes by share: AXIS=VALUE:SHARE items, comma-separated, "
        "repeatable, or full for every shape; axes: tool_choice, response_format, max_tokens, "
        "reasoning, stream, n, logprobs, stop, parallel_tool_calls; see docs/consistency.md",
    )
    history: History | None = Field(
        None,
        description="live: the model's answers become the history; scripted: the scenario's "
        "plan does, whatever the model answers (default: scripted when turns are replayed)",
    )
    replay_sample: str = Field(
        "auto",
        description="sessions the divergence oracle replays, every turn of each: all, a count "
        "(a seeded random sample), or auto (in random order, while at the pace so far each "
        "would end within twice the load's wall time)",
    )
    reference_urls: tuple[str, ...] = Field(
        (),
        description="replay on these engines (started with the same configuration) instead of "
        "the run's own engine after the load; one request at a time each",
    )
    reference_engines: int = Field(
        0,
        ge=0,
        le=64,
        description="launch this many more engines of the same profile and configuration "
        "(changed by --reference-knob) for the replay, which then runs alongside the load "
        "(0: the run's own engine after the load)",
    )
    reference_knobs: dict[str, str] = Field(
        default_factory=dict,
        description="knob values the reference engines run with instead of the run's, e.g. "
        "index_k_gate=fixed: a configuration known safe (repeatable, NAME=VALUE)",
    )
    replay_concurrency: str = Field(
        "auto",
        description="requests the replay sends at once per reference: a number, or auto (on "
        "the run's own engine after the load, as many as keep it within 1.5 times the load's "
        "time once the engine answers the same at that concurrency as alone; on reference "
        "engines, as many as the load had in flight)",
    )
    top_logprobs: int = Field(
        5,
        ge=0,
        le=20,
        description="alternatives per token the divergence oracle asks for (0: no logprobs, "
        "so every divergence counts)",
    )
    numerical_margin_nats: float = Field(
        1.0,
        gt=0,
        le=100.0,
        description="a divergence is numerical (a near-tie flipped, not counted) when the "
        "reference scored the loaded token within this many nats of its own choice",
    )
    tool_format: str | None = Field(
        None,
        description="the tool-call format turns are judged in, a name `repro check --format` "
        "takes (default: the profile's [run] tool_format, else dsml-v32)",
    )

    @field_validator("url")
    @classmethod
    def _url_is_a_base_url(cls, url: str | None) -> str | None:
        return None if url is None else checked_base_url(url)

    @field_validator("model", "server_python", "partition", "account")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("is empty; give a value or leave the option out")
        return value

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

    @model_validator(mode="after")
    def _launch_options_need_a_launch(self) -> RunSpec:
        # With --url repro starts no engine (unless it launches reference engines to replay
        # on): what would only shape a launch would be dropped without a word.
        if not self.url or self.reference_engines:
            return self
        given = {
            "--set (or --model-path)": bool(self.settings),
            "--server-args": bool(self.server_args),
            "--port": self.port is not None,
            "--health-timeout": self.health_timeout_s is not None,
            "--server-python": self.server_python is not None,
        }
        if dropped := [option for option, set_ in given.items() if set_]:
            raise ValueError(
                f"{dropped[0]} shapes an engine repro launches; with --url it launches none"
            )
        return self

    @field_validator("stream_sample")
    @classmethod
    def _stream_sample_is_all_or_a_share(cls, sample: str) -> str:
        sample = sample.strip().lower()
        if sample == "all":
            return sample
        try:
            share = float(sample)
        except ValueError:
            share = -1.0
        if not 0 < share <= 1:
            raise ValueError("must be all or a share above 0 and at most 1 (e.g. 0.25)")
        return sample

    @field_validator("replay_concurrency")
    @classmethod
    def _replay_concurrency_is_auto_or_a_count(cls, value: str) -> str:
        value = value.strip().lower()
        if value == "auto" or (value.isdigit() and 1 <= int(value) <= MAX_REPLAY_CONCURRENCY):
            return value
        raise ValueError(f"must be auto or a number from 1 to {MAX_REPLAY_CONCURRENCY}")

    @field_validator("mix")
    @classmethod
    def _mix_parses(cls, items: tuple[str, ...]) -> tuple[str, ...]:
        from repro.shapes import parse_mix

        parse_mix(items)  # a bad entry raises its one sentence
        return tuple(i.strip() for i in items)

    @field_validator("reference_knobs")
    @classmethod
    def _reference_knobs_named(cls, knobs: dict[str, str]) -> dict[str, str]:
        for name, value in knobs.items():
            if not name.strip() or not value.strip():
                raise ValueError("give each as NAME=VALUE, e.g. index_k_gate=fixed")
        return knobs

    @field_validator("replay_sample")
    @classmethod
    def _sample_is_all_auto_or_a_count(cls, sample: str) -> str:
        sample = sample.strip().lower()
        if sample in ("all", "auto") or (sample.isdigit() and int(sample) > 0):
            return sample
        raise ValueError("must be all, auto or a number of sessions (1 or more)")

    @field_validator("reference_urls")
    @classmethod
    def _reference_urls_have_a_scheme(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(cls._url_is_a_base_url(u) or "" for u in urls)

    @model_validator(mode="after")
    def _stream_oracle_options(self) -> RunSpec:
        if self.stream_sample != "0.25" and not self.stream_oracle:
            raise ValueError(
                "--stream-sample shapes the stream oracle, which this run does not use; add "
                ",stream to --oracle, or drop it"
            )
        axes = {entry.partition("=")[0].strip() for entry in self.mix}
        if self.compares_answers and self.top_logprobs and "logprobs" in axes:
            raise ValueError(
                "--mix logprobs=... varies what the divergence and stream oracles ask of every "
                "request (logprobs, to tell a near tie from corruption); drop logprobs from "
                "--mix, or give --top-logprobs 0"
            )
        if self.reference_knobs and not self.reference_engines:
            raise ValueError(
                "--reference-knob sets the engines --reference-engines launches; give "
                "--reference-engines too"
            )
        return self

    @model_validator(mode="after")
    def _replay_needs_a_rebuildable_history(self) -> RunSpec:
        if self.judges_divergence and self.history == "live":
            raise ValueError(
                f"--oracle {self.oracle} replays every request, which needs --history scripted "
                "(a live history holds the model's own answers, which are not kept)"
            )
        if self.reference_urls and self.reference_engines:
            raise ValueError("give either --reference-url or --reference-engines, not both")
        if not self.judges_divergence and self.oracle and (replay := self._replay_options_given()):
            raise ValueError(
                f"{replay[0]} shapes the divergence oracle's replay, and this run judges "
                "validity only; add --oracle divergence (or both), or drop it"
            )
        if self.oracle in ("divergence", "both") and (self.workers or 1) > 1:
            raise ValueError(
                f"--oracle {self.oracle} records each loaded turn for its replay in one process; "
                "drop --workers (or give --workers 1)"
            )
        return self

    def _replay_options_given(self) -> list[str]:
        # By value, not by fields set: a spec rebuilt from a dump has every field set.
        given = {
            "--reference-url": bool(self.reference_urls),
            "--reference-engines": self.reference_engines > 0,
            "--replay-sample": self.replay_sample != "auto",
            "--replay-concurrency": self.replay_concurrency != "auto",
        }
        return [option for option, set_ in given.items() if set_]

    def with_oracle_default(self, default: Oracle) -> RunSpec:
        """The spec with --oracle and --history settled (the profile gives the oracle's default)."""
        oracle = self.oracle or default
        replays = oracle in ("divergence", "both")
        history = self.history or ("scripted" if replays else "live")
        return RunSpec.build(**(self.model_dump() | {"oracle": oracle, "history": history}))

    @property
    def judges_validity(self) -> bool:
        return self.oracle in (None, "validity", "both")

    @property
    def judges_divergence(self) -> bool:
        return self.oracle in ("divergence", "both")

    @property
    def compares_answers(self) -> bool:
        """Whether turns are compared with other answers to the same request (divergence,
        stream): then every request carries the seed and asks for logprobs."""
        return self.judges_divergence or self.stream_oracle

    @property
    def judges_every_turn(self) -> bool:
        """Whether a turn is judged when it ends (validity, or the consistency checks alone);
        with divergence only, a turn waits for the replay's verdict."""
        return self.judges_validity or self.oracle == "none"

    def request_mix(self) -> Mix:
        """The shapes' shares; `full` leaves out logprobs when the oracles ask for them."""
        from repro.shapes import parse_mix

        mix = parse_mix(self.mix)
        if self.compares_answers and self.top_logprobs:
            mix = mix.without("logprobs")
        return mix

    def stream_share(self) -> float:
        return 1.0 if self.stream_sample == "all" else float(self.stream_sample)

    @property
    def oracle_label(self) -> str:
        """What judged the run, as reports say it: e.g. divergence+stream."""
        base = self.oracle or "validity"
        if not self.stream_oracle:
            return base
        return "stream" if base == "none" else f"{base}+stream"

    @classmethod
    def build(cls, names: Mapping[str, str] | None = None, **fields: object) -> RunSpec:
        """Validate user input into a spec; a bad field becomes one UsageError sentence that
        calls it what `names` does (the option the user typed)."""
        try:
            return cls(**{k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            slurm_names = {f: o for o, f in SLURM_OPTIONS.items()}
            raise usage_error(exc, slurm_names | dict(names or {})) from None

    def profile_path(self) -> Path:
        return self.profile or DEFAULT_PROFILES[self.backend]

    def effective_concurrency(self) -> int:
        return min(self.concurrency or self.sessions, self.sessions)

    def effective_workers(self) -> int:
        """--workers, else what the load needs: one worker per SESSIONS_PER_WORKER sessions in
        flight, at most one per CPU this process may use; never more than sessions in flight."""
        if self.judges_divergence:
            return 1  # the replay's record of each loaded turn (loaded.jsonl) has one writer
        if self.workers is not None:
            return min(self.workers, self.effective_concurrency())
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        needed = -(-self.effective_concurrency() // SESSIONS_PER_WORKER)
        return max(1, min(needed, cpus or 1))


def checked_base_url(url: str) -> str:
    """The URL without its trailing slashes if a client can use it as a base (http or https,
    a host, a port in range, no query); raises ValueError saying what is wrong otherwise."""
    import ipaddress

    import httpx  # here, not at the top: `repro --help` does not pay for it

    scheme, slashes, rest = url.partition("://")
    if scheme not in ("http", "https") or not slashes:
        raise ValueError("must start with http:// or https://")
    url = url.rstrip("/")
    authority = rest.split("/", 1)[0]
    if not authority:
        raise ValueError("has no host")
    if "[" in authority and "]" not in authority:
        raise ValueError("its IPv6 address misses the closing ']'")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"is not a URL ({exc})") from None
    host = parsed.host
    if not host:
        raise ValueError("has no host")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOSTNAME.match(host):
            raise ValueError(f"host '{host}' is not a host name or IP address") from None
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise ValueError(f"port {parsed.port} is not between 1 and 65535")
    if parsed.query or parsed.fragment:
        raise ValueError("must be a base URL, without ?query or #fragment")
    return url


def option_for(name: str) -> str:
    """The command-line option a field or knob name is typed as: index_k -> --index-k."""
    return "--" + name.replace("_", "-")


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
