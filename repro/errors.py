"""Errors with one sentence for the user, and the exit code each one means.

    ReproError            base: its message is shown as is, no traceback
    ├── UsageError        bad input (option, knob, profile, scenario, port, URL)  -> exit 2
    ├── EngineError       an engine failed to start, died, wedged or is unreachable -> exit 2
    ├── CorruptionFound   a gate found more corruption than allowed                 -> exit 1
    └── RunStopped        (harness/run.py) a run ended early, with its summary      -> its cause's
        └── Interrupted   Ctrl-C, SIGTERM or SIGHUP                                 -> exit 130

Anything else escaping to the CLI is a bug in repro and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CORRUPTION = 1
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


class CorruptionFound(ReproError):
    """A gate measured more corruption than it allows."""

    exit_code = EXIT_CORRUPTION
