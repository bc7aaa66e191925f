"""The last thing a run does, whatever ended it: its summary, computed from what reached the
disk, written to summary.json, and the one error that tells the user what is kept."""

from __future__ import annotations

from repro.errors import EngineError, ReproError, StoreError, UsageError
from repro.harness.lifecycle.replay import Replay
from repro.results import RunStore, RunSummary, read_turns, summarize


def ended_because(error: ReproError | None) -> str | None:
    if isinstance(error, StoreError):
        return "write_failed"
    if isinstance(error, EngineError):
        return "engine_failed"
    return None  # the rest follows from interrupted / wedge / error


def final_summary(store: RunStore, replay: Replay | None, **context: object) -> RunSummary:
    """The figures of what is on disk, read back from the parts (only the columns they need;
    every turn when the divergence oracle judged them, as its verdicts apply per turn)."""
    from repro.results import (
        SUMMARY_COLUMNS,
        divergence_figures,
        judged_records,
        read_turn_table,
        summarize_table,
    )

    try:
        if replay is not None:
            records = read_turns(store.turns_dir)
            judged = judged_records(records, context["oracle"], replay.turns)  # type: ignore[arg-type]
            figures = divergence_figures(records, replay.turns, replay.info())
            return summarize(judged, divergence=figures, **context)  # type: ignore[arg-type]
        table = read_turn_table(store.turns_dir, SUMMARY_COLUMNS)
    except UsageError:  # a part the disk mangled: say what ended the run all the same
        return summarize([], **context)  # type: ignore[arg-type]
    return summarize_table(table, **context)  # type: ignore[arg-type]


def write_summary(
    store: RunStore, summary: RunSummary, error: ReproError | None
) -> ReproError | None:
    """Write summary.json; the error to raise, its sentence telling what reached the disk."""
    try:
        store.write_summary(summary.to_dict())
        written = None
    except StoreError as exc:
        written = exc
    if isinstance(error, StoreError):
        lost = f", and {store.rows_lost} later turns are lost" if store.rows_lost else ""
        tail = (
            "summary.json says why"
            if written is None
            else f"summary.json could not be written either ({written.reason})"
        )
        return StoreError(f"{error}{lost}; {tail}.", path=error.path)
    if written is not None:
        return StoreError(
            f"{written}; the turns are kept in {store.run_dir}, and `repro report "
            f"{store.run_dir}` recomputes the summary from them"
            + (f" (the run had stopped on: {error})." if error else "."),
            path=written.path,
        )
    return error
