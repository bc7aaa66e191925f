"""The self-contained HTML page of a run: the summary rows, the plots as inline SVG, and the
first corrupted turns. One file with no script and no link, so it can be mailed or archived."""

from __future__ import annotations

from html import escape
from pathlib import Path

from repro.errors import UsageError
from repro.results.html_page import document, section, table
from repro.results.reading import RunFolder
from repro.results.report import summary_rows
from repro.results.run_figures import FIRST_CORRUPTED, RunFigures, run_figures
from repro.results.store import check_output_file


def write_html_report(folder: RunFolder, path: Path) -> None:
    """Write the page to `path`; raises UsageError when it cannot be written there."""
    check_output_file("--html", path, (".html", ".htm"))  # before drawing: a second or more
    page = render_html(folder)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write the HTML report {path}: {e.strerror or e}.") from None


def render_html(folder: RunFolder) -> str:
    """The whole page as one string; every text taken from the run is escaped."""
    from repro.results.run_plots import latency_plot, rate_plot, timeline_plot

    summary, figures = folder.summary, run_figures(folder.records)
    rows = summary_rows(summary, folder.path)
    title = f"repro report: {folder.path.name}"
    parts = [
        table(
            None,
            ([f"<b>{escape(r.label)}</b>", escape(r.text)] for r in rows),
            (r.tone for r in rows),
        ),
        "<h2>Defects by kind</h2>",
        table(["kind", "judged turns"], ([escape(k), f"{v:,}"] for k, v in summary.defects.items()))
        if summary.defects
        else "<p>none</p>",
        _numerical(summary.divergence) if summary.oracle != "validity" else "",
        section(
            "Corruption vs context length",
            f"Judged turns (outcome ok) by prompt tokens: the corrupted share, its 95% Wilson "
            f"interval, and n.{_left_out(figures)}",
            rate_plot(figures.by_context, "prompt tokens"),
        ),
        section(
            "Corruption vs concurrency",
            "Judged turns by how many turns were in flight when each was sent (itself included; "
            "failed and aborted turns count, as they held a request open). Within one run the "
            "fewest are in flight at its end, when the prompts are longest; `repro sweep` "
            "measures corruption against load, one run per number of sessions.",
            rate_plot(figures.by_concurrency, "turns in flight at send"),
        ),
        section(
            "Latency percentiles vs context length",
            "Judged turns: time to first token and end-to-end time, p50 / p90 / p99, "
            f"by prompt tokens.{_left_out(figures)}",
            latency_plot(figures.latency_by_context),
        ),
        section(
            "Timeline",
            "Turns in flight over the run; below, each corrupted turn and each turn that did not "
            "end ok, by outcome (aborted: cancelled on purpose by --abort-rate).",
            timeline_plot(figures),
        ),
        _corrupted(figures, summary.turns_corrupted),
        "<p class='caption'>Written by <code>repro report</code> from turns.parquet; "
        "failures.jsonl in the run folder holds each corrupted turn's request and raw output.</p>",
    ]
    return document(title, parts)


def _left_out(figures: RunFigures) -> str:
    n = figures.judged_without_prompt_tokens
    return f" {n:,} judged turns without prompt_tokens are left out." if n else ""


def _numerical(divergence: dict) -> str:
    """The near-ties the replay saw flip: listed with their margins, never counted."""
    listed = divergence.get("numerical", [])
    total = divergence.get("kinds", {}).get("numerical", 0)
    if not listed:
        return "<h2>Numerical divergences</h2>\n<p>none</p>"

    def nats(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    rows = (
        [str(n["session_id"]), str(n["turn"]), str(n["token_offset"]), nats(n["gap_nats"]),
         nats(n["reference_margin"])]
        for n in listed
    )  # fmt: skip
    return (
        f"<h2>Numerical divergences</h2>\n<p class='caption'>{len(listed)} of {total}: a token the "
        "reference scored within the margin of its own choice (a near-tie that flipped), so not "
        "counted as corruption.</p>\n"
        + table(["session", "turn", "token", "gap (nats)", "reference top-2 margin"], rows)
    )


def _corrupted(figures: RunFigures, total: int) -> str:
    if not figures.first_corrupted:
        return "<h2>Corrupted turns</h2>\n<p>none</p>"
    shown = len(figures.first_corrupted)
    note = f"the first {shown} of {total:,}" if total > shown else f"all {total:,}"
    rows = (
        [
            str(r.session_id),
            str(r.turn),
            f"{r.prompt_tokens:,}" if r.prompt_tokens is not None else "n/a",
            f"<code>{escape(r.first_defect)}</code>",
        ]
        for r in figures.first_corrupted
    )
    return (
        f"<h2>Corrupted turns</h2>\n<p class='caption'>{note}, by time sent "
        f"(at most {FIRST_CORRUPTED}).</p>\n"
        + table(["session", "turn", "prompt tokens", "first defect"], rows)
    )
