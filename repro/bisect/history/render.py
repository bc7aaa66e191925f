"""Terminal output of a history search: the answer, the points touched, the trials."""

from __future__ import annotations

from rich.console import Console

from repro.bisect.history.search import HistoryReport
from repro.bisect.render import folding_table, trial_table


def _rate(report: HistoryReport, index: int) -> str:
    trials = report.measured.get(index, ())
    k = sum(t.evidence.corrupted for t in trials)
    n = sum(t.evidence.sessions for t in trials)
    return f"{k}/{n} = {k / n:.1%}" if n else "—"


def render_history_report(report: HistoryReport, console: Console) -> None:
    old_term, new_term = report.terms
    answer = report.answer
    low, high = report.points[answer.low], report.points[answer.high]
    word = "the change" if report.decided else "most likely the change (not decided)"
    console.print(f"[bold]first {new_term}:[/] {high.label}   ({_rate(report, answer.high)})")
    console.print(f"[bold]last {old_term}:[/] {low.label}   ({_rate(report, answer.low)})")
    between = report.skipped_between
    if between:
        names = ", ".join(s.point.label for s in between)
        console.print(
            f"untestable between them: {names}; the change is the first {new_term} one or "
            "one of these"
        )
    console.print(
        f"P({word} lies here) = {answer.probability:.3f}   (asked: {report.confidence}); "
        f"{report.direction}: searched from {report.points[0].label} to "
        f"{report.points[-1].label}, {len(report.points)} points"
    )
    table = folding_table(
        "points", "#", "point", "verdict",
        "sessions corrupted, or why untestable" if not report.reference
        else "sessions whose answers differ from good's, or why untestable",
        right=("#",),
    )  # fmt: skip
    touched = sorted(set(report.measured) | {s.point.index for s in report.skipped})
    skipped = {s.point.index: s for s in report.skipped}
    for index in touched:
        point = report.points[index]
        if index in skipped:
            table.add_row(str(index), point.label, "untestable", skipped[index].reason)
        else:
            table.add_row(str(index), point.label, report.verdicts[index], _rate(report, index))
    console.print(table)
    console.print(trial_table(report.trials))
    for note in report.notes:
        console.print(f"note: {note}")
    cached = sum(t.cached_sessions for t in report.trials)
    console.print(
        f"{len(report.measured)} points measured of {len(report.points)}, "
        f"{len(report.skipped)} untestable; {len(report.trials)} trials, {report.sessions} "
        f"sessions ({report.sessions - cached} run now, {cached} from the cache), "
        f"{report.wall_s / 60:.1f} min of trial time"
    )
