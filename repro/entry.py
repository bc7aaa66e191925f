"""The `repro` console script.

Importing the CLI (typer, rich, pydantic) takes a moment; a Ctrl-C in that moment ends the
way every other Ctrl-C does, exit 130 without a traceback, since nothing has started yet.
"""

from __future__ import annotations

import sys

from repro.errors import EXIT_INTERRUPTED


def main() -> None:
    try:
        from repro.cli import app
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    app()
