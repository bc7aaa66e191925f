"""SIGTERM and SIGHUP mean what Ctrl-C means, in every command and at every moment.

Except a SIGHUP that was ignored when repro started (`nohup repro run ... &`): that is asked
for, so a hang-up then stops nothing, as it would not stop any other command under nohup.

`install()` runs first thing in the console script. Outside a run each of the three raises
KeyboardInterrupt (or whatever Ctrl-C does at that moment, e.g. asyncio's graceful cancel),
which typer turns into exit 130; during `repro run` harness/lifecycle/stopping.py listens for all three
and tears the engine down first. Once a run has written its summary, `settle()` keeps a
signal from turning its outcome into 130: a first one is noted, a second stops at once.
Once the command has its exit code, `hold_at_exit()` ignores them through the shutdown.
Standard library only: it is imported before anything else.
"""

from __future__ import annotations

import os
import signal
import time
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
REPEAT_WINDOW_S = 1.0  # a repeat this soon is the same stop delivered twice (a terminal
# signals the whole process group; wrappers such as `timeout` forward it again)

# The standard streams that were a terminal when repro started: after a hang-up they are
# dead, and a write to them would fail (EIO) in the middle of the teardown.
_terminal_fds: tuple[int, ...] = ()
_hangup_ignored = False  # started under nohup


def install() -> None:
    global _terminal_fds, _hangup_ignored
    _terminal_fds = tuple(fd for fd in (1, 2) if _isatty(fd))
    _hangup_ignored = signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    for sig in stop_signals():
        if sig != signal.SIGINT:
            signal.signal(sig, _like_ctrl_c)


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop repro: Ctrl-C, SIGTERM, and SIGHUP unless started under nohup."""
    return tuple(s for s in STOP_SIGNALS if not (s == signal.SIGHUP and _hangup_ignored))


def settle() -> None:
    """The command's outcome is decided: a signal no longer changes it; a second one (after
    REPEAT_WINDOW_S) stops at once, as KeyboardInterrupt."""
    first_at: list[float] = []

    def noted(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            detach_from_terminal()
        if not first_at:
            first_at.append(time.monotonic())
        elif time.monotonic() - first_at[0] > REPEAT_WINDOW_S:
            raise KeyboardInterrupt

    for sig in stop_signals():
        signal.signal(sig, noted)


def hold_at_exit() -> None:
    """The command has its exit code: the stop signals are ignored for what is left of the process.

    The interpreter's shutdown puts the default action back for every signal with a Python
    handler (CPython's _PySignal_Fini), then frees the modules, which takes a moment after a
    run; a SIGTERM there would end the process by signal, an exit 0 turned into 143. Ignoring
    is kept through the shutdown and, unlike a blocked mask, holds for every thread.
    """
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _like_ctrl_c(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGHUP:
        detach_from_terminal()
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # Ctrl-C ignored (a background job): a SIGTERM must still stop repro
        raise KeyboardInterrupt


def detach_from_terminal() -> None:
    """After a hang-up, send what was going to the terminal to /dev/null instead."""
    if not _terminal_fds:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in _terminal_fds:
        os.dup2(devnull, fd)
    os.close(devnull)
