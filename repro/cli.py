"""The `repro` command line. Thin on purpose: parse options, build a RunSpec, call one part.

Heavy imports (pandas, pyarrow, scipy, the harness) happen inside commands so `--help` is fast.
The options `run`, `gate`, `preflight` and `bisect` share are declared once, in cli_options.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from repro import cli_options as o
from repro.cli_options import exit_on_error
from repro.cli_output import console, errors
from repro.cli_parsing import OneLineParseErrors, given_path
from repro.errors import UsageError
from repro.spec import RUNS_DIR

if TYPE_CHECKING:
    from repro.results import RunSummary
    from repro.spec import RunSpec

app = typer.Typer(
    cls=OneLineParseErrors,
    help="Reproduce and bisect tool-call corruption in LLM serving under concurrency.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        print(f"repro {version('repro')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="print repro's version and exit"
        ),
    ] = False,
) -> None:
    """Reproduce and bisect tool-call corruption in LLM serving under concurrency."""


DryRun = Annotated[
    bool,
    typer.Option("--dry-run", help="print each role's exact argv and environment; start nothing"),
]
MaxCorruption = Annotated[
    str,
    typer.Option(
        "--max-corruption", help="corrupted turns allowed: a count (0, 3) or a percent (0.5%)"
    ),
]
Junit = Annotated[
    Path | None, typer.Option("--junit", help="also write JUnit XML here", parser=given_path)
]
Html = Annotated[
    Path | None,
    typer.Option(
        "--html",
        help="also write a self-contained HTML page here: the summary, and plots of corruption "
        "vs context length and vs concurrency, latency percentiles, and a timeline of errors",
        parser=given_path,
    ),
]


AsJson = Annotated[
    bool,
    typer.Option("--json", help="print the summary as JSON on stdout (progress goes to stderr)"),
]


def _run(
    spec: RunSpec, out: Path | None, *, as_json: bool = False, show: bool = True
) -> RunSummary:
    """The run with its live panel, then its summary (as JSON on stdout with `as_json`); shown
    too when a signal stopped it. `show=False` leaves the printing to the caller."""
    from repro.harness import Interrupted, Progress, run
    from repro.results import render_summary

    def display(summary: RunSummary) -> None:
        if not show:
            return
        if as_json:
            console.print_json(data=summary.to_dict())
        else:
            render_summary(summary, Path(summary.run_dir), console)

    try:
        with Progress(errors if as_json else console, "repro run") as progress:
            summary = run(spec, out, progress)
    except Interrupted as stop:
        display(stop.summary)
        raise
    display(summary)
    return summary


@app.command()
@o.with_options(o.LOAD, o.ORACLE_OPTIONS, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def run(
    options: dict[str, Any], out: o.Out = None, dry_run: DryRun = False, as_json: AsJson = False
) -> None:
    """Launch the engine in one configuration, drive agent sessions, and score corruption."""
    with exit_on_error():
        spec = o.build_spec(**options)
        if not dry_run:
            from repro.harness import unvouched

            if (problem := unvouched(_run(spec, out, as_json=as_json))) is not None:
                raise problem  # README: exit 2
            return
        from repro.harness import render_plan, resolve

        plan = resolve(spec).plan
        if plan is None:
            raise UsageError(
                "--dry-run has nothing to show with --url: repro launches nothing then."
            )
        print(render_plan(plan), end="")


@app.command()
@o.with_options(o.LOAD, o.ORACLE_OPTIONS, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def gate(
    options: dict[str, Any],
    max_corruption: MaxCorruption = "0",
    junit: Junit = None,
    out: o.Out = None,
    as_json: AsJson = False,
) -> None:
    """A run plus a verdict: exit 1 when corruption is above --max-corruption (even if some
    turns failed), 2 when the run cannot decide (engine error, wedge, failed turns, no turn
    judged, an error of repro's own), 130 when interrupted, 0 otherwise. --junit is written on
    every way out."""
    from repro.cli_gate import deliver
    from repro.harness import RunStopped
    from repro.results import Threshold, check_junit_path, decide, junit_on_error

    with exit_on_error():
        if junit is not None:
            check_junit_path(junit, out)
        with junit_on_error(junit):  # a ReproError, a bug or Ctrl-C before a verdict
            threshold = Threshold.parse(max_corruption)
            spec = o.build_spec(**options)
            try:
                summary = _run(spec, out, as_json=as_json, show=False)
            except RunStopped as stop:  # an engine error, a bug or a signal: judged all the same
                summary = stop.summary
        raise typer.Exit(deliver(decide(summary, threshold), summary, junit, as_json))


@app.command()
@o.with_options(o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def preflight(options: dict[str, Any]) -> None:
    """Check every role's argv with the engine's own parser (SGLang: abbreviations off), and with
    --launcher slurm the Slurm side (commands, partition, nodes); start nothing."""
    from repro.harness import check_launcher, resolve
    from repro.harness import preflight_plan as check

    with exit_on_error():
        spec = o.build_spec(**options)
        resolved = resolve(spec)
        if resolved.plan is None:
            raise UsageError(
                "preflight checks what repro would launch; with --url it launches nothing."
            )
        where = check_launcher(spec, resolved.profile, resolved.config)  # Slurm: before submitting
        print("\n".join([*where, check(resolved.plan, resolved.profile).summary()]))


@app.command()
def check(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="raw completions: the text after the assistant tag",
            metavar="FILE",
            parser=given_path,
        ),
    ],
    tools: Annotated[
        Path,
        typer.Option(
            "--tools",
            help="the OpenAI `tools` list (JSON) the request carried",
            parser=given_path,
        ),
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


@app.command()
def report(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="a run folder (works on an interrupted or crashed run too)",
            metavar="RUN_DIR",
            parser=given_path,
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    html: Html = None,
) -> None:
    """Summarise a run folder again, recomputed from its turns.parquet; --html for a page."""
    from repro.results import read_run, render_summary

    with exit_on_error():
        folder = read_run(run_dir)
        if folder.turns_missing:
            errors.print(
                f"warning: summary.json counted {folder.turns_missing} turns more than "
                f"{run_dir / 'turns.parquet'} holds (a part is lost); the figures cover the rest.",
                markup=False,
                soft_wrap=True,
            )
        if html is not None:
            from repro.results import write_html_report

            write_html_report(folder, html)
        if as_json:
            console.print_json(data=folder.summary.to_dict())
        else:
            render_summary(folder.summary, run_dir, console)


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="run folder A", metavar="A", parser=given_path)],
    b: Annotated[Path, typer.Argument(help="run folder B", metavar="B", parser=given_path)],
    as_json: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
) -> None:
    """Test two runs against each other: corruption rates, intervals, Fisher's exact test."""
    from repro.results import (
        compare_rates,
        comparison_document,
        comparison_table,
        load_differences,
        read_run,
    )

    with exit_on_error():
        if a.resolve() == b.resolve():
            raise UsageError(f"A and B are the same run folder ({a}); give two runs.")
        run_a, run_b = read_run(a), read_run(b)
        first, second = run_a.summary, run_b.summary
        rows = compare_rates(first, second)
        load = load_differences(run_a.spec, run_b.spec)
        if as_json:
            console.print_json(data=comparison_document(first, second, rows, load))
        else:
            console.print(comparison_table(first, second, rows, load))


profile_app = typer.Typer(help="Launch profiles: what one defines.", no_args_is_help=True)
app.add_typer(profile_app, name="profile")


@profile_app.command("show")
def profile_show(
    profile: o.ProfileOpt = None,
    backend: o.Backend = None,
    as_json: Annotated[bool, typer.Option("--json", help="print it as JSON")] = False,
) -> None:
    """A profile's roles (argv template, health URL), knobs (values, defaults, what each value
    does) and settings (defaults, how to set them). See docs/profiles.md."""
    from repro.harness import load_profile, profile_document, render_profile

    with exit_on_error():
        loaded = load_profile(o.build_spec(profile=profile, backend=backend).profile_path())
        if as_json:
            console.print_json(data=profile_document(loaded))
        else:
            render_profile(loaded, console)


def _proxy_help(field: str) -> str:
    from repro.proxy.spec import ProxySpec

    return ProxySpec.model_fields[field].description or ""


@app.command()
def proxy(
    upstream: Annotated[str, typer.Option("--upstream", help=_proxy_help("upstream"))],
    port: Annotated[int, typer.Option("--port", help=_proxy_help("port"))],
    host: Annotated[str, typer.Option("--host", help=_proxy_help("host"))] = "127.0.0.1",
    rule: Annotated[str, typer.Option("--rule", help=_proxy_help("rule"))] = "off",
    min_streams: Annotated[int, typer.Option("--min-streams", help=_proxy_help("min_streams"))] = 2,
    rate: Annotated[float, typer.Option("--rate", help=_proxy_help("rate"))] = 0.05,
    seed: Annotated[int, typer.Option("--seed", help=_proxy_help("seed"))] = 0,
    span_bytes: Annotated[int, typer.Option("--span-bytes", help=_proxy_help("span_bytes"))] = 24,
    target: Annotated[str, typer.Option("--target", help=_proxy_help("target"))] = "calls",
    log: Annotated[str, typer.Option("--log", help=_proxy_help("log"))] = "-",
) -> None:
    """The positive control: a proxy in front of any OpenAI-compatible engine that corrupts SSE
    streams on purpose under a rule and logs every injection; runs until Ctrl-C or SIGTERM."""
    from repro.proxy import ProxySpec, serve

    with exit_on_error():
        spec = ProxySpec.build(
            upstream=upstream, port=port, host=host, rule=rule, min_streams=min_streams,
            rate=rate, seed=seed, span_bytes=span_bytes, target=target, log=log,
        )  # fmt: skip
        raise typer.Exit(serve(spec))


SweepSessions = Annotated[
    str,
    typer.Option("--sessions", help="session counts, one run each (all in flight), e.g. 1,10,80"),
]
SweepContexts = Annotated[
    str, typer.Option("--context-max", help="prompt ceilings to cross with them, e.g. 16000,80000")
]
SweepOut = Annotated[
    Path,
    typer.Option(
        "--out",
        help="output folder; points and the table go to <out>/sweep/",
        parser=given_path,
    ),
]


@app.command()
@o.with_options(o.LOAD, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def sweep(
    options: dict[str, Any],
    sessions: SweepSessions = "1,10,20,40,60,80",
    context_max: SweepContexts = "80000",
    out: SweepOut = RUNS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="print the table as JSON")] = False,
) -> None:
    """One run per point (sessions x --context-max): a table of session and turn rates with
    Wilson intervals, a parquet file and an HTML page with the curves. Rerun to resume."""
    from repro.harness import Interrupted
    from repro.sweep import SweepPlan, parse_counts, render_table, run_sweep

    with exit_on_error():
        plan = SweepPlan.build(
            run=o.build_spec(**options),
            sessions=parse_counts(sessions, "--sessions"),
            contexts_tokens=parse_counts(context_max, "--context-max"),
            out_dir=out,
        )
        try:
            result = run_sweep(plan, errors if as_json else console)
        except Interrupted as stop:
            errors.print("interrupted: finished points are kept; the same command resumes")
            raise typer.Exit(stop.exit_code) from None
        if as_json:
            console.print_json(data=result.to_json())
            return
        render_table(result.rows, console)
        console.print(f"table {result.parquet}\npage  {result.page}")


def _mount_bisect() -> None:
    from repro.cli_bisect import app as bisect_app

    app.add_typer(bisect_app, name="bisect")


def _mount_traces() -> None:
    from repro.cli_trace import app as trace_app
    from repro.cli_trace import record

    app.command()(record)
    app.add_typer(trace_app, name="trace")


_mount_bisect()
_mount_traces()
o.one_line_summaries(app)
