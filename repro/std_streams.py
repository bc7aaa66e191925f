"""Standard streams that are closed, broken or full never change what a command does.

A run's outcome is its folder and its exit code; what it prints is a courtesy. So:

- A standard stream closed when repro starts (`repro run >&-`, a supervisor with no
  terminal) is opened on /dev/null. Otherwise the first socket or log file takes its
  descriptor, and the event loop library (uvloop) aborts the process when it closes it.
- A write to standard output or error that fails (the reader of a pipe stopped early: EPIPE;
  a full device: ENOSPC; a terminal gone: EIO) sends that stream to /dev/null from then on,
  notes it once on the other stream if that one still works, and the command carries on.
  Rich would otherwise exit 1 on a broken pipe, and any other write error is a traceback.

Standard library only: installed by the console script before anything else runs.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

_FDS = {"stdin": 0, "stdout": 1, "stderr": 2}


def guard() -> None:
    """Make the three standard streams safe for the rest of the process."""
    for name, fd in _FDS.items():
        if _is_closed(fd):
            # os.open takes the lowest free descriptor: the closed one.
            opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if opened != fd:  # a lower one was free too: never happens in fd order, but be exact
                os.dup2(opened, fd)
                os.close(opened)
            if getattr(sys, name) is None:  # Python found it closed and left None
                mode = "r" if fd == 0 else "w"
                reopened = open(fd, mode, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
                setattr(sys, name, reopened)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, TolerantStream):
            setattr(sys, name, TolerantStream(stream, name))


def _is_closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


class TolerantStream:
    """A text stream whose write errors end its output instead of the command."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name
        self.broken: str | None = None  # the system's reason, once a write failed

    def write(self, text: str) -> int:
        if self.broken is None:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._give_up(exc)
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.broken is None:
            try:
                self._stream.flush()
            except OSError as exc:
                self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        self.broken = exc.strerror or type(exc).__name__
        # What is still buffered goes to /dev/null, so the interpreter's own flush at exit
        # does not fail again ("Exception ignored ... BrokenPipeError").
        try:
            fd = self._stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
            self._stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # not a file descriptor (a test's capture): dropping the output is enough
        other = sys.stderr if self._name == "stdout" else None
        if isinstance(other, TolerantStream) and other.broken is None:
            other.write(
                f"note: standard output failed ({self.broken}); the command goes on and its "
                "results are in its files.\n"
            )

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        try:
            return self.broken is None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> object:  # encoding, errors, buffer, ...
        return getattr(self._stream, name)
