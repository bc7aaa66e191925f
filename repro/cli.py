"""The `repro` command line. Thin on purpose: parse options, build a RunSpec, call one part.

Heavy imports (pandas, pyarrow, scipy, the harness) happen inside commands so `--help` is fast.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from repro import cli_options as o
from repro.errors import ReproError, UsageError

app = typer.Typer(
    help="Reproduce and bisect tool-call corruption in LLM serving under concurrency.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


@contextlib.contextmanager
def exit_on_error() -> Iterator[None]:
    """A ReproError becomes its one sentence on stderr and its exit code; anything else is a bug."""
    try:
        yield
    except ReproError as exc:
        # The sentence may hold [brackets] (TOML tables, JSON): never read it as rich markup.
        errors.print(f"[red]error:[/] {escape(str(exc))}", markup=True, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None


def _run(spec, out: Path | None):
    from repro.harness.progress import Progress
    from repro.harness.run import Interrupted, run
    from repro.results.report import render_summary

    try:
        with Progress(console, "repro run") as progress:
            summary = run(spec, out, progress)
    except Interrupted as stop:
        if stop.summary is not None:
            render_summary(stop.summary, Path(stop.summary.run_dir), console)
        errors.print(
            "interrupted: the run folder holds every turn finished before the interruption"
        )
        raise typer.Exit(stop.exit_code) from None
    render_summary(summary, Path(summary.run_dir), console)
    return summary


@app.command()
def run(
    sessions: o.Sessions = o.default("sessions"),
    concurrency: o.Concurrency = None,
    topology: o.Topology = None,
    hicache: o.HiCache = None,
    index_k: o.IndexK = None,
    topk_v2: o.TopkV2 = None,
    custom_kernels: o.CustomKernels = None,
    cuda_graph: o.CudaGraph = None,
    router: o.Router = None,
    knob: o.Knob = None,
    scenario: o.Scenario = o.default("scenario"),
    seed: o.Seed = o.default("seed"),
    context_max: o.ContextMax = o.default("context_max_tokens"),
    max_turns: o.MaxTurns = o.default("max_turns"),
    ramp_up: o.RampUp = o.default("ramp_up_s"),
    turn_timeout: o.TurnTimeout = o.default("turn_timeout_s"),
    stall_after: o.StallAfter = o.default("stall_after_s"),
    abort_rate: o.AbortRate = o.default("abort_rate"),
    out: o.Out = None,
    url: o.Url = None,
    backend: o.Backend = o.default("backend"),
    profile: o.ProfileOpt = None,
    model_path: o.ModelPath = None,
    settings: o.Settings = None,
    server_python: o.ServerPython = None,
    server_args: o.ServerArgs = None,
    port: o.Port = None,
    health_timeout: o.HealthTimeout = None,
    model: o.Model = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="print each role's exact argv and environment; start nothing"
        ),
    ] = False,
) -> None:
    """Launch the engine in one configuration, drive agent sessions, and score corruption."""
    with exit_on_error():
        spec = o.build_spec(**_spec_fields(locals(), exclude=("dry_run",)))
        if dry_run:
            from repro.harness.dry_run import render_plan
            from repro.harness.run import resolve

            plan = resolve(spec).plan
            if plan is None:
                raise UsageError(
                    "--dry-run has nothing to show with --url: repro launches nothing then."
                )
            print(render_plan(plan), end="")
            return
        _run(spec, out)


@app.command()
def gate(
    max_corruption: Annotated[
        str,
        typer.Option(
            "--max-corruption", help="corrupted turns allowed: a count (0, 3) or a percent (0.5%)"
        ),
    ] = "0",
    junit: Annotated[Path | None, typer.Option("--junit", help="also write JUnit XML here")] = None,
    sessions: o.Sessions = o.default("sessions"),
    concurrency: o.Concurrency = None,
    topology: o.Topology = None,
    hicache: o.HiCache = None,
    index_k: o.IndexK = None,
    topk_v2: o.TopkV2 = None,
    custom_kernels: o.CustomKernels = None,
    cuda_graph: o.CudaGraph = None,
    router: o.Router = None,
    knob: o.Knob = None,
    scenario: o.Scenario = o.default("scenario"),
    seed: o.Seed = o.default("seed"),
    context_max: o.ContextMax = o.default("context_max_tokens"),
    max_turns: o.MaxTurns = o.default("max_turns"),
    ramp_up: o.RampUp = o.default("ramp_up_s"),
    turn_timeout: o.TurnTimeout = o.default("turn_timeout_s"),
    stall_after: o.StallAfter = o.default("stall_after_s"),
    abort_rate: o.AbortRate = o.default("abort_rate"),
    out: o.Out = None,
    url: o.Url = None,
    backend: o.Backend = o.default("backend"),
    profile: o.ProfileOpt = None,
    model_path: o.ModelPath = None,
    settings: o.Settings = None,
    server_python: o.ServerPython = None,
    server_args: o.ServerArgs = None,
    port: o.Port = None,
    health_timeout: o.HealthTimeout = None,
    model: o.Model = None,
) -> None:
    """A run plus a verdict: exit 0 within --max-corruption, 1 above it, 2 on an engine error."""
    from repro.results.gate import Threshold, decide, gate_records, write_junit

    with exit_on_error():
        threshold = Threshold.parse(max_corruption)
        spec = o.build_spec(**_spec_fields(locals(), exclude=("max_corruption", "junit")))
        summary = _run(spec, out)
        verdict = decide(summary, threshold)
        if junit is not None:
            write_junit(junit, summary, gate_records(Path(summary.run_dir)), verdict)
        (console if verdict.exit_code == 0 else errors).print(verdict.message)
        raise typer.Exit(verdict.exit_code)


@app.command()
def preflight(
    topology: o.Topology = None,
    hicache: o.HiCache = None,
    index_k: o.IndexK = None,
    topk_v2: o.TopkV2 = None,
    custom_kernels: o.CustomKernels = None,
    cuda_graph: o.CudaGraph = None,
    router: o.Router = None,
    knob: o.Knob = None,
    backend: o.Backend = o.default("backend"),
    profile: o.ProfileOpt = None,
    model_path: o.ModelPath = None,
    settings: o.Settings = None,
    server_python: o.ServerPython = None,
    server_args: o.ServerArgs = None,
    port: o.Port = None,
) -> None:
    """Check every role's argv with the engine's own parser (SGLang: abbreviations off); start nothing."""
    from repro.harness.preflight import preflight as check
    from repro.harness.run import resolve

    with exit_on_error():
        resolved = resolve(o.build_spec(**_spec_fields(locals())))
        assert resolved.plan is not None
        print(check(resolved.plan, resolved.profile).summary())


@app.command()
def check(
    files: Annotated[
        list[Path], typer.Argument(help="raw completions: the text after the assistant tag")
    ],
    tools: Annotated[
        Path, typer.Option("--tools", help="the OpenAI `tools` list (JSON) the request carried")
    ],
    format: Annotated[str, typer.Option("--format", help="dsml-v32 | openai-parsed")] = "dsml-v32",
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON object per file per line")
    ] = False,
) -> None:
    """Check saved completions: exit 0 if every file is clean, 1 if any has a defect, 2 on bad input."""
    from repro.checkers.command import check_command

    with exit_on_error():
        raise typer.Exit(check_command(tools, files, format, as_json))


def _spec_fields(options: dict, exclude: tuple[str, ...] = ()) -> dict:
    """Command parameters to build_spec keywords (option names -> RunSpec field names)."""
    renames = {
        "ramp_up": "ramp_up_s",
        "turn_timeout": "turn_timeout_s",
        "stall_after": "stall_after_s",
    }
    renames |= {"health_timeout": "health_timeout_s"}
    skip = {"out", *exclude}
    return {renames.get(k, k): v for k, v in options.items() if k not in skip}


def _mount_bisect() -> None:
    from repro.bisect.commands import app as bisect_app

    app.add_typer(bisect_app, name="bisect")


_mount_bisect()


def main() -> None:  # pragma: no cover - console-script shim
    sys.exit(app())
