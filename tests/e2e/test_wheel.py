"""repro as a user installs it: the built wheel in a fresh venv, run from another folder.

Profiles and everything else the CLI reads ship inside the package; nothing may come from
this checkout. The venv borrows this interpreter's site-packages for the dependencies
(--system-site-packages), so the test takes seconds, and no index is asked for anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel built from this checkout installed; returns its bin folder."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # built from a copy: setuptools writes build/ beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(REPO / "repro", source / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    run = {"check": True, "capture_output": True, "text": True, "timeout": 120}
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", work / "dist", source], **run
    )
    [wheel] = (work / "dist").glob("repro-*.whl")
    venv = work / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv], **run
    )
    python = venv / "bin" / "python"
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], **run)
    return venv / "bin"


def elsewhere(bin_dir: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The venv's `repro` in `folder`, with nothing pointing back at this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"COLUMNS": "200", "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}
    return subprocess.run(
        [bin_dir / "repro", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_wheel_runs_from_another_folder(installed: Path, tmp_path: Path) -> None:
    python = installed / "python"
    where = subprocess.run(
        [python, "-c", "import repro; print(repro.__file__)"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(installed.parent)) and "site-packages" in where

    done = elsewhere(
        installed, tmp_path, "run", "--sessions", "4", "--context-max", "8000",
        "--set", "time_scale=0.2", "--ramp-up", "0.5",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [run_dir] = (tmp_path / "results").iterdir()  # results/ of the folder it ran in
    assert f"results/{run_dir.name}" in done.stdout and "sessions corrupted" in done.stdout
    figures = json.loads((run_dir / "summary.json").read_text())
    assert figures["sessions"] == 4 and figures["turns"] >= 8 and figures["errors"] == 0
    assert figures["engine"].startswith("repro-sim ")
    roles = json.loads((run_dir / "spec.json").read_text())["roles"]
    assert {r["name"] for r in roles} == {"prefill", "decode", "router"}
    assert all(r["argv"][0] == str(python) for r in roles if r["name"] != "router")


def test_the_wheel_has_its_profiles_and_says_what_it_lacks(installed: Path, tmp_path) -> None:
    shown = elsewhere(installed, tmp_path, "profile", "show", "--backend", "sglang", "--json")
    assert shown.returncode == 0, shown.stderr
    assert "site-packages" in json.loads(shown.stdout)["profile"]
    # sim.toml finds sglang-router in a checkout's .cache, through {repo_root}: a wheel has none.
    refused = elsewhere(installed, tmp_path, "run", "--router", "sglang", "--dry-run")
    assert refused.returncode == 2
    assert (
        "needs the setting 'sglang_router_python', whose value uses {repo_root}" in refused.stderr
    )
    assert "give it with --set sglang_router_python=VALUE" in refused.stderr
    given = elsewhere(
        installed, tmp_path, "run", "--router", "sglang", "--dry-run",
        "--set", "sglang_router_python=/opt/router/bin/python",
    )  # fmt: skip
    assert given.returncode == 0, given.stderr
    assert "/opt/router/bin/python -m sglang_router.launch_router" in given.stdout
