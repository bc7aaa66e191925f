"""A test engine that ignores SIGTERM, as real SGLang launches can, and leaves a daemon.

It starts a daemon that leaves its process group and its parent (a double fork) and ignores
SIGTERM, then runs the embedded engine in this process with SIGTERM ignored throughout.
Only SIGKILL stops either, and only a search by process tree (subreaper) or cgroup finds
the daemon. Arguments are `repro.sim` arguments; the daemon carries them in its argv too.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys

IGNORE_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"


def start_daemon(tag: list[str]) -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", IGNORE_TERM, "stubborn-daemon", *tag])
        os._exit(0)  # the daemon is orphaned at once, as a double fork intends
    os.wait()


def run_engine_ignoring_term(args: list[str]) -> None:
    real_signal = signal.signal

    def keep_term_ignored(sig: int, handler: object) -> object:
        # uvicorn installs its own SIGTERM handler; this engine keeps ignoring it.
        return signal.SIG_IGN if sig == signal.SIGTERM else real_signal(sig, handler)

    real_signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal = keep_term_ignored  # type: ignore[assignment]
    sys.argv = ["repro.sim", *args]
    runpy.run_module("repro.sim", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    start_daemon(sys.argv[1:])
    run_engine_ignoring_term(sys.argv[1:])
