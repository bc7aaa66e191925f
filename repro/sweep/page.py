"""The sweep's HTML page: the table and the curves (corrupted share of sessions and of turns,
failed turns, TTFT p90, each against the sessions in flight, one line per prompt ceiling)."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from pathlib import Path

from repro.results import Rate, document, section, table
from repro.sweep.table import SweepRow

PALETTE = ("#c0392b", "#2980b9", "#27ae60", "#8e44ad", "#d35400", "#16a085")
HEADER = ("sessions", "context", "sessions corrupted", "turns corrupted", "failed turns",
          "TTFT p90", "run folder")  # fmt: skip


def write_page(rows: list[SweepRow], path: Path, title: str, command: str) -> None:
    parts = [
        f"<p class='caption'>{escape(command)}</p>",
        table(HEADER, (_cells(r) for r in rows)),
        section(
            "Sessions corrupted vs load",
            "Share of sessions with at least one corrupted turn, its 95% Wilson interval, by "
            "sessions in flight; one line per prompt ceiling (--context-max).",
            rate_curve(rows, lambda r: r.session_rate, "sessions corrupted"),
        ),
        section(
            "Turns corrupted vs load",
            "Share of judged turns that were corrupted, with its 95% Wilson interval.",
            rate_curve(rows, lambda r: r.turn_rate, "turns corrupted"),
        ),
        section(
            "Failed turns and latency vs load",
            "Turns that failed (HTTP errors, timeouts, stalls; never judged) and the judged "
            "turns' time to first token, p90.",
            failures_curve(rows),
        ),
        "<p class='caption'>Written by <code>repro sweep</code>; each point's run folder holds "
        "its turns.parquet, failures.jsonl and engine logs (<code>repro report DIR --html F"
        "</code> draws one point).</p>",
    ]
    path.write_text(document(title, parts), encoding="utf-8")


def _cells(r: SweepRow) -> list[str]:
    return [
        f"{r.sessions:,}",
        f"{r.context_max_tokens:,}",
        escape(str(r.session_rate)),
        escape(str(r.turn_rate)),
        f"{r.failed_turns:,}" + (" (wedged)" if r.wedged else ""),
        "n/a" if r.ttft_p90_s is None else f"{r.ttft_p90_s:.2f} s",
        f"<code>{escape(r.run_dir)}</code>",
    ]


def _by_context(rows: list[SweepRow]) -> dict[int, list[SweepRow]]:
    lines: dict[int, list[SweepRow]] = {}
    for row in sorted(rows, key=lambda r: (r.context_max_tokens, r.sessions)):
        lines.setdefault(row.context_max_tokens, []).append(row)
    return lines


def rate_curve(rows: list[SweepRow], pick: Callable[[SweepRow], Rate], ylabel: str) -> str:
    from matplotlib.ticker import PercentFormatter

    from repro.results import figure, no_data, svg

    fig, (ax,) = figure()
    if not rows:
        return no_data(fig, ax)
    top = 0.05
    for i, (context, line) in enumerate(_by_context(rows).items()):
        rates = [pick(r) for r in line]
        ax.errorbar(
            [r.sessions for r in line],
            [q.value for q in rates],
            yerr=[[q.value - q.low for q in rates], [q.high - q.value for q in rates]],
            fmt="o-", capsize=3, color=PALETTE[i % len(PALETTE)], label=f"to {context:,} tokens",
        )  # fmt: skip
        top = max(top, *(q.high for q in rates))
    ax.set_ylim(0, min(1.0, top * 1.15))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel(ylabel)
    ax.set_xlabel("sessions (all in flight)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return svg(fig)


def failures_curve(rows: list[SweepRow]) -> str:
    from repro.results import figure, no_data, svg

    fig, (ax,) = figure()
    if not rows:
        return no_data(fig, ax)
    latency = ax.twinx()
    for i, (context, line) in enumerate(_by_context(rows).items()):
        colour, x = PALETTE[i % len(PALETTE)], [r.sessions for r in line]
        ax.plot(x, [r.failed_turns for r in line], "s-", color=colour,
                label=f"failed turns, to {context:,}")  # fmt: skip
        ttft = [float("nan") if r.ttft_p90_s is None else r.ttft_p90_s for r in line]
        latency.plot(x, ttft, "o:", color=colour, label=f"TTFT p90, to {context:,}")
    ax.set_ylim(bottom=0)
    latency.set_ylim(bottom=0)
    ax.set_ylabel("failed turns")
    latency.set_ylabel("TTFT p90 (s)")
    ax.set_xlabel("sessions (all in flight)")
    ax.grid(alpha=0.3)
    handles = ax.get_legend_handles_labels()
    more = latency.get_legend_handles_labels()
    ax.legend(handles[0] + more[0], handles[1] + more[1], fontsize=7, loc="upper left")
    return svg(fig)
