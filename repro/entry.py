"""The `repro` console script.

SIGTERM and SIGHUP are made to mean Ctrl-C before anything else (repro/interrupts.py).
Importing the CLI (typer, rich, pydantic) takes a moment; an interruption in that moment
ends the way every other one does, exit 130 without a traceback, since nothing has started.
"""

from __future__ import annotations

import sys

from repro import interrupts
from repro.errors import EXIT_INTERRUPTED


def main() -> None:
    interrupts.install()
    try:
        from repro.cli import app
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    app()
