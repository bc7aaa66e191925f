"""What the commands share: their options, how those become a RunSpec, and error reporting.

Help texts and defaults are read from RunSpec's fields, so `--help`, spec.json and the code
cannot disagree. Knob options default to None: the profile (or the story) decides.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import shlex
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from repro.cli_output import print_error
from repro.cli_parsing import finite, given_path
from repro.errors import ReproError, UsageError
from repro.harness import RUN_DEFAULT_FIELDS
from repro.knobs import STORY_DEFAULTS, parse_assignments
from repro.spec import MAX_OUTPUT_TOKENS_LIMIT, RunSpec, option_for

RUN = "Run"
ENGINE = "Engine"
# A profile defines its own knobs, values and defaults; these options are the story's common
# ones, so the panel says where the rest are listed.
KNOBS = "Knobs: the story's common ones; `repro profile show` lists every knob of a profile"
SLURM = "Placement on Slurm (docs/slurm.md)"
ORACLE = "Oracle (how turns are judged)"


def _field(name: str) -> Any:
    return RunSpec.model_fields[name]


# RunSpec field -> the option that sets it, so a refused value is named as the user typed it.
OPTION_OF: dict[str, str] = {"context_max_tokens": "--context-max"}


def _opt(flag: str, field: str, panel: str = RUN, **kwargs: Any) -> Any:
    OPTION_OF[field] = flag.split("/")[0]
    if field in RUN_DEFAULT_FIELDS:  # the option defaults to None: the profile may fill it
        shown = _field(field).default
        shown = ("on" if shown else "off") if isinstance(shown, bool) else shown
        kwargs["show_default"] = f"{shown}, or the profile's [run]"
    return typer.Option(flag, help=_field(field).description, rich_help_panel=panel, **kwargs)


def _knob(flag: str, knob: str, values: str) -> Any:
    return typer.Option(
        flag,
        help=f"{values} (story default {STORY_DEFAULTS[knob]}; a profile may differ)",
        rich_help_panel=KNOBS,
        show_default=False,
    )


def default(field: str) -> Any:
    return _field(field).default


Sessions = Annotated[int, _opt("--sessions", "sessions", min=1, max=100_000)]
Concurrency = Annotated[int | None, _opt("--concurrency", "concurrency", min=1, show_default=False)]
Scenario = Annotated[str, _opt("--scenario", "scenario")]
Seed = Annotated[int, _opt("--seed", "seed", min=0)]
ContextMax = Annotated[
    int | None, _opt("--context-max", "context_max_tokens", min=4000, max=1_000_000)
]
MaxTurns = Annotated[int | None, _opt("--max-turns", "max_turns", min=1)]
MaxTokens = Annotated[
    int | None, _opt("--max-tokens", "max_output_tokens", min=16, max=MAX_OUTPUT_TOKENS_LIMIT)
]
RampUp = Annotated[float, _opt("--ramp-up", "ramp_up_s", **finite(min=0))]
Workers = Annotated[int | None, _opt("--workers", "workers", min=1, max=64, show_default=False)]
TurnTimeout = Annotated[float | None, _opt("--turn-timeout", "turn_timeout_s", **finite(min=0.001))]
StallAfter = Annotated[float | None, _opt("--stall-after", "stall_after_s", **finite(min=0.001))]
Thinking = Annotated[bool | None, _opt("--thinking/--no-thinking", "thinking")]
AbortRate = Annotated[float, _opt("--abort-rate", "abort_rate", **finite(min=0, max=1))]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="run folder (default: a new folder in runs/, named by its time and configuration)",
        rich_help_panel=RUN,
        parser=given_path,
    ),
]

Url = Annotated[str | None, _opt("--url", "url", ENGINE, show_default=False)]
Backend = Annotated[str | None, _opt("--backend", "backend", ENGINE, show_default="sim")]
ProfileOpt = Annotated[
    Path | None, _opt("--profile", "profile", ENGINE, show_default=False, parser=given_path)
]
ModelPath = Annotated[
    str | None,
    typer.Option(
        "--model-path", help="model path or HF id (SGLang profiles)", rich_help_panel=ENGINE
    ),
]
Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="profile setting KEY=VALUE (repeatable); `repro profile show` lists them",
        rich_help_panel=ENGINE,
        show_default=False,
    ),
]
ServerPython = Annotated[
    str | None, _opt("--server-python", "server_python", ENGINE, show_default=False)
]
ServerArgs = Annotated[
    str | None,
    typer.Option(
        "--server-args",
        help="extra flags for every engine role, one string",
        rich_help_panel=ENGINE,
    ),
]
Port = Annotated[int | None, _opt("--port", "port", ENGINE, show_default=False)]
HealthTimeout = Annotated[
    float | None,
    _opt("--health-timeout", "health_timeout_s", ENGINE, show_default=False, **finite(min=0.001)),
]
Model = Annotated[str | None, _opt("--model", "model", ENGINE, show_default=False)]

Launcher = Annotated[str, _opt("--launcher", "launcher", SLURM)]
Nodes = Annotated[int | None, _opt("--nodes", "nodes", SLURM, min=1, show_default=False)]
Partition = Annotated[str | None, _opt("--partition", "partition", SLURM, show_default=False)]
Account = Annotated[str | None, _opt("--account", "account", SLURM, show_default=False)]
TimeLimit = Annotated[str | None, _opt("--time", "time_limit", SLURM, show_default=False)]
OracleOpt = Annotated[
    str | None,
    _opt(
        "--oracle",
        "oracle",
        ORACLE,
        show_default=False,
        metavar="validity|divergence|both[,stream]",
    ),
]
StreamSample = Annotated[str, _opt("--stream-sample", "stream_sample", ORACLE, metavar="all|SHARE")]
Mix = Annotated[
    list[str] | None,
    typer.Option(
        "--mix",
        help=_field("mix").description,
        rich_help_panel=RUN,
        show_default=False,
        metavar="SHAPES",
    ),
]
OPTION_OF["mix"] = "--mix"
ReplayConcurrency = Annotated[
    str, _opt("--replay-concurrency", "replay_concurrency", ORACLE, metavar="auto|N")
]
ReferenceKnob = Annotated[
    list[str] | None,
    typer.Option(
        "--reference-knob",
        help=_field("reference_knobs").description,
        rich_help_panel=ORACLE,
        show_default=False,
    ),
]
OPTION_OF["reference_knobs"] = "--reference-knob"
History = Annotated[
    str | None, _opt("--history", "history", ORACLE, show_default=False, metavar="live|scripted")
]
ReplaySample = Annotated[
    str, _opt("--replay-sample", "replay_sample", ORACLE, metavar="all|auto|N")
]
ReferenceUrl = Annotated[
    list[str] | None,
    typer.Option(
        "--reference-url",
        help=_field("reference_urls").description + " (repeatable)",
        rich_help_panel=ORACLE,
        show_default=False,
    ),
]
OPTION_OF["reference_urls"] = "--reference-url"
ReferenceEngines = Annotated[
    int, _opt("--reference-engines", "reference_engines", ORACLE, min=0, max=64)
]
TopLogprobs = Annotated[int | None, _opt("--top-logprobs", "top_logprobs", ORACLE, min=0, max=20)]
NumericalMargin = Annotated[
    float | None, _opt("--numerical-margin", "numerical_margin_nats", ORACLE, **finite(min=0.0001))
]

Topology = Annotated[str | None, _knob("--topology", "topology", "single | pd")]
HiCache = Annotated[str | None, _knob("--hicache", "hicache", "on | off")]
IndexK = Annotated[str | None, _knob("--index-k", "index_k", "fp8 | bf16")]
TopkV2 = Annotated[str | None, _knob("--topk-v2", "topk_v2", "on | off")]
CustomKernels = Annotated[str | None, _knob("--custom-kernels", "custom_kernels", "on | off")]
CudaGraph = Annotated[
    str | None, _knob("--cuda-graph", "cuda_graph", "on | off (off = eager decode)")
]
Router = Annotated[
    str | None,
    typer.Option(
        "--router",
        help="repro | sglang: which PD router fronts the embedded engine's workers",
        rich_help_panel=KNOBS,
    ),
]
Knob = Annotated[
    list[str] | None,
    typer.Option(
        "--knob",
        help="any knob the profile defines, NAME=VALUE (repeatable); `repro profile show` "
        "lists them with their values and defaults",
        rich_help_panel=KNOBS,
    ),
]


def build_spec(
    *,
    topology: str | None = None,
    hicache: str | None = None,
    index_k: str | None = None,
    topk_v2: str | None = None,
    custom_kernels: str | None = None,
    cuda_graph: str | None = None,
    router: str | None = None,
    knob: list[str] | None = None,
    settings: list[str] | None = None,
    model_path: str | None = None,
    server_args: str | None = None,
    context_max: int | None = None,
    reference_url: list[str] | None = None,
    numerical_margin: float | None = None,
    oracle: str | None = None,
    mix: list[str] | None = None,
    reference_knob: list[str] | None = None,
    **fields: Any,
) -> RunSpec:
    """Options to RunSpec: knob options and --knob merge (a knob given two values is refused)."""
    if fields.get("backend") is not None and fields.get("profile") is not None:
        raise UsageError(
            "--backend picks a bundled profile and --profile names one; give one of them."
        )
    knobs = parse_assignments(knob or [])
    named = {"topology": topology, "hicache": hicache, "index_k": index_k, "topk_v2": topk_v2}
    named |= {"custom_kernels": custom_kernels, "cuda_graph": cuda_graph, "router": router}
    for name, value in named.items():
        if value is None:
            continue
        if knobs.get(name, value) != value:
            option = option_for(name)
            raise UsageError(
                f"{name} is given twice ({option} {value}, --knob {name}={knobs[name]}); "
                "give it once."
            )
        knobs[name] = value
    chosen: dict[str, str] = {}
    for item in settings or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set '{item}' is not KEY=VALUE.")
        chosen[key.strip()] = value
    if model_path is not None:
        chosen["model_path"] = model_path
    try:
        extra = tuple(shlex.split(server_args or ""))
    except ValueError as exc:
        raise UsageError(f"--server-args cannot be split like a shell line: {exc}.") from None
    judged_by, stream = _oracles(oracle)
    return RunSpec.build(
        OPTION_OF,
        knobs=knobs,
        settings=chosen,
        server_args=extra,
        context_max_tokens=context_max,
        reference_urls=tuple(reference_url or ()),
        numerical_margin_nats=numerical_margin,
        oracle=judged_by,
        stream_oracle=stream or None,
        mix=tuple(mix or ()),
        reference_knobs=parse_assignments(reference_knob or []),
        **fields,
    )


def _oracles(given: str | None) -> tuple[str | None, bool]:
    """--oracle's value: the main oracle (None: the profile's) and whether stream is in it."""
    if given is None:
        return None, False
    names = [n.strip() for n in given.split(",")]
    stream = "stream" in names
    rest = [n for n in names if n != "stream"]
    if len(rest) > 1 or names.count("stream") > 1 or "" in names:
        raise UsageError(
            f"--oracle {given}: give one of validity, divergence, both, none, optionally "
            "with stream (e.g. divergence,stream), or stream alone."
        )
    if rest:
        return rest[0], stream
    return "none", stream


# Option groups: keyword (as build_spec takes it) -> (annotated type, default).
LOAD = {
    "sessions": (Sessions, default("sessions")),
    "concurrency": (Concurrency, None),
    "scenario": (Scenario, default("scenario")),
    "seed": (Seed, default("seed")),
    "context_max": (ContextMax, None),
    "max_turns": (MaxTurns, None),
    "max_output_tokens": (MaxTokens, None),
    "thinking": (Thinking, None),
    "ramp_up_s": (RampUp, default("ramp_up_s")),
    "workers": (Workers, None),
    "turn_timeout_s": (TurnTimeout, None),
    "stall_after_s": (StallAfter, None),
    "abort_rate": (AbortRate, default("abort_rate")),
    "mix": (Mix, None),
}
ORACLE_OPTIONS = {
    "oracle": (OracleOpt, None),
    "stream_sample": (StreamSample, default("stream_sample")),
    "replay_concurrency": (ReplayConcurrency, default("replay_concurrency")),
    "reference_knob": (ReferenceKnob, None),
    "history": (History, None),
    "replay_sample": (ReplaySample, default("replay_sample")),
    "reference_url": (ReferenceUrl, None),
    "reference_engines": (ReferenceEngines, default("reference_engines")),
    "top_logprobs": (TopLogprobs, None),
    "numerical_margin": (NumericalMargin, None),
}
KNOB_OPTIONS = {
    "topology": (Topology, None),
    "hicache": (HiCache, None),
    "index_k": (IndexK, None),
    "topk_v2": (TopkV2, None),
    "custom_kernels": (CustomKernels, None),
    "cuda_graph": (CudaGraph, None),
    "router": (Router, None),
    "knob": (Knob, None),
}
ENGINE_OPTIONS = {
    "url": (Url, None),
    "backend": (Backend, None),
    "profile": (ProfileOpt, None),
    "model_path": (ModelPath, None),
    "settings": (Settings, None),
    "server_python": (ServerPython, None),
    "server_args": (ServerArgs, None),
    "port": (Port, None),
    "health_timeout_s": (HealthTimeout, None),
    "model": (Model, None),
    # Where the roles run: every command that launches an engine takes these.
    "launcher": (Launcher, default("launcher")),
    "nodes": (Nodes, None),
    "partition": (Partition, None),
    "account": (Account, None),
    "time_limit": (TimeLimit, None),
}


def with_options(
    *groups: dict[str, tuple[Any, Any]],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a typer command the shared options, declared once here.

    The command declares its own options as usual plus one parameter `options`, which
    receives the shared ones as a dict ready for `build_spec(**options)`. A shared option
    the command declares itself (e.g. a different --sessions help) is left to the command.
    """

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(func, include_extras=True)
        own = [
            p.replace(
                kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation)
            )
            for p in inspect.signature(func).parameters.values()
            if p.name != "options"
        ]
        names = {p.name for p in own}
        shared = {k: v for group in groups for k, v in group.items() if k not in names}
        params = own + [
            inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
            for k, (a, d) in shared.items()
        ]

        @functools.wraps(func)
        def command(**kwargs: Any) -> Any:
            return func(options={k: kwargs.pop(k) for k in shared}, **kwargs)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return decorate


@contextlib.contextmanager
def exit_on_error() -> Iterator[None]:
    """A ReproError becomes its one sentence on stderr and its exit code; anything else is a bug."""
    try:
        yield
    except ReproError as exc:
        print_error(str(exc), exc.label)
        raise typer.Exit(exc.exit_code) from None
    except OSError as exc:
        if exc.filename is None:  # not about a path the user gave: a bug, with its traceback
            raise
        # A path the user gave cannot be read or written (a missing folder, no permission).
        print_error(f"Cannot use {exc.filename}: {exc.strerror}.")
        raise typer.Exit(UsageError.exit_code) from None


def one_line_summaries(app: typer.Typer) -> None:
    """Each command's listing in `--help` as one flowing sentence: Typer's command table keeps
    the line breaks of a docstring wrapped at 100 columns, which reads as broken text."""
    for info in app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.callback else None
        if info.short_help is None and info.help is None and doc:
            info.short_help = " ".join(doc.split("\n\n", 1)[0].split())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            one_line_summaries(group.typer_instance)
