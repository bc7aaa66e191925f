"""The `repro` command line. Thin on purpose: parse options, build a RunSpec, call one part.

Heavy imports (pandas, pyarrow, scipy, the harness) happen inside commands so `--help` is fast.
The options `run`, `gate`, `preflight` and `bisect` share are declared once, in cli_options.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from repro import cli_options as o
from repro.cli_options import console, errors, exit_on_error
from repro.errors import EngineError, UsageError

if TYPE_CHECKING:
    from repro.results.summary import RunSummary
    from repro.spec import RunSpec

app = typer.Typer(
    help="Reproduce and bisect tool-call corruption in LLM serving under concurrency.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

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
Junit = Annotated[Path | None, typer.Option("--junit", help="also write JUnit XML here")]
Html = Annotated[
    Path | None,
    typer.Option(
        "--html",
        help="also write a self-contained HTML page here: the summary, and plots of corruption "
        "vs context length and vs concurrency, latency percentiles, and a timeline of errors",
    ),
]


def _run(spec: RunSpec, out: Path | None) -> RunSummary:
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
@o.with_options(o.LOAD, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def run(options: dict[str, Any], out: o.Out = None, dry_run: DryRun = False) -> None:
    """Launch the engine in one configuration, drive agent sessions, and score corruption."""
    with exit_on_error():
        spec = o.build_spec(**options)
        if not dry_run:
            if (wedge := _run(spec, out).wedge) is not None:  # README: a wedged engine is exit 2
                raise EngineError(f"Wedged: {wedge}.")
            return
        from repro.harness.dry_run import render_plan
        from repro.harness.run import resolve

        plan = resolve(spec).plan
        if plan is None:
            raise UsageError(
                "--dry-run has nothing to show with --url: repro launches nothing then."
            )
        print(render_plan(plan), end="")


@app.command()
@o.with_options(o.LOAD, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def gate(
    options: dict[str, Any],
    max_corruption: MaxCorruption = "0",
    junit: Junit = None,
    out: o.Out = None,
) -> None:
    """A run plus a verdict: exit 0 within --max-corruption, 1 above it, 2 when the run cannot
    vouch (engine error, wedge, failed turns, no turn judged)."""
    from repro.results.gate import Threshold, decide, gate_records, write_junit
    from repro.results.store import check_output_file

    with exit_on_error():
        threshold = Threshold.parse(max_corruption)
        if junit is not None:
            check_output_file("--junit", junit)
        summary = _run(o.build_spec(**options), out)
        verdict = decide(summary, threshold)
        if junit is not None:
            write_junit(junit, summary, gate_records(Path(summary.run_dir)), verdict)
        (console if verdict.exit_code == 0 else errors).print(verdict.message, markup=False)
        raise typer.Exit(verdict.exit_code)


@app.command()
@o.with_options(o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def preflight(options: dict[str, Any]) -> None:
    """Check every role's argv with the engine's own parser (SGLang: abbreviations off); start nothing."""
    from repro.harness.preflight import preflight as check
    from repro.harness.run import resolve

    with exit_on_error():
        resolved = resolve(o.build_spec(**options))
        if resolved.plan is None:
            raise UsageError(
                "preflight checks what repro would launch; with --url it launches nothing."
            )
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


@app.command()
def report(
    run_dir: Annotated[
        Path, typer.Argument(help="a run folder (works on an interrupted or crashed run too)")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    html: Html = None,
) -> None:
    """Summarise a run folder again, recomputed from its turns.parquet; --html for a page."""
    from repro.results.reading import read_run
    from repro.results.report import render_summary

    with exit_on_error():
        folder = read_run(run_dir)
        if html is not None:
            from repro.results.html_report import write_html_report

            write_html_report(folder, html)
        if as_json:
            console.print_json(data=folder.summary.to_dict())
        else:
            render_summary(folder.summary, run_dir, console)


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="run folder A")],
    b: Annotated[Path, typer.Argument(help="run folder B")],
) -> None:
    """Test two runs against each other: corruption rates, intervals, Fisher's exact test."""
    from repro.results.compare import compare as compare_runs
    from repro.results.compare import render_comparison
    from repro.results.reading import read_run

    with exit_on_error():
        first, second = read_run(a).summary, read_run(b).summary
        render_comparison(first, second, compare_runs(first, second), console)


SweepSessions = Annotated[
    str,
    typer.Option("--sessions", help="session counts, one run each (all in flight), e.g. 1,10,80"),
]
SweepContexts = Annotated[
    str, typer.Option("--context-max", help="prompt ceilings to cross with them, e.g. 16000,80000")
]
SweepOut = Annotated[
    Path, typer.Option("--out", help="results folder; points and the table go to <out>/sweep/")
]


@app.command()
@o.with_options(o.LOAD, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def sweep(
    options: dict[str, Any],
    sessions: SweepSessions = "1,10,20,40,60,80",
    context_max: SweepContexts = "80000",
    out: SweepOut = Path("results"),
    as_json: Annotated[bool, typer.Option("--json", help="print the table as JSON")] = False,
) -> None:
    """One run per point (sessions x --context-max): a table of session and turn rates with
    Wilson intervals, a parquet file and an HTML page with the curves. Rerun to resume."""
    from repro.harness.run import Interrupted
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
    from repro.bisect.commands import app as bisect_app

    app.add_typer(bisect_app, name="bisect")


_mount_bisect()
