"""Errors with one sentence for the user, and the exit code each one means.

    ReproError            base: its message is shown as is, no traceback
    ├── UsageError        bad input (option, knob, profile, scenario, port, URL)  -> exit 2
    ├── EngineError       an engine failed to start, died, wedged or is unreachable -> exit 2
    ├── StoreError        the run folder cannot be written (disk full, I/O error)   -> exit 2
    └── RunStopped        a run ended early, with its summary (run_outcome.py)      -> its cause's
        └── Interrupted   Ctrl-C, SIGTERM or SIGHUP                                 -> exit 130

Anything else escaping a command is a bug in repro: it too ends in one sentence and exit 2
(never 1, which says corruption was found), and its traceback is saved to a file the sentence
names (the run folder's repro-traceback.txt, or a temporary file); REPRO_TRACEBACK=1 also
prints it on stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import traceback
from pathlib import Path

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


TRACEBACK_FILE = "repro-traceback.txt"
SHOW_TRACEBACK = "REPRO_TRACEBACK"  # set to 1: a bug's traceback is printed on stderr too
INTERNAL_ERROR = "repro stopped on an internal error"  # how every bug's sentence starts


def internal_error(exc: BaseException, folder: Path | None = None) -> str | None:
    """The one sentence for a bug in repro that stopped a command, its traceback saved (in
    `folder` when given, else a temporary file): None for a ReproError or a cancellation,
    which say what they are themselves."""
    bug = _the_bug(exc)
    if bug is None:
        return None
    words = " ".join(str(bug).split())
    words = f": {words[:300]}" if words else ""
    saved = _save_traceback(exc, folder)
    where = f"; its traceback is in {saved}" if saved else ""
    return f"{INTERNAL_ERROR} ({type(bug).__name__}{words}){where}; please report it"


def _the_bug(exc: BaseException) -> BaseException | None:
    if isinstance(exc, BaseExceptionGroup):
        # split() asks the condition of nested groups too: only a leaf can be a bug.
        bugs, _ = exc.split(
            lambda e: (
                isinstance(e, Exception) and not isinstance(e, (ReproError, BaseExceptionGroup))
            )
        )
        if bugs is None:
            return None
        while isinstance(bugs, BaseExceptionGroup):
            bugs = bugs.exceptions[0]
        return bugs
    if not isinstance(exc, Exception) or isinstance(exc, ReproError):
        return None
    return exc


def _save_traceback(exc: BaseException, folder: Path | None) -> str | None:
    text = "".join(traceback.format_exception(exc))
    if os.environ.get(SHOW_TRACEBACK, "") not in ("", "0"):
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(text)
    try:
        if folder is not None and folder.is_dir():
            path = folder / TRACEBACK_FILE
            path.write_text(text, encoding="utf-8", errors="replace")
            return str(path)
        handle, name = tempfile.mkstemp(prefix="repro-traceback-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8", errors="replace") as file:
            file.write(text)
        return name
    except (OSError, ValueError):  # a full disk: the sentence still goes out, without it
        return None
