"""Errors with one sentence for the user, and the exit code each one means.

    ReproError            base: its message is shown as is, no traceback
    ├── UsageError        bad input (option, knob, profile, scenario, port, URL)  -> exit 2
    ├── EngineError       an engine failed to start, died, wedged or is unreachable -> exit 2
    ├── StoreError        the run folder cannot be written (disk full, I/O error)   -> exit 2
    └── RunStopped        a run ended early, with its summary (run_outcome.py)      -> its cause's
        └── Interrupted   Ctrl-C, SIGTERM or SIGHUP                                 -> exit 130

Anything else escaping to the CLI is a bug in repro and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CORRUPTION = 1  # a verdict, not an error: a gate or `repro check` found corruption
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class ReproError(Exception):
    """An error whose message is a complete sentence meant for the user."""

    exit_code = EXIT_ERROR
    label = "error"  # the word before the sentence on stderr


class UsageError(ReproError):
    """The user asked for something that cannot be done as written."""


class EngineError(ReproError):
    """The engine under test failed: start-up, death, wedge or unreachable URL."""


class StoreError(ReproError):
    """The run folder could not be written, even after retries; what was written is kept."""

    def __init__(self, message: str, path: object = None, reason: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason  # the system's words, e.g. "No space left on device"


def first_repro_error(group: BaseExceptionGroup) -> ReproError:
    """Task groups wrap errors; a user-facing ReproError inside is what the CLI reports.

    Re-raises the group itself when it holds anything else (a bug keeps its traceback)."""
    matched, rest = group.split(ReproError)
    if matched is None or rest is not None:
        raise group
    first = matched.exceptions[0]
    return first_repro_error(first) if isinstance(first, BaseExceptionGroup) else first  # type: ignore[return-value]


def internal_error(exc: BaseException) -> str | None:
    """What a run folder says of a bug in repro that stopped the run (its traceback goes to
    stderr): None for a ReproError or a cancellation, which say what they are themselves."""
    if isinstance(exc, BaseExceptionGroup):
        bugs, _ = exc.split(lambda e: isinstance(e, Exception) and not isinstance(e, ReproError))
        if bugs is None:
            return None
        while isinstance(bugs, BaseExceptionGroup):
            bugs = bugs.exceptions[0]
        exc = bugs
    elif not isinstance(exc, Exception) or isinstance(exc, ReproError):
        return None
    return f"repro stopped on an internal error ({type(exc).__name__}: {exc}); please report it"
