"""The positive control end to end: the embedded engine behind `repro proxy`, started as profile
roles by `repro run`; every injection the proxy logs is a corrupted turn, and nothing else is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from repro.proxy import match_run, read_injection_log
from repro.spec import PROFILES_DIR
from tests.e2e.conftest import FAST, repro, summary
from tests.e2e.sim_server import free_port

pytestmark = pytest.mark.e2e

PROFILE = str(PROFILES_DIR / "examples" / "sim-behind-proxy.toml")


def proxied_run(out: Path, *knobs: str, sessions: int) -> dict:
    args = ["run", "--profile", PROFILE, "--sessions", str(sessions), *FAST, "--out", str(out)]
    done = repro(*args, *(a for k in knobs for a in ("--knob", k)))
    assert done.returncode == 0, done.stderr
    return summary(out)


def test_with_the_rule_off_every_stream_passes_and_nothing_is_corrupted(tmp_path: Path) -> None:
    s = proxied_run(tmp_path / "run", sessions=6)
    log = read_injection_log(tmp_path / "run" / "logs" / "proxy.log")
    assert s["turns_corrupted"] == 0 and s["errors"] == 0 and s["turns"] >= 24
    assert log.injections == ()
    assert log.summary is not None and log.summary["streams"] == s["turns"]
    assert log.summary["victims"] == log.summary["injected"] == 0
    assert log.summary["streamed_bytes"] > 1000 * s["turns"] and log.summary["cpu_s"] > 0


def test_every_splice_is_caught_and_every_corrupted_turn_is_a_splice(tmp_path: Path) -> None:
    out = tmp_path / "run"
    s = proxied_run(out, "proxy_rule=splice", "proxy_rate=0.2", sessions=12)
    log = read_injection_log(out / "logs" / "proxy.log")
    match = match_run(out, out / "logs" / "proxy.log")
    assert log.summary is not None and log.summary["streams"] == s["turns"]
    assert match.injected == log.summary["injected"] >= 3
    assert match.detected == match.injected and match.unexplained == ()
    assert s["turns_corrupted"] == match.injected and s["errors"] == 0
    assert all(i["in_flight"] >= 2 and i["donor"] is not None for i in log.injections)


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--upstream", "127.0.0.1:1"], "Invalid --upstream: must start with http:// or https://."),
        (["--upstream", "http://"], "Invalid --upstream: has no host."),
        (["--host", ""], "Invalid --host: is empty; give an address to listen on, e.g. 127.0.0.1."),
        (
            ["--rule", "shred"],
            "Invalid --rule: Input should be 'off', 'splice', 'drop', 'cut', "
            "'duplicate', 'finish' or 'flip'.",
        ),
        (["--rate", "2"], "Invalid --rate: Input should be less than or equal to 1."),
        (["--log", "/nonexistent/x.jsonl"], "Cannot write the injection log /nonexistent/x.jsonl"),
    ],
)
def test_bad_proxy_input_is_one_sentence_and_exit_2(args: list[str], sentence: str) -> None:
    done = repro("proxy", "--upstream", "http://127.0.0.1:1", "--port", str(free_port()), *args)
    assert done.returncode == 2 and sentence in done.stderr and "Traceback" not in done.stderr


def test_a_taken_port_and_an_unreachable_upstream_are_said_plainly(tmp_path: Path) -> None:
    port, dead = free_port(), free_port()
    argv = [sys.executable, "-m", "repro", "proxy", "--upstream", f"http://127.0.0.1:{dead}",
            "--port", str(port), "--log", str(tmp_path / "log.jsonl")]  # fmt: skip
    proxy = subprocess.Popen(argv, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        answer = None
        for _ in range(100):
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert answer is not None and answer.status_code == 502
        assert answer.json()["error"]["message"] == (
            f"repro proxy: the upstream http://127.0.0.1:{dead} refused the connection."
        )
        taken = repro("proxy", "--upstream", f"http://127.0.0.1:{dead}", "--port", str(port))
        assert taken.returncode == 2
        assert (
            f"repro proxy cannot listen: port {port} on 127.0.0.1 is already in use."
            in taken.stderr
        )
    finally:
        os.killpg(proxy.pid, signal.SIGTERM)
        proxy.wait(timeout=10)
    assert read_injection_log(tmp_path / "log.jsonl").summary["streams"] == 0
