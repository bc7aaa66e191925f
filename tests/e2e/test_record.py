"""`repro record` end to end, in front of the embedded engine as real processes on 127.0.0.1:
a run through it is written turn for turn; the trace replays as a scenario, scripted and
live, sending what was recorded; secrets in headers never reach the trace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from repro.results import read_turns
from repro.scenarios.trace.sessions import STUB
from repro.traces import Trace, read_trace
from tests.e2e import sim_server
from tests.e2e.conftest import FAST, repro, summary
from tests.e2e.sim_server import free_port
from tests.recorded_profile import recorded_profile

pytestmark = pytest.mark.e2e


@contextmanager
def recorder(upstream: str, out: Path, *more: str, wait: bool = True) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "repro", "record", "--upstream", upstream, "--port", str(port),
            "--out", str(out), *more]  # fmt: skip
    log = out.with_suffix(".log").open("wb")
    process = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200 if wait else 0):
            assert process.poll() is None, out.with_suffix(".log").read_text()
            try:
                if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
        log.close()


def requests_of(trace: Trace) -> Counter[str]:
    """Every request of the trace, whatever its session's name: its messages and tools."""
    return Counter(
        json.dumps([list(t.messages), t.tools], sort_keys=True)
        for s in trace.sessions
        for t in s.turns
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run of 6 sessions through `repro record`, a profile role in front of the PD router."""
    folder = tmp_path_factory.mktemp("recorded")
    profile = recorded_profile(folder)
    run = folder / "run"
    done = repro("run", "--profile", str(profile), "--topology", "pd_recorded", "--sessions", "6",
                 *FAST, "--out", str(run))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder / "recorded.jsonl", run


def test_a_run_through_the_recorder_is_written_turn_for_turn(recorded: tuple[Path, Path]) -> None:
    trace_path, run = recorded
    trace = read_trace(trace_path)
    s = summary(run)
    turns = read_turns(run / "turns.parquet")
    assert len(trace.sessions) == s["sessions"] == 6 and trace.turns == s["turns"] >= 24
    per_session = sorted(Counter(t.session_id for t in turns).values())
    assert sorted(len(x.turns) for x in trace.sessions) == per_session
    answered = Counter(t.response["content"] for x in trace.sessions for t in x.turns)
    assert answered == Counter(t.content for t in turns)  # each answer, as the client got it
    log = (run / "logs" / "recorder.log").read_text()
    assert f"{trace.turns} turns in 6 sessions written to {trace_path}" in log
    first = trace_path.read_text().splitlines()[0]
    assert json.loads(first)["recorded_by"] == "repro record"


@pytest.mark.parametrize("history", ["scripted", "live"])
def test_the_trace_replays_the_recorded_requests(
    history: str, recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    """Through a second recorder, the replay's requests are the first recording's (scripted),
    and live on a clean engine every call is answered from the trace (no stand-in)."""
    trace_path, _ = recorded
    again = tmp_path / "again.jsonl"
    flags = ("--time-scale", "0.2", "--reasoning-parser", "deepseek-v3")
    with sim_server.single(tmp_path, *flags) as engine, recorder(engine.url, again) as url:
        done = repro("run", "--url", url, "--scenario", f"trace:{trace_path}", "--history",
                     history, "--sessions", "6", "--context-max", "12000", "--ramp-up", "0.5",
                     "--out", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = summary(tmp_path / "run")
    original, replayed = read_trace(trace_path), read_trace(again)
    assert s["turns_corrupted"] == 0 and s["errors"] == 0
    assert s["turns"] == original.turns
    if history == "scripted":
        assert requests_of(replayed) == requests_of(original)
    else:
        results = [m for x in replayed.sessions for m in x.final_messages if m["role"] == "tool"]
        assert results and not any(m["content"].startswith(STUB[:20]) for m in results)
        assert replayed.turns == original.turns


def test_headers_are_never_written_and_redaction_holds(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    body = {
        "model": "repro-sim", "stream": False, "max_tokens": 64,
        "messages": [{"role": "user", "content": "my password=hunter2, what now?"}],
    }  # fmt: skip
    secrets = {"Authorization": "Bearer sk-very-secret", "X-Api-Key": "key-very-secret"}
    with (
        sim_server.single(tmp_path, "--time-scale", "0.2") as engine,
        recorder(engine.url, out, "--redact", r"password=\S+") as url,
    ):
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=30, headers=secrets)
        assert answer.status_code == 200
        models = httpx.get(f"{url}/v1/models", timeout=10)
        assert models.status_code == 200  # forwarded, not recorded
    text = out.read_text()
    assert "very-secret" not in text and "hunter2" not in text and "[redacted]" in text
    [session] = read_trace(out).sessions
    [turn] = session.turns
    assert (
        turn.response is not None
        and turn.response["content"] == answer.json()["choices"][0]["message"]["content"]
    )
    assert turn.params == {"stream": False, "max_tokens": 64}


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--upstream", "127.0.0.1:1"], "Invalid --upstream: must start with http:// or https://."),
        (["--redact", "(unclosed"], "Invalid --redact: '(unclosed' is not a regular expression"),
        (
            ["--out", "/nonexistent/t.jsonl"],
            "Invalid --out: the folder /nonexistent does not exist.",
        ),
        (["--out", "/tmp"], "Invalid --out: /tmp is a folder; give a file."),
        (
            ["--upstream", "http://127.0.0.1:8000/v1"],
            "Invalid --upstream: must be the engine's address without a path",
        ),
    ],
)
def test_bad_record_input_is_one_sentence_and_exit_2(
    args: list[str], sentence: str, tmp_path: Path
) -> None:
    base = {
        "--upstream": "http://127.0.0.1:1",
        "--port": str(free_port()),
        "--out": str(tmp_path / "t.jsonl"),
    }
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    done = repro("record", *(x for pair in base.items() for x in pair), timeout=60)
    assert done.returncode == 2 and sentence in done.stderr and "Traceback" not in done.stderr


def test_a_binary_file_is_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "image.jsonl"
    path.write_bytes(bytes(range(256)) * 4)
    done = repro("trace", "check", str(path), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == (
        "error: The file holds NUL bytes: it is a binary file, not a JSON Lines trace."
    )


def test_the_overhead_bench_runs_and_its_trace_holds_every_recorded_request() -> None:
    """bench/record_overhead.py at a tiny scale (its figures are measured under the bench
    lock, bench/RESULTS.md): both legs answered, the recorder's trace valid."""
    bench = Path(__file__).resolve().parents[2] / "bench" / "record_overhead.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--sessions", "4", "--context-max", "6000", "--rounds", "1",
         "--tokens", "4", "--pace-ms", "2"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    pooled = next(line for line in done.stdout.splitlines() if line.startswith("| pooled |"))
    requests = int(pooled.split("|")[2])
    assert requests >= 8
    assert f"{requests} turns in 4 sessions written" in done.stdout
    assert "a valid trace: 4 sessions" in done.stdout


def test_the_divergence_oracle_replays_every_turn_of_a_trace(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    """Scripted history from a trace rebuilds each request byte for byte for the replay: every
    turn replayed, none refused, none divergent on a clean engine (fp8)."""
    trace_path, _ = recorded
    run = tmp_path / "run"
    done = repro("run", "--scenario", f"trace:{trace_path}", "--sessions", "6", "--oracle",
                 "divergence", "--replay-sample", "all", *FAST, "--out", str(run))  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = summary(run)
    kinds = s["divergence"]["kinds"]
    assert s["divergence"]["turns_replayed"] == s["turns"] == read_trace(trace_path).turns
    assert kinds.get("identical", 0) == s["turns"] and s["turns_corrupted"] == 0


def test_an_answer_the_client_left_is_recorded_as_far_as_it_came(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    body = {"model": "repro-sim", "stream": True, "max_tokens": 2000,
            "messages": [{"role": "user", "content": "tell me a long story"}]}  # fmt: skip
    with (
        sim_server.single(tmp_path, "--time-scale", "1.0") as engine,
        recorder(engine.url, out) as url,
        httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as answer,
    ):
        chunks = answer.iter_bytes()
        first = next(chunks)
        assert first.startswith(b"data:")
        # leaving the block closes the connection mid-answer
    [session] = read_trace(out).sessions
    [turn] = session.turns
    line = json.loads(out.read_text().splitlines()[-1])
    assert line["error"] == "the client hung up" and line["status"] == 200
    assert turn.messages == tuple(body["messages"])


def test_an_upstream_that_cannot_be_reached_is_a_502_and_one_line(tmp_path: Path) -> None:
    out, dead = tmp_path / "t.jsonl", free_port()
    with recorder(f"http://127.0.0.1:{dead}", out, wait=False) as url:
        for _ in range(100):
            try:
                answer = httpx.post(f"{url}/v1/chat/completions", json={"messages": []}, timeout=5)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
    assert answer.status_code == 502
    assert answer.json() == {"error": {
        "message": f"repro record: the upstream http://127.0.0.1:{dead} refused the connection.",
        "type": "upstream_error", "code": 502}}  # fmt: skip
    log = out.with_suffix(".log").read_text()
    assert (
        "repro record: a client's connection: the upstream refused the connection; answered 502."
        in log
    )
    assert "Traceback" not in log and "0 turns in 0 sessions" in log
