"""The terminal summary of a run: rates with intervals, defects, errors, latency, throughput."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from repro.knobs import describe
from repro.results.stats import wilson
from repro.results.summary import RunSummary


def _ms(values: dict[str, float]) -> str:
    if not values:
        return "n/a"
    return " / ".join(f"{values[k] * 1000:,.0f}" for k in ("p50", "p90", "p99")) + " ms"


def render_summary(summary: RunSummary, run_dir: Path | None, console: Console) -> None:
    table = Table(title="repro run", show_header=False, title_justify="left", padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    sessions = wilson(summary.sessions_corrupted, summary.sessions)
    turns = wilson(summary.turns_corrupted, summary.turns)
    colour = "red" if summary.turns_corrupted else "green"
    table.add_row("configuration", describe(summary.config) or "(external engine)")
    table.add_row("engine", f"{summary.engine} at {summary.url}" if summary.url else summary.engine)
    table.add_row("sessions corrupted", f"[{colour}]{sessions}[/]  (95% Wilson interval)")
    table.add_row("turns corrupted", f"[{colour}]{turns}[/]")
    if summary.defects:
        table.add_row("defects", ", ".join(f"{k} {v}" for k, v in summary.defects.items()))
    errors = f"{summary.errors} errors" + (f" ({_outcomes(summary)})" if summary.errors else "")
    table.add_row(
        "errors", errors + (f", {summary.aborted} aborted on purpose" if summary.aborted else "")
    )
    if summary.wedge:
        table.add_row("[red]WEDGE[/]", f"[red]{summary.wedge}[/]")
    if summary.error:
        table.add_row("[red]engine error[/]", f"[red]{summary.error.splitlines()[0]}[/]")
    if summary.interrupted:
        table.add_row(
            "[yellow]interrupted[/]",
            "[yellow]yes: the figures cover the turns finished before Ctrl-C[/]",
        )
    table.add_row(
        "context",
        f"max prompt {summary.max_prompt_tokens:,} tokens; "
        f"{summary.sessions_reaching_60k} of {summary.sessions_started} sessions reached 60k",
    )
    latency = summary.latency_s
    table.add_row("TTFT p50/p90/p99", _ms(latency.get("ttft", {})))
    table.add_row("end-to-end p50/p90/p99", _ms(latency.get("e2e", {})))
    table.add_row(
        "throughput",
        f"{summary.output_tokens_per_s:,.0f} output tokens/s over {summary.wall_s:,.0f} s",
    )
    if summary.client_was_slow:
        table.add_row(
            "[yellow]client[/]",
            f"[yellow]send lag p99 {summary.send_lag_p99_s:.2f} s: repro was a bottleneck[/]",
        )
    if run_dir is not None:
        table.add_row("run folder", str(run_dir))
    console.print(table)


def _outcomes(summary: RunSummary) -> str:
    return ", ".join(
        f"{k} {v}" for k, v in summary.outcomes.items() if k not in ("ok", "aborted", "cancelled")
    )
