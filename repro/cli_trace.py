"""`repro trace check|import|export` and `repro record`: thin commands over repro.traces,
repro.record and the trace scenario; the orchestrator mounts `app` as `trace` and `record`
as a command of its own (docs/traces.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repro import cli_options as o
from repro.cli_options import exit_on_error
from repro.cli_output import console, print_error
from repro.cli_parsing import given_path
from repro.errors import EXIT_ERROR

app = typer.Typer(
    help="Recorded traces: check one, import one from ShareGPT or OpenAI logs, export the "
    "built-in agent as one (docs/traces.md).",
    no_args_is_help=True,
)

TraceFile = Annotated[
    Path, typer.Argument(help="a trace file (JSON Lines)", metavar="FILE", parser=given_path)
]
NewFile = Annotated[
    Path,
    typer.Argument(help="the trace to write (must not exist)", metavar="OUT", parser=given_path),
]
Redact = Annotated[
    list[str] | None,
    typer.Option(
        "--redact",
        help="a regular expression whose every match in message text (contents, reasoning, "
        "tool-call arguments) is written as [redacted] (repeatable)",
        show_default=False,
    ),
]


def _tools_usable(tools: list[dict]) -> str | None:
    """Whether the validity oracle can judge answers against these tools (its own reading)."""
    from repro.checkers import toolset_for

    try:
        toolset_for(tools)
    except (ValueError, TypeError, AttributeError) as exc:
        return str(exc)
    return None


@app.command()
def check(file: TraceFile) -> None:
    """Check a trace against the format: one sentence per problem, with its line and field;
    exit 0 when it can be replayed, 2 otherwise."""
    from repro.traces import check_trace

    with exit_on_error():
        trace, problems = check_trace(file, _tools_usable)
        for problem in problems:
            print_error(problem.sentence())
        if problems:
            count = f"{len(problems)}{'+' if len(problems) >= 1000 else ''}"
            print_error(f"{file}: {count} problem{'s' if len(problems) > 1 else ''}.")
            raise typer.Exit(EXIT_ERROR)
        turns = trace.turns
        sessions = len(trace.sessions)
        console.print(
            f"{file}: a valid trace: {sessions:,} session{'s' if sessions != 1 else ''}, "
            f"{turns:,} turns, {trace.tools_lists} tools list{'s' if trace.tools_lists != 1 else ''}.",
            markup=False,
            soft_wrap=True,
        )


@app.command("import")
def import_(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            help="sharegpt (conversations) or openai (chat logs: conversations or requests)",
        ),
    ],
    file: Annotated[
        Path, typer.Argument(help="the file to convert", metavar="FILE", parser=given_path)
    ],
    out: NewFile,
    redact: Redact = None,
) -> None:
    """Convert ShareGPT-style conversations or OpenAI chat logs into a trace."""
    from repro.traces import import_trace

    with exit_on_error():
        done = import_trace(source, file, out, tuple(redact or ()))
        console.print(
            f"{out}: {done.sessions:,} sessions, {done.turns:,} turns.",
            markup=False,
            soft_wrap=True,
        )


@app.command()
def export(
    out: NewFile,
    scenario: o.Scenario = o.default("scenario"),
    sessions: Annotated[
        int, typer.Option("--sessions", min=1, max=100_000, help="sessions to write")
    ] = 80,
    seed: o.Seed = o.default("seed"),
    context_max: o.ContextMax = None,
    thinking: Annotated[
        bool, typer.Option("--thinking/--no-thinking", help="keep the planned reasoning")
    ] = True,
) -> None:
    """Write a built-in scenario's sessions as a trace: the requests its scripted history
    sends with the same --seed, --context-max and --thinking."""
    from repro.scenarios.trace.export import export_scenario

    with exit_on_error():
        spec = o.build_spec(
            scenario=scenario, sessions=sessions, seed=seed, context_max=context_max
        )
        turns = export_scenario(
            spec.scenario, spec.sessions, spec.seed, spec.context_max_tokens, thinking, out
        )
        console.print(
            f"{out}: {sessions:,} sessions, {turns:,} turns.", markup=False, soft_wrap=True
        )


def _record_help(field: str) -> str:
    from repro.record.spec import RecordSpec

    return RecordSpec.model_fields[field].description or ""


def record(
    upstream: Annotated[str, typer.Option("--upstream", help=_record_help("upstream"))],
    port: Annotated[int, typer.Option("--port", help=_record_help("port"))],
    out: Annotated[Path, typer.Option("--out", help=_record_help("out"), parser=given_path)],
    host: Annotated[str, typer.Option("--host", help=_record_help("host"))] = "127.0.0.1",
    redact: Annotated[
        list[str] | None, typer.Option("--redact", help=_record_help("redact"), show_default=False)
    ] = None,
) -> None:
    """Record an agent's traffic: a proxy in front of any OpenAI-compatible engine that
    forwards everything untouched and writes each chat turn to a trace, grouped into
    sessions; runs until Ctrl-C or SIGTERM."""
    from repro.record import RecordSpec, serve

    with exit_on_error():
        spec = RecordSpec.build(
            upstream=upstream, port=port, out=out, host=host, redact=tuple(redact or ())
        )
        raise typer.Exit(serve(spec))
