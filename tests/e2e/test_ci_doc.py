"""docs/ci.md's GitHub Actions workflow and GitLab CI job, run as written: their commands in
a shell, against the embedded engine on 127.0.0.1, with the install step given the wheel
built from this checkout. The gate must pass and leave every file the artifacts name."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import REPO, fresh_venv, outside_env
from tests.e2e.sim_server import single

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SMALL = {"REPRO_SESSIONS": "4", "REPRO_CONTEXT_MAX": "8000"}


def doc_blocks() -> list[dict]:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory: pytest.TempPathFactory):
    with single(tmp_path_factory.mktemp("engine"), "--time-scale", "0.2") as engine:
        yield engine.url


def shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # GitHub runs `run:` with `bash -e {0}`; GitLab runs each line in one shell, stopping at
    # the first failure.
    return subprocess.run(
        ["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=180,
    )  # fmt: skip


def environment(tmp_path: Path, url: str, wheel: Path, variables: dict) -> dict[str, str]:
    bin_dir = fresh_venv(tmp_path / "venv")
    declared = {k: str(v) for k, v in variables.items() if "${{" not in str(v)}
    return outside_env(bin_dir) | declared | SMALL | {"REPRO_URL": url, "REPRO_PACKAGE": str(wheel)}


def check_results(workspace: Path, paths: list[str]) -> None:
    for path in paths:
        assert (workspace / path).exists(), path
    junit = ET.parse(workspace / "repro-results" / "junit.xml").getroot()
    suite = junit if junit.tag == "testsuite" else junit.find("testsuite")
    assert suite is not None and int(suite.get("tests", 0)) >= 4
    assert int(suite.get("failures", 0)) == 0 and int(suite.get("errors", 0)) == 0
    assert "<html" in (workspace / "repro-results" / "report.html").read_text()
    summary = json.loads((workspace / "repro-results" / "gate" / "summary.json").read_text())
    assert summary["sessions"] == 4 and summary["turns_corrupted"] == 0


def test_the_github_workflow(tmp_path: Path, engine_url: str, repro_wheel: Path) -> None:
    github = doc_blocks()[0]
    job = github["jobs"]["gate"]
    env = environment(tmp_path, engine_url, repro_wheel, job["env"])
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for step in job["steps"]:  # every step must pass: the engine is healthy and clean
        if "run" not in step:
            continue  # actions (setup-python, upload-artifact)
        done = shell(step["run"], workspace, env)
        assert done.returncode == 0, (step["name"], done.stdout[-2000:], done.stderr[-2000:])
    [upload] = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload.get("if") == "always()"
    check_results(workspace, upload["with"]["path"].split())


def test_the_gitlab_job(tmp_path: Path, engine_url: str, repro_wheel: Path) -> None:
    gitlab = doc_blocks()[1]["repro-gate"]
    env = environment(tmp_path, engine_url, repro_wheel, gitlab["variables"])
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    done = shell("\n".join(gitlab["script"]), workspace, env)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    after = shell("\n".join(gitlab["after_script"]), workspace, env)
    assert after.returncode == 0, after.stderr[-2000:]
    artifacts = gitlab["artifacts"]
    assert artifacts["when"] == "always"
    check_results(workspace, [*artifacts["paths"], artifacts["reports"]["junit"]])
