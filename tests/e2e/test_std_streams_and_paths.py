"""Standard streams that are closed, broken or full never change a run, and output paths the
system rejects are one sentence before anything starts: `repro` as a real process.

Each stream case runs the same small run against the embedded engine (started by hand on
127.0.0.1) through a shell that sets the streams up; the run's exit code, its summary.json
and its turns must be what the same run gives with every stream fine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.e2e.conftest import repro
from tests.hostile_cli import STREAMS, run_with_streams

pytestmark = pytest.mark.e2e

RUN = ["run", "--sessions", "3", "--max-turns", "2", "--context-max", "4000", "--ramp-up", "0"]


@pytest.mark.parametrize("case", sorted(STREAMS))
def test_a_closed_broken_or_full_stream_never_changes_the_run(
    case: str, tmp_path: Path, engine: str
) -> None:
    out = tmp_path / "run"
    code = run_with_streams([*RUN, "--url", engine, "--out", str(out)], STREAMS[case], tmp_path)
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0, (case, summary)
    assert summary["ended_because"] == "completed" and summary["sessions"] == 3, summary
    assert summary["turns"] >= 3 and summary["errors"] == 0, summary
    assert summary["error"] is None and not (out / "repro-traceback.txt").exists()


LONG = "n" * 300


@pytest.mark.parametrize(
    ("out", "said"),
    [
        (f"{LONG}/run", "File name too long"),
        ("/dev/null", "is a device, a pipe or a socket, not a folder"),
        ("a-file", "is a file, not a folder"),
        ("/proc/version/run", "Not a directory"),
    ],
)
def test_an_output_path_the_system_rejects_is_one_sentence_and_exit_2(
    out: str, said: str, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("mine")
    junit = tmp_path / "junit.xml"
    done = repro("gate", "--sessions", "1", "--out", out, "--junit", str(junit), cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and said in lines[0], done.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in done.stderr
    reason = ET.parse(junit).getroot().find("testcase/error")
    assert reason is not None and said in reason.get("message", "")
    assert (tmp_path / "a-file").read_text() == "mine"


def test_a_path_that_is_not_text_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path.as_posix().encode() + b"/\xff\xfe-run"
    done = subprocess.run(
        [sys.executable.encode(), b"-m", b"repro", b"run", b"--sessions", b"1", b"--out", out],
        capture_output=True,
        timeout=60,
    )
    stderr = done.stderr.decode()
    assert done.returncode == 2 and "not UTF-8 text" in stderr and "Traceback" not in stderr
    assert not Path(out.decode("utf-8", "surrogateescape")).exists()
