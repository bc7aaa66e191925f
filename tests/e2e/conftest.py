"""End-to-end helpers: run the real `repro` command, find leftover engine processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.e2e import sim_server

pytestmark = pytest.mark.e2e

# Small, fast runs: short sessions and a sped-up engine clock.
FAST = ["--context-max", "12000", "--set", "time_scale=0.2", "--ramp-up", "0.5"]
# The index-K race needs spilled prefixes loaded back (docs/sim.md): a 3 GB device pool
# (~35k tokens) and a 12 GB/s host link bring that down to a couple of dozen 12k sessions.
SPILL = ["--set", "kv_pool_gb=3", "--set", "host_link_gbytes_per_s=12"]


class _TrackedPopen(subprocess.Popen):  # type: ignore[type-arg]
    """A Popen that remembers itself, so a test that fails mid-run cannot leak its process."""

    started: ClassVar[list[subprocess.Popen]] = []  # type: ignore[type-arg]

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        _TrackedPopen.started.append(self)


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Stop what the test started and close its pipes, whether it passed or failed.

    A failed assertion between Popen and communicate() used to leave repro running and its
    pipes open; their ResourceWarning then surfaced in whichever later test the GC ran in.
    SIGTERM first, so repro tears its engines down as a user's Ctrl-C would.
    """
    monkeypatch.setattr(subprocess, "Popen", _TrackedPopen)
    yield
    started, _TrackedPopen.started = _TrackedPopen.started, []
    for process in started:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def repro(
    *args: str, timeout: float = 240, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m repro ARGS` as a real process; output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=os.environ | {"COLUMNS": "200"},
    )


def engine_processes(run_dir: Path) -> list[int]:
    """PIDs of processes still running any role of the run recorded in run_dir/spec.json."""
    spec = json.loads((run_dir / "spec.json").read_text())
    ports = [str(role["port"]) for role in spec["roles"]]
    return processes_with_ports(ports)


def processes_with_ports(ports: list[str]) -> list[int]:
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if "repro.sim" in words and any(w in ports for w in words):
            alive.append(int(entry.name))
    return alive


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repro_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (from a copy: setuptools writes build/ beside it)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(REPO / "repro", source / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "--no-deps",
         "--no-build-isolation", "-w", str(work / "dist"), str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    [wheel] = (work / "dist").glob("repro-*.whl")
    return wheel


def fresh_venv(folder: Path) -> Path:
    """A venv that borrows this interpreter's site-packages (dependencies, and pip) but holds
    no repro: installing into it takes seconds and asks no index. Returns its bin folder."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return folder / "bin"


def outside_env(bin_dir: Path) -> dict[str, str]:
    """The environment of a user's shell with that venv first on PATH: nothing points back at
    this checkout, and pip asks no index."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return env | {
        "COLUMNS": "200",
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


@pytest.fixture(scope="session")
def slurm_cluster(repo_root: Path) -> Iterator[None]:
    """The local 3-node Slurm (n1-n3 on 127.0.0.1) of scripts/slurm-local, for the session.

    Started here, not by .ci/run (which runs exactly the README's test command), and stopped
    at the end unless it was already up when the session began.
    """
    script = repo_root / "scripts" / "slurm-local"
    was_up = subprocess.run([script, "status"], capture_output=True).returncode == 0
    subprocess.run([script, "start"], check=True, timeout=600)
    yield
    if not was_up:
        subprocess.run([script, "stop"], check=True, timeout=120)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[str]:
    """The embedded engine started by hand (not by repro) with SGLang's parsers on: its URL,
    for runs given `--url`."""
    with sim_server.single(tmp_path, "--tool-call-parser", "deepseekv32", "--reasoning-parser",
                           "deepseek-v3", "--time-scale", "0.2") as server:  # fmt: skip
        yield server.url
