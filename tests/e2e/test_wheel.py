"""repro as a user installs it: the built wheel in a fresh venv, run from another folder.

Profiles and everything else the CLI reads ship inside the package; nothing may come from
this checkout. The venv borrows this interpreter's site-packages for the dependencies
(--system-site-packages), so the test takes seconds, and no index is asked for anything.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import fresh_venv, outside_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def installed(repro_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin folder."""
    bin_dir = fresh_venv(tmp_path_factory.mktemp("venv") / "venv")
    subprocess.run(
        [bin_dir / "python", "-m", "pip", "install", "--no-deps", repro_wheel],
        env=outside_env(bin_dir), check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return bin_dir


def elsewhere(bin_dir: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The venv's `repro` in `folder`, with nothing pointing back at this checkout."""
    return subprocess.run(
        [bin_dir / "repro", *args], cwd=folder, env=outside_env(bin_dir),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_wheel_runs_from_another_folder(installed: Path, tmp_path: Path) -> None:
    python = installed / "python"
    where = subprocess.run(
        [python, "-c", "import repro; print(repro.__file__)"],
        cwd=tmp_path,
        env=outside_env(installed),
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
    [run_dir] = (tmp_path / "runs").iterdir()  # runs/ of the folder it ran in
    assert f"runs/{run_dir.name}" in done.stdout and "sessions corrupted" in done.stdout
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
