"""The real vLLM server (CPU, tiny local model) started by `repro run --backend vllm`: health, a
short run scored from the server's own usage, and no process left behind by a normal end, a
Ctrl-C or a killed API server. vLLM runs three processes (API server, engine core, worker).

The environment and the model are built on first use (tests/conftest.py::vllm_python).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.conftest import summary
from tests.e2e.runs import start_run as start_any_run
from tests.e2e.runs import wait_for_turns

# Each test starts vLLM once; the first also builds the environment and the model.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

# Start-up is about 25 s idle and several times that on a loaded 2-core machine.
RUN_TIMEOUT_S = 600
SHORT = ["--backend", "vllm", "--context-max", "4000", "--ramp-up", "0", "--replay-sample", "all"]


def _group_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[2])  # field 5: the process group


def vllm_group(out: Path, timeout_s: float = RUN_TIMEOUT_S) -> set[int]:
    """The running API server's process group (engine core and worker included), once it runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (out / "spec.json").exists():
            port = json.loads((out / "spec.json").read_text())["roles"][0]["port"]
            server = [p for p in _pids() if f"--port\0{port}\0" in _cmdline(p)]
            if server:
                return {p for p in _pids() if _group_of(p) == server[0]}
        time.sleep(0.5)
    raise AssertionError(f"the vLLM run did not start within {timeout_s} s")


def _pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def alive(pids: set[int]) -> set[int]:
    """Those still running (a zombie has finished; its parent just has not reaped it)."""
    return {p for p in pids if Path(f"/proc/{p}").exists() and _state(p) != "Z"}


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def start_run(out: Path, sessions: int) -> subprocess.Popen[str]:
    return start_any_run(out, *SHORT, "--sessions", str(sessions))


def test_a_short_run_on_real_vllm_is_scored_and_leaves_nothing(
    vllm_python: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    process = start_run(out, sessions=4)
    group = vllm_group(out)
    assert len(group) >= 3  # API server, engine core, worker (and multiprocessing's tracker)
    _, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
    assert process.returncode == 0, stderr
    assert alive(group) == set()
    s = summary(out)
    assert s["engine"] == "vllm 0.32.0" and s["config"]["topology"] == "single"
    assert s["sessions"] == 4 and s["errors"] == 0 and s["turns"] >= 4
    # The profile's defaults: divergence on scripted history, 64-token answers, no thinking.
    spec = json.loads((out / "spec.json").read_text())["spec"]
    assert (spec["oracle"], spec["history"], spec["max_output_tokens"]) == (
        "divergence",
        "scripted",
        64,
    )
    assert spec["thinking"] is False
    d = s["divergence"]
    assert d["turns_replayed"] == s["turns"] and d["errors"] == 0
    assert d["kinds"]["corrupt"] == d["kinds"]["diverged"] == 0  # the engine alone is healthy
    turns = pq.read_table(out / "turns.parquet").to_pandas()
    assert set(turns.outcome) == {"ok"}
    # Sizes come from vLLM's own usage: the tiny tokenizer sees the scenario's opening prompt
    # as more than 1,000 tokens, and every answer is at least one token.
    assert (turns.prompt_tokens > 1_000).all() and (turns.completion_tokens >= 1).all()
    assert "vllm:num_requests_running" in (out / "metrics" / "single.prom").read_text()


def test_ctrl_c_mid_run_stops_every_vllm_process(vllm_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_run(out, sessions=8)
    group = vllm_group(out)
    wait_for_turns(out, 1, timeout_s=RUN_TIMEOUT_S, process=process)  # the load is under way
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert alive(group) == set()
    assert summary(out)["interrupted"] is True
    # What was measured is kept (judged only by a replay at the end, which an interrupt skips).
    assert pq.read_table(out / "turns.parquet").num_rows >= 1


def test_a_killed_api_server_is_an_engine_error_and_leaves_nothing(
    vllm_python: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    process = start_run(out, sessions=8)
    group = vllm_group(out)
    server = min(group, key=lambda p: 0 if "vllm.entrypoints.cli.main" in _cmdline(p) else 1)
    os.kill(server, signal.SIGKILL)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2, stderr
    assert "The single engine process was killed by signal 9" in stderr
    assert alive(group) == set()


def test_the_tiny_model_thinks_when_asked_and_its_budget_holds(
    vllm_python: Path, tmp_path: Path
) -> None:
    """The template's thinking mode, vLLM's qwen3 reasoning parser and a thinking budget:
    asked, the answer is reasoning (up to </think>); a budget forces </think> after that many
    tokens, and the rest is content; not asked, everything is content."""
    import anyio
    import httpx

    from repro.harness.launch.launcher import launch
    from repro.harness.launch.plan import build_plan
    from repro.harness.launch.profile import load_profile
    from repro.spec import DEFAULT_PROFILES, RunSpec

    profile = load_profile(DEFAULT_PROFILES["vllm"])
    spec = RunSpec.build(backend="vllm")
    plan = build_plan(profile, spec, profile.resolve_knobs({}))
    messages = [{"role": "user", "content": "Read src/main.py and fix the failing test."}]

    async def ask(client: httpx.AsyncClient, url: str, **extra) -> dict:
        body = {"model": "tiny", "messages": messages, "max_tokens": 48, "temperature": 0}
        answer = await client.post(f"{url}/v1/chat/completions", json=body | extra)
        assert answer.status_code == 200, answer.text
        return answer.json()["choices"][0]["message"]

    async def main() -> list[dict]:
        async with (
            launch(plan, tmp_path / "logs") as deployment,
            httpx.AsyncClient(timeout=300, trust_env=False) as client,
        ):
            url = deployment.entry_url
            thinking = {"chat_template_kwargs": {"enable_thinking": True}}
            return [
                await ask(client, url),
                await ask(client, url, **thinking),
                await ask(client, url, **thinking, thinking_token_budget=8),
            ]

    plain, thinking, budgeted = anyio.run(main)
    assert plain["content"] and not plain.get("reasoning_content") and not plain.get("reasoning")
    reasoning = thinking.get("reasoning_content") or thinking.get("reasoning")
    assert reasoning and "<think>" not in reasoning
    short = budgeted.get("reasoning_content") or budgeted.get("reasoning") or ""
    assert budgeted["content"] and len(short) < len(reasoning)
