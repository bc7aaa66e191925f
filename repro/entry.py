"""The `repro` console script.

SIGTERM and SIGHUP are made to mean Ctrl-C before anything else (repro/interrupts.py).
Importing the CLI (typer, rich, pydantic) and building its commands takes a moment; an
interruption then ends the way every other one does, exit 130 without a traceback, since
nothing has started. (A signal that comes while the interpreter itself is still starting,
before any of repro's code runs, ends it the system's default way.)
"""

from __future__ import annotations

import sys

from repro import interrupts
from repro.errors import EXIT_INTERRUPTED


def main() -> None:
    interrupts.install()
    try:
        from repro.cli import app

        app()  # typer turns a KeyboardInterrupt inside a command into 130 itself
    except KeyboardInterrupt:  # ... but not one while it builds the commands
        sys.exit(EXIT_INTERRUPTED)
    finally:
        interrupts.hold_at_exit()
