"""`repro run --json` and `repro gate --json`: stdout is one JSON document for scripts, the
progress goes to stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, repro, summary

pytestmark = pytest.mark.e2e

SMALL = [*FAST, "--sessions", "3", "--topology", "single"]


@pytest.mark.parametrize("command", ["run", "gate"])
def test_stdout_is_the_document(tmp_path: Path, command: str) -> None:
    out = tmp_path / command
    done = repro(command, *SMALL, "--out", str(out), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # nothing else on stdout
    figures = doc if command == "run" else doc["summary"]
    assert figures == summary(out)  # the same figures as the run folder's summary.json
    assert figures["sessions"] == 3 and figures["turns_corrupted"] == 0
    if command == "gate":
        assert doc["verdict"]["exit_code"] == 0 and doc["verdict"]["message"].startswith("PASS")
    assert "running 3 sessions" in done.stderr  # the progress, kept off stdout
