"""What each way of ending a `repro run --backend vllm` leaves behind: vLLM runs an API server,
an engine core and a worker (plus multiprocessing's resource tracker), and each role runs
under repro's supervisor (docs/processes.md).

    PYTHONPATH=. python bench/vllm_teardown.py [--only CASE ...]

Per case: start a run of 8 sessions, wait for its first judged turns, do what the case says,
then poll every 20 ms until no process of the role's process group and no supervisor is
left. Prints repro's exit code, the processes found before, and the seconds from the action
until none is left (30 s at most, then it lists what is left).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.test_interrupt import wait_for_turns
from tests.e2e.test_vllm import _cmdline, _group_of, _pids, alive, vllm_group

Action = Callable[[subprocess.Popen[str], set[int]], None]


def api_server(group: set[int]) -> int:
    return next(p for p in group if "vllm.entrypoints.cli.main" in _cmdline(p))


def engine_core(group: set[int]) -> int:
    return next(p for p in group if "EngineCore" in _cmdline(p))


def supervisors(out: Path) -> set[int]:
    return {p for p in _pids() if "repro.harness.launch.supervisor" in _cmdline(p) and str(out) in _cmdline(p)}  # fmt: skip


CASES: dict[str, tuple[str, Action]] = {
    "ctrl-c-start": ("Ctrl-C while vLLM starts (importing, before /health)", lambda p, g: None),
    "end": ("the run ends (2 sessions)", lambda process, group: None),
    "ctrl-c": ("Ctrl-C (SIGINT to repro) mid-run", lambda p, g: p.send_signal(signal.SIGINT)),
    "ctrl-c-twice": (
        "Ctrl-C, and again 2 s later",
        lambda p, g: (p.send_signal(signal.SIGINT), time.sleep(2), p.send_signal(signal.SIGINT)),
    ),
    "kill-repro": ("SIGKILL of repro mid-run", lambda p, g: p.kill()),
    "kill-api": (
        "SIGKILL of the API server mid-run",
        lambda p, g: os.kill(api_server(g), signal.SIGKILL),
    ),
    "kill-core": (
        "SIGKILL of the engine core mid-run",
        lambda p, g: os.kill(engine_core(g), signal.SIGKILL),
    ),
    "kill-repro-and-api": (
        "SIGKILL of repro and the API server together",
        lambda p, g: (os.kill(api_server(g), signal.SIGKILL), p.kill()),
    ),
}


def starting_group(out: Path, timeout_s: float = 300) -> set[int]:
    """The role's process group while vLLM is still starting (before it answers /health)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for supervisor in supervisors(out):
            children = [p for p in _pids() if _parent_of(p) == supervisor]
            if children and (group := _group_of(children[0])) is not None:
                time.sleep(5)  # the API server is importing vLLM; its engine core comes later
                return {supervisor} | {p for p in _pids() if _group_of(p) == group}
        time.sleep(0.2)
    raise SystemExit(f"no supervised process within {timeout_s} s")


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        return None


def one_case(name: str, folder: Path) -> str:
    what, action = CASES[name]
    out = folder / name
    sessions = "2" if name == "end" else "8"
    argv = [sys.executable, "-m", "repro", "run", "--backend", "vllm", "--sessions", sessions,
            "--ramp-up", "0", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if name == "ctrl-c-start":
        watched = starting_group(out)
        group = watched - supervisors(out)
        process.send_signal(signal.SIGINT)
        return _until_gone(what, process, group, watched, time.monotonic())
    group = vllm_group(out)
    watched = group | supervisors(out)
    if name != "end":
        wait_for_turns(out, 1, timeout_s=600, process=process)
    acted_at = time.monotonic()
    action(process, group)
    if name == "end":  # from repro's own exit
        process.wait(timeout=600)
        acted_at = time.monotonic()
    return _until_gone(what, process, group, watched, acted_at)


def _until_gone(
    what: str, process: subprocess.Popen[str], group: set[int], watched: set[int], acted_at: float
) -> str:
    code = process.wait(timeout=600)
    while alive(watched):
        if time.monotonic() - acted_at > 30:
            left = {p: _cmdline(p)[:80] for p in alive(watched)}
            return f"| {what} | {code} | {len(group)} | LEFT after 30 s: {left} | {os.getloadavg()[0]:.1f} |"  # fmt: skip
        time.sleep(0.02)
    gone_s = time.monotonic() - acted_at
    return f"| {what} | {code} | {len(group)} + {len(watched) - len(group)} supervisor | {gone_s:.1f} s | {os.getloadavg()[0]:.1f} |"  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(CASES), default=list(CASES))
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="repro-vllm-teardown-"))
    print("| case | repro's exit | processes (vLLM + supervisor) | all gone after | load |")
    print("|---|---|---|---|---|")
    for name in args.only:
        print(one_case(name, folder), flush=True)


if __name__ == "__main__":
    main()
