"""The `repro` console script.

SIGTERM and SIGHUP are made to mean Ctrl-C before anything else (repro/interrupts.py).
Importing the CLI (typer, rich, pydantic) and building its commands takes a moment; an
interruption then ends the way every other one does, exit 130 without a traceback, since
nothing has started. (A signal that comes while the interpreter itself is still starting,
before any of repro's code runs, ends it the system's default way.)
The standard streams are made safe first (repro/std_streams.py): a closed, broken or full
one never changes a command's outcome.
"""

from __future__ import annotations

import sys

from repro import interrupts, std_streams
from repro.errors import EXIT_ERROR, EXIT_INTERRUPTED, internal_error


def main() -> None:
    interrupts.install()
    std_streams.guard()  # before anything opens a file or a socket
    try:
        from repro.cli import app

        app()  # typer turns a KeyboardInterrupt inside a command into 130 itself
    except KeyboardInterrupt:  # ... but not one while it builds the commands
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # a bug while building the commands: still one sentence, exit 2
        print(f"error: {internal_error(exc)}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
    finally:
        interrupts.hold_at_exit()
