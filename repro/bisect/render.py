"""Terminal output for campaigns: the culprit and classes, the trial table, the matrix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from repro.bisect.classify import lowered_p
from repro.bisect.flags import FlagReport
from repro.bisect.matrix import MatrixReport
from repro.bisect.trial import Trial


def trial_table(trials: Sequence[Trial], title: str = "trials") -> Table:
    """One row per trial: the SPRT's decision (and after how many sessions), then the rate
    over every session run, which may go on past the decision to the end of its wave."""
    table = Table(title=title, title_justify="left")
    table.add_column("trial", overflow="fold", min_width=14)
    table.add_column("decision", no_wrap=True)
    table.add_column("at", justify="right", no_wrap=True)
    table.add_column("LLR", justify="right", no_wrap=True)
    table.add_column("rate [95% CI]", justify="right", no_wrap=True)
    table.add_column("min", justify="right", no_wrap=True)
    for t in trials:
        rate = t.rate
        table.add_row(
            t.label,
            t.result.decision.value,
            str(t.result.sessions),
            f"{t.result.llr:+.2f}",
            f"{rate.k}/{rate.n} {rate.value:.1%} [{rate.low:.1%}, {rate.high:.1%}]",
            f"{t.evidence.wall_s / 60:.1f}",
        )
    return table


def render_flag_report(report: FlagReport, console: Console) -> None:
    culprit = " + ".join(f"{k}={v}" for k, v in report.culprit.items()) or "(none found)"
    console.print(f"[bold]culprit:[/] {culprit}   (by {report.method})")
    classes = Table(title="knobs that differ", title_justify="left")
    for name in ("knob", "bad → good", "class", "rate with it reverted", "Fisher p (lower)"):
        classes.add_column(name)
    reference = report.reference
    for knob in report.differing:
        reverted = report.knockouts.get(knob)
        rate = f"{reverted.rate}" if reverted else "—"
        p = f"{lowered_p(reverted.evidence, reference):.2g}" if reverted else "—"
        classes.add_row(
            knob,
            f"{report.bad.config[knob]} → {report.good.config[knob]}",
            report.classes[knob].value,
            rate,
            p,
        )
    console.print(f"bad: {report.bad.rate}   good: {report.good.rate}")
    console.print(
        f"reference for 'lower' (bad + knock-outs found irrelevant): {reference.rate()}",
        soft_wrap=True,
    )
    console.print(classes)
    console.print(trial_table(report.trials))
    for note in (*report.notes, *_extended_after_classing(report)):
        console.print(f"note: {note}", soft_wrap=True)
    _totals(console, report.trials, report.sessions, report.wall_s)


def _extended_after_classing(report: FlagReport) -> list[str]:
    """A knock-out that is also a later trial's configuration (good + culprit, say) gets more
    sessions after its knob was classed: say which figures the class rests on."""
    latest = {t.digest: t for t in report.trials}
    notes = []
    for knob, classed in report.knockouts.items():
        now = latest.get(classed.digest)
        if now is not None and now.sessions_run > classed.sessions_run:
            notes.append(
                f"{knob} was classed on its knock-out's {classed.rate}; that configuration "
                f"was measured further afterwards, to {now.rate} (the trial table's figure)."
            )
    return notes


def render_matrix(report: MatrixReport, parquet: Path, console: Console) -> None:
    table = Table(title=f"{report.design}: {len(report.cells)} cells", title_justify="left")
    for factor in report.factors:
        table.add_column(factor)
    for name in ("decision", "corrupted", "rate", "95% CI", "sessions run"):
        table.add_column(name, justify="right")
    for cell in report.cells:
        rate = cell.trial.rate
        table.add_row(
            *cell.levels.values(),
            cell.trial.result.decision.value,
            f"{rate.k}/{rate.n}",
            f"{rate.value:.1%}",
            f"[{rate.low:.1%}, {rate.high:.1%}]",
            str(cell.trial.sessions_run),
        )
    console.print(table)
    console.print(f"cells written to {parquet}")
    _totals(console, report.trials, report.sessions, report.wall_s)


def _totals(console: Console, trials: Sequence[Trial], sessions: int, wall_s: float) -> None:
    new = sum(t.new_sessions for t in trials)
    console.print(
        f"{len(trials)} trials, {sessions} sessions ({new} run now, {sessions - new} from the "
        f"cache), {wall_s / 60:.1f} min of trial time"
    )
