"""Start repro.sim roles as real processes on 127.0.0.1 for tests, and always stop them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

HEALTH_DEADLINE_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class SimProcess:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _wait_healthy(proc: SimProcess, deadline_s: float = HEALTH_DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.process.poll() is not None:
            raise RuntimeError(
                f"{proc.url} exited {proc.process.returncode}:\n{proc.log_text()[-2000:]}"
            )
        try:
            if httpx.get(proc.url + "/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{proc.url} not healthy within {deadline_s} s:\n{proc.log_text()[-2000:]}")


def _start(
    argv: Sequence[str], port: int, log_dir: Path, name: str, env: dict[str, str] | None = None
) -> SimProcess:
    log = log_dir / f"{name}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "repro.sim", *argv],
            stdout=sink,
            stderr=sink,
            start_new_session=True,
            env=os.environ | (env or {}),
        )
    return SimProcess(process, f"http://127.0.0.1:{port}", log)


def stop(*procs: SimProcess, timeout_s: float = 5.0) -> None:
    """SIGTERM every process group first, then wait for each (SIGKILL past the deadline)."""
    for proc in procs:
        if proc.process.poll() is None:
            os.killpg(proc.process.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.process.pid, signal.SIGKILL)
            proc.process.wait()


@contextmanager
def single(log_dir: Path, *flags: str) -> Iterator[SimProcess]:
    port = free_port()
    proc = _start(["serve", "--port", str(port), *flags], port, log_dir, "single")
    try:
        _wait_healthy(proc)
        yield proc
    finally:
        stop(proc)


@dataclass(frozen=True)
class PdDeployment:
    prefill: SimProcess
    decode: SimProcess
    router: SimProcess
    bootstrap_port: int

    @property
    def url(self) -> str:
        return self.router.url


@contextmanager
def pd(
    log_dir: Path, *flags: str, prefill_flags: Sequence[str] = (), decode_flags: Sequence[str] = ()
) -> Iterator[PdDeployment]:
    """prefill + decode + repro's router; `flags` go to both engine roles."""
    p_port, b_port, d_port, r_port = free_port(), free_port(), free_port(), free_port()
    procs: list[SimProcess] = []
    try:
        procs.append(_start(["serve", "--disaggregation-mode", "prefill", "--port", str(p_port),
                             "--disaggregation-bootstrap-port", str(b_port), *flags, *prefill_flags],
                            p_port, log_dir, "prefill"))  # fmt: skip
        procs.append(_start(["serve", "--disaggregation-mode", "decode", "--port", str(d_port),
                             *flags, *decode_flags], d_port, log_dir, "decode"))  # fmt: skip
        procs.append(_start(["router", "--pd-disaggregation", "--prefill", f"http://127.0.0.1:{p_port}", str(b_port),
                             "--decode", f"http://127.0.0.1:{d_port}", "--port", str(r_port)],
                            r_port, log_dir, "router"))  # fmt: skip
        for proc in procs:
            _wait_healthy(proc)
        yield PdDeployment(*procs, bootstrap_port=b_port)
    finally:
        stop(*procs)
