"""How a run ended, as the CLI needs it: the errors that carry its summary, and why a run that
ended on its own may still not vouch for the engine."""

from __future__ import annotations

from repro.errors import EXIT_ERROR, EXIT_INTERRUPTED, EngineError, ReproError
from repro.results import RunSummary


class RunStopped(ReproError):
    """The run ended before its load did; `summary` is what its summary.json says."""

    def __init__(self, message: str, summary: RunSummary, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.summary = summary
        self.exit_code = exit_code


class Interrupted(RunStopped):
    """Ctrl-C, SIGTERM or SIGHUP ended the run; its summary.json says `interrupted: true`."""

    label = "interrupted"

    def __init__(self, summary: RunSummary) -> None:
        super().__init__(
            "the run folder holds every turn finished before the interruption.",
            summary,
            EXIT_INTERRUPTED,
        )


def unvouched(summary: RunSummary) -> EngineError | None:
    """Why a run that ended on its own cannot vouch for the engine (README: exit 2), if so."""
    if summary.wedge:
        return EngineError(f"Wedged: {summary.wedge}.")
    if summary.turns == 0:
        failed = f"{summary.errors} failed ({summary.error_outcomes})" if summary.errors else ""
        aborted = f"{summary.aborted} aborted on purpose" if summary.aborted else ""
        why = " and ".join(x for x in (failed, aborted) if x) or "no turn finished"
        return EngineError(f"No turn could be judged: {why}; see {summary.run_dir}.")
    return None
