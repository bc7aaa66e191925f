"""The HTML report's four plots, drawn with matplotlib and returned as inline SVG text;
`figure`, `svg` and `no_data` are shared with the sweep page's plots (repro.sweep.page).

matplotlib is imported inside the functions (the CLI stays fast) and never through pyplot:
each plot is a bare Figure, so no global figure list grows and no GUI backend is touched.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from repro.results.run_figures import BinLatency, BinRate, RunFigures

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

SIZE_IN = (7.5, 3.2)
RATE_COLOUR = "#c0392b"
# Timeline rows: marker and colour per kind; aborted turns (repro's own doing) stay grey.
EVENT_STYLE = {
    "corrupted": ("x", "#c0392b"),
    "http_error": ("D", "#e67e22"),
    "timeout": ("v", "#d35400"),
    "stalled": ("s", "#8e44ad"),
    "transport_error": ("^", "#a04000"),
    "protocol_error": ("P", "#6e2c00"),
    "cancelled": ("_", "#7f8c8d"),
    "aborted": ("|", "#95a5a6"),
}


def figure(rows: int = 1, **grid: object) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE_IN, layout="constrained")
    axes = fig.subplots(rows, 1, squeeze=False, **grid)[:, 0]
    return fig, list(axes)


def svg(fig: Figure) -> str:
    """The figure as an <svg> element: text stays text, no date, no XML prolog."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]


def no_data(fig: Figure, ax: Axes) -> str:
    ax.set_axis_off()
    ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color="#7f8c8d")
    return svg(fig)


def _categories(ax: Axes, labels: Sequence[str], xlabel: str) -> None:
    many = len(labels) > 5
    ax.set_xticks(
        range(len(labels)), labels, rotation=30 if many else 0, ha="right" if many else "center"
    )
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", alpha=0.3)


def rate_plot(rates: Sequence[BinRate], xlabel: str) -> str:
    """Corrupted share per bin with its Wilson interval as error bars, and n above each bar."""
    from matplotlib.ticker import PercentFormatter

    fig, (ax,) = figure()
    if not rates:
        return no_data(fig, ax)
    x = range(len(rates))
    value = [r.rate.value for r in rates]
    below = [r.rate.value - r.rate.low for r in rates]
    above = [r.rate.high - r.rate.value for r in rates]
    ax.errorbar(x, value, yerr=[below, above], fmt="o", color=RATE_COLOUR, capsize=3)
    for i, r in enumerate(rates):
        ax.annotate(
            f"n={r.rate.n:,}", (i, r.rate.high), xytext=(0, 3), textcoords="offset points",
            ha="center", fontsize=7,
        )  # fmt: skip
    ax.set_ylim(0, min(1.15, max(0.05, max(r.rate.high for r in rates) * 1.2)))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("turns corrupted")
    _categories(ax, [r.bin.label for r in rates], xlabel)
    return svg(fig)


def latency_plot(latency: Sequence[BinLatency]) -> str:
    """TTFT and end-to-end p50/p90/p99 per context bin; a bin with no value leaves a gap."""
    fig, (ax,) = figure()
    if not latency:
        return no_data(fig, ax)
    x = range(len(latency))
    for what, colour, pick in (
        ("TTFT", "#2980b9", lambda b: b.ttft_s),
        ("end-to-end", "#27ae60", lambda b: b.e2e_s),
    ):
        for p, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
            y = [pick(b).get(p, float("nan")) for b in latency]
            ax.plot(x, y, style, marker="o", markersize=3, color=colour, label=f"{what} {p}")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("seconds")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    _categories(ax, [b.bin.label for b in latency], "prompt tokens")
    return svg(fig)


def timeline_plot(figures: RunFigures) -> str:
    """Turns in flight over time above, and below one row of marks per kind of event."""
    fig, (line, strip) = figure(2, sharex=True, height_ratios=(2, 1))
    if not figures.in_flight_times_s.size:
        strip.set_axis_off()
        return no_data(fig, line)
    line.step(figures.in_flight_times_s, figures.in_flight_counts, where="post", color="#34495e")
    line.set_ylim(bottom=0)
    line.set_ylabel("turns in flight")
    line.grid(alpha=0.3)
    kinds = list(figures.events_s)
    for row, kind in enumerate(kinds):
        marker, colour = EVENT_STYLE.get(kind, ("o", "#7f8c8d"))
        times = figures.events_s[kind]
        strip.scatter(times, [row] * len(times), marker=marker, color=colour, s=24, linewidths=1.2)
    strip.set_yticks(range(len(kinds)), [f"{k} ({len(figures.events_s[k]):,})" for k in kinds])
    strip.set_ylim(len(kinds) - 0.4, -0.6)  # the first kind (corrupted) on top
    strip.tick_params(axis="y", labelsize=7)
    strip.set_xlabel("seconds since the run started (marks at each turn's end)")
    strip.grid(axis="x", alpha=0.3)
    return svg(fig)
