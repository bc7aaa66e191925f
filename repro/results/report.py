"""The summary of a run as labelled rows (rates with intervals, defects, errors, latency,
throughput), and their terminal rendering; the HTML page shows the same rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from repro.knobs import describe
from repro.results.pace import SLOW_PACE, slow_roles
from repro.results.shape_view import describe_in_flight
from repro.results.stats import wilson
from repro.results.summary import UNFINISHED, RunSummary


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One line of the summary; `tone` (red, green, yellow or "") colours it in either medium."""

    label: str
    text: str
    tone: str = ""


def _context(summary: RunSummary) -> str:
    """The largest prompt, and how many sessions got to a long context (60k tokens unless
    the summary says otherwise); that count is left out for runs whose prompts never got
    there (a short --context-max), where it says nothing."""
    text = f"max prompt {summary.max_prompt_tokens:,} tokens"
    long = summary.long_context_tokens
    if summary.max_prompt_tokens < long:
        return text
    reached = f"{long // 1000}k" if long % 1000 == 0 else f"{long:,} tokens"
    return (
        f"{text}; {summary.sessions_reaching_long_context} of {summary.sessions_started} "
        f"sessions reached {reached}"
    )


def _ms(values: dict[str, float]) -> str:
    if not values:
        return "n/a"
    return " / ".join(f"{values[k] * 1000:,.0f}" for k in ("p50", "p90", "p99")) + " ms"


def _oracle_rows(summary: RunSummary) -> list[SummaryRow]:
    """What judged the turns, how much the replay covered, and what it found."""
    d = summary.divergence
    if summary.oracle in ("validity", "none"):
        return []
    how = {
        "divergence": "divergence only: each turn against the same request replayed alone",
        "both": "validity on every turn, and divergence on each replayed turn",
    }[summary.oracle]
    rows = [SummaryRow("oracle", f"{how}, on {d.get('reference') or 'no reference'}")]
    done = d.get("sessions_replayed", 0)
    sessions, turns = d.get("sessions_with_turns", 0), d.get("turns_with_outcome_ok", 0)
    covered = f"{done} of {sessions} sessions ({d.get('turns_replayed', 0):,} of {turns:,} turns)"
    took = f"in {d.get('wall_s', 0):,.0f} s"
    if d.get("load_wall_s"):
        took += f" (the load: {d['load_wall_s']:,.0f} s)"
    stopped = d.get("stopped", "")
    if not stopped and done >= sessions:
        rows.append(SummaryRow("replay", f"all {covered}, {took}"))
    else:
        if stopped == "interrupted":
            what = f"interrupted after {covered}"
        elif not d.get("sessions_planned"):
            what = stopped or "nothing to replay"
        elif stopped.startswith("the auto budget"):
            what = f"a seeded random sample, {covered}, as {stopped}"
        elif stopped:
            what = f"stopped after {covered}: {stopped.rstrip('.')}"
        else:
            what = f"a seeded random sample (--replay-sample {d.get('sample')}), {covered}"
        rows.append(SummaryRow("replay", f"{what}, {took}; the rates cover these only", "yellow"))
    kinds = d.get("kinds", {})
    found = [
        f"identical {kinds.get('identical', 0):,}",
        f"numerical {kinds.get('numerical', 0)} (near-ties within "
        f"{d.get('numerical_margin_nats', 0):g} nats: not counted)",
        f"corrupt {kinds.get('corrupt', 0)}",
    ]
    if kinds.get("diverged"):
        found.append(f"diverged without logprobs {kinds['diverged']} (counted)")
    if d.get("errors"):
        found.append(f"not answered {d['errors']}")
    counted = kinds.get("corrupt", 0) + kinds.get("diverged", 0)
    rows.append(SummaryRow("divergences", ", ".join(found), "red" if counted else ""))
    return rows


def _consistency_rows(summary: RunSummary) -> list[SummaryRow]:
    """The invariants' and the stream oracle's figures, then the rates by request shape."""
    rows = []
    block = summary.consistency
    if invariants := block.get("invariants"):
        broke = wilson(invariants["corrupted"], invariants["n"])
        kinds = ", ".join(f"{k} {v}" for k, v in invariants.get("kinds", {}).items())
        rows.append(
            SummaryRow(
                "invariants",
                f"{broke} of the turns that ended ok broke one" + (f": {kinds}" if kinds else ""),
                "red" if invariants["corrupted"] else "",
            )
        )
    if stream := block.get("stream"):
        rate = wilson(stream["corrupted"], stream["n"])
        extra = f"numerical {stream.get('numerical', 0)} (near ties: not counted)"
        if stream.get("unanswered"):
            extra += f", twin not answered {stream['unanswered']}"
        rows.append(
            SummaryRow(
                "stream twins",
                f"{rate} disagree, streamed against unstreamed; {extra}",
                "red" if stream["corrupted"] else "",
            )
        )
    if summary.by_shape:
        rows.append(
            SummaryRow("by request shape", "judged turns corrupted, per axis=value of the mix")
        )
    for token, figures in summary.by_shape.items():
        rate = wilson(figures["corrupted"], figures["n"])
        text = str(rate)
        if figures.get("kinds"):
            text += " (" + ", ".join(f"{k} {v}" for k, v in figures["kinds"].items()) + ")"
        if figures.get("errors"):
            text += f"; {figures['errors']} failed"
        rows.append(SummaryRow(f"  {token}", text, "red" if figures["corrupted"] else ""))
    return rows


def _client_row(summary: RunSummary) -> SummaryRow | None:
    """repro's own load; when it was the bottleneck, the one line that says so."""
    lag = summary.client_loop_lag_s
    if not lag and not summary.client_was_slow:
        return None  # a run from before repro measured itself
    workers = f" over {summary.client_workers} workers" if summary.client_workers > 1 else ""
    load = (
        f"loop lag p99 {lag.get('p99', 0.0) * 1000:,.0f} ms, send lag p99 "
        f"{summary.send_lag_p99_s * 1000:,.0f} ms, CPU {summary.client_cpu_share:.0%} of a core"
        f"{workers}"
    )
    if not summary.client_was_slow:
        return SummaryRow("client", load)
    return SummaryRow(
        "client *",
        f"repro, not the engine, was the bottleneck ({load}): the figures marked * include "
        "its own delay; run fewer sessions or more --workers",
        "yellow",
    )


def _pace_row(summary: RunSummary) -> SummaryRow | None:
    """The embedded engine's pace per role; when the host could not keep it, the one line
    that says the figures carry this machine's speed."""
    if not summary.engine_pace:
        return None
    paces = ", ".join(f"{role} {pace:.0%}" for role, pace in summary.engine_pace.items())
    slow = slow_roles(summary.engine_pace)
    if not slow:
        return SummaryRow("engine pace", f"{paces} of its time scale")
    return SummaryRow(
        "engine pace *",
        f"{paces} of its time scale: this machine could not keep the embedded engine's "
        f"modelled clock ({', '.join(slow)} below {SLOW_PACE:.0%}), so its figures carry the "
        "host's speed; run it on a quieter machine or with a larger --set time_scale",
        "yellow",
    )


def summary_rows(summary: RunSummary, run_dir: Path | None) -> list[SummaryRow]:
    """The figures both reports print, worded once so the terminal and the page agree."""
    sessions = wilson(summary.sessions_corrupted, summary.sessions)
    turns = wilson(summary.turns_corrupted, summary.turns)
    colour = "red" if summary.turns_corrupted else "green"
    config = describe(summary.config, ", ")
    if summary.engine == "external" and config:
        config += " (as labelled: repro did not launch this engine)"
    rows = [
        SummaryRow("configuration", config or "(external engine)"),
        SummaryRow(
            "engine", f"{summary.engine} at {summary.url}" if summary.url else summary.engine
        ),
        *_oracle_rows(summary),
        SummaryRow("sessions corrupted", f"{sessions}  (95% Wilson interval)", colour),
        SummaryRow("turns corrupted", str(turns), colour),
    ]
    if summary.defects:
        rows.append(
            SummaryRow("defects", ", ".join(f"{k} {v}" for k, v in summary.defects.items()))
        )
    rows += _consistency_rows(summary)
    errors = f"{summary.errors} errors" + (f" ({summary.error_outcomes})" if summary.errors else "")
    aborted = f", {summary.aborted} aborted on purpose" if summary.aborted else ""
    rows.append(SummaryRow("errors", errors + aborted))
    if summary.wedge:
        rows.append(SummaryRow("WEDGE", summary.wedge, "red"))
    if summary.error:
        rows.append(SummaryRow("engine error", summary.error.splitlines()[0], "red"))
    if summary.in_flight_at_failure:
        rows.append(
            SummaryRow(
                "in flight then",
                describe_in_flight(summary.in_flight_at_failure),
                "red",
            )
        )
    if summary.ended_because == UNFINISHED:
        rows.append(
            SummaryRow(
                "unfinished",
                "no summary.json: the run is still going, or was killed; the figures cover the "
                "turns written so far",
                "yellow",
            )
        )
    elif summary.interrupted:
        rows.append(
            SummaryRow(
                "interrupted", "yes: the figures cover only the turns that finished", "yellow"
            )
        )
    latency = summary.latency_s
    mark = " *" if summary.client_was_slow else ""  # figures that include repro's own delay
    rows += [
        SummaryRow("context", _context(summary)),
        SummaryRow(f"TTFT p50/p90/p99{mark}", _ms(latency.get("ttft", {}))),
        SummaryRow(f"end-to-end p50/p90/p99{mark}", _ms(latency.get("e2e", {}))),
        SummaryRow(
            f"throughput{mark}",
            f"{summary.output_tokens_per_s:,.0f} output tokens/s over "
            f"{summary.divergence.get('load_wall_s') or summary.wall_s:,.0f} s",
        ),
    ]
    rows += [row for row in (_client_row(summary), _pace_row(summary)) if row is not None]
    if run_dir is not None:
        rows.append(SummaryRow("run folder", str(run_dir)))
    return rows


def summary_table(summary: RunSummary, run_dir: Path | None) -> Table:
    """The rows as a two-column table; values fold rather than cut (a long run folder)."""
    table = Table(title="repro run", show_header=False, title_justify="left", padding=(0, 2))
    table.add_column(style="bold", overflow="fold")
    table.add_column(overflow="fold")
    for row in summary_rows(summary, run_dir):
        # Text, not markup: an engine's error message may hold square brackets.
        table.add_row(Text(row.label, style=row.tone), Text(row.text, style=row.tone))
    return table


def render_summary(summary: RunSummary, run_dir: Path | None, console: Console) -> None:
    console.print(summary_table(summary, run_dir))
