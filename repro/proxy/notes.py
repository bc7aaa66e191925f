"""The proxy's own notes (an upstream that failed, a stream it stopped inspecting): one line
each on standard error, never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys

# uvicorn's line when an app leaves a response unfinished. The proxy does that only on
# purpose, to close a client's stream where the upstream's ended, after its own note.
UNFINISHED = "ASGI callable returned without completing response."


def say(line: str) -> None:
    # A closed or full standard error must not stop the streams.
    with contextlib.suppress(OSError, ValueError):
        print(f"repro proxy: {line}", file=sys.stderr, flush=True)


def _needless(record: logging.LogRecord) -> bool:
    """A response left unfinished on purpose, or a stream cancelled at shutdown (uvicorn
    says in one line of its own that it cancelled streams still open)."""
    if record.msg == UNFINISHED:
        return True
    kind = record.exc_info[0] if record.exc_info else None
    return kind is not None and issubclass(kind, asyncio.CancelledError)


def quiet_uvicorn() -> None:
    """Drop uvicorn's lines that would repeat a note, or trace a routine shutdown."""
    logging.getLogger("uvicorn.error").addFilter(lambda record: not _needless(record))
