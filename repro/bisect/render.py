"""Terminal output for campaigns: the culprit and classes, the trial table, the matrix.

Every table folds rather than cuts: at 80 columns (a CI log) each value is still whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from repro.bisect.classify import AMPLIFIER_RATIO, HERRING_RATIO, ratio_llr
from repro.bisect.flags import FlagReport
from repro.bisect.matrix import MatrixReport
from repro.bisect.trial import Trial


def folding_table(title: str, *columns: str, right: Sequence[str] = ()) -> Table:
    """A table whose cells wrap at spaces and fold inside a long word, never cut with '…'."""
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name, overflow="fold", justify="right" if name in right else "left")
    return table


def decision(trial: Trial) -> str:
    """The SPRT's decision with the session count it was made at ("CLEAN at 115"), kept apart
    from the sessions run; "stopped: settled" or UNKNOWN when it did not decide."""
    if trial.result.decided:
        return f"{trial.outcome} at {trial.result.sessions}"
    return trial.outcome


def rate_text(trial: Trial) -> str:
    rate = trial.rate
    return f"{rate.k}/{rate.n} {rate.value:.1%} [{rate.low:.1%}, {rate.high:.1%}]"


def trial_table(trials: Sequence[Trial], title: str = "trials") -> Table:
    """One row per trial: the SPRT's decision and the session count it was made at, then
    every session run (a wave goes on past the decision) and the rate over all of them."""
    table = folding_table(
        title, "trial", "decision", "LLR", "sessions run", "corrupted, rate [95% CI]", "min",
        right=("LLR", "sessions run", "min"),
    )  # fmt: skip
    for t in trials:
        table.add_row(
            t.label,
            decision(t),
            f"{t.result.llr:+.2f}",
            str(t.sessions_run),
            rate_text(t),
            f"{t.evidence.wall_s / 60:.1f}",
        )
    return table


def classes_table(report: FlagReport) -> Table:
    table = folding_table(
        "knobs that differ", "knob", "bad → good", "class", "rate with it reverted",
        f"LLR ×{AMPLIFIER_RATIO} : ×{HERRING_RATIO}",
    )  # fmt: skip
    for knob in report.differing:
        reverted = report.knockouts.get(knob)
        table.add_row(
            knob,
            f"{report.bad.config[knob]} → {report.good.config[knob]}",
            report.classes[knob].value,
            f"{reverted.rate}" if reverted else "—",
            f"{ratio_llr(reverted.evidence, report.reference, report.phi):+.2f}"
            if reverted
            else "—",
        )
    return table


def render_flag_report(report: FlagReport, console: Console) -> None:
    culprit = " + ".join(f"{k}={v}" for k, v in report.culprit.items()) or "(none found)"
    console.print(f"[bold]culprit:[/] {culprit}   (by {report.method})")
    console.print(f"bad: {report.bad.rate}   good: {report.good.rate}")
    console.print(
        f"reference for 'below half' (bad + knock-outs found irrelevant): {report.reference.rate()}",
        soft_wrap=True,
    )
    console.print(
        f"run-to-run dispersion: {report.phi:.2f}× the binomial's variance between waves of one "
        "configuration (the p-values treat sessions as independent; the classes' margin "
        "absorbs the difference)"
        if report.phi > 1
        else "run-to-run dispersion: none measured (waves spread as independent sessions do)",
        soft_wrap=True,
    )
    console.print(classes_table(report))
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


def matrix_table(report: MatrixReport) -> Table:
    table = folding_table(
        f"{report.design}: {len(report.cells)} cells",
        *report.factors, "decision", "sessions run", "corrupted, rate [95% CI]",
        right=("sessions run",),
    )  # fmt: skip
    for cell in report.cells:
        table.add_row(
            *cell.levels.values(),
            decision(cell.trial),
            str(cell.trial.sessions_run),
            rate_text(cell.trial),
        )
    return table


def render_matrix(report: MatrixReport, parquet: Path, console: Console) -> None:
    console.print(matrix_table(report))
    console.print(f"cells written to {parquet}", soft_wrap=True)
    _totals(console, report.trials, report.sessions, report.wall_s)


def _totals(console: Console, trials: Sequence[Trial], sessions: int, wall_s: float) -> None:
    new = sum(t.new_sessions for t in trials)
    console.print(
        f"{len(trials)} trials, {sessions} sessions ({new} run now, {sessions - new} from the "
        f"cache), {wall_s / 60:.1f} min of trial time"
    )
