"""Writing a trace: one JSON line at a time, flushed as it is written (nothing lost on a crash).

A file that exists is appended to: a recorder started again adds its sessions after the
ones already there (session ids carry each recording's own prefix), under a header line of
its own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import orjson

from repro.errors import UsageError
from repro.traces.model import FORMAT_VERSION


class TraceWriter:
    """Appends lines to a trace file; `header` fields go on its first line (after `trace`)."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        try:
            self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115 -- closed by close()
        except OSError as exc:
            raise UsageError(f"Cannot write the trace {path}: {exc.strerror}.") from None
        self.lines = 0
        self.write({"trace": FORMAT_VERSION, **header})

    def write(self, line: dict[str, Any]) -> None:
        """One line, flushed to the system; raises OSError (disk full) for the caller to say."""
        self._file.write(orjson.dumps(line) + b"\n")
        self._file.flush()
        self.lines += 1

    def sync(self) -> None:
        """To the disk, not only the system's cache."""
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
