"""`--url` against an engine started by hand, and bad input: one sentence, exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import FAST, repro, summary

pytestmark = pytest.mark.e2e


def test_url_runs_against_an_engine_started_by_hand(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "ext"
    done = repro("run", "--url", engine, "--sessions", "4", *FAST[:2], "--out", str(out))
    assert done.returncode == 0, done.stderr
    s = summary(out)
    assert (
        s["sessions"] == 4 and s["turns"] >= 12 and s["errors"] == 0 and s["turns_corrupted"] == 0
    )
    assert s["url"] == engine and s["engine"] == "external"
    assert not (out / "logs").exists() and "logs in" not in done.stdout  # none are promised


def first_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--knob", "nope=1"], "has no knob 'nope'"),
        (["--index-k", "bf17"], "has no value 'bf17'"),
        (["--knob", "topology"], "is not a knob setting"),
        (["--url", "http://127.0.0.1:9"], "Cannot reach http://127.0.0.1:9"),
        (["--url", "ftp://x"], "Invalid --url: must start with http:// or https://"),
        (["--url", "http://[::1"], "Invalid --url: its IPv6 address misses the closing ']'"),
        (["--ramp-up", "inf"], "Invalid value for '--ramp-up': inf is not a finite number"),
        (["--seed", "1" + "0" * 20], "Invalid --seed: Input should be less than or equal to"),
        (["--profile", "/nonexistent/p.toml"], "does not exist"),
        (["--scenario", "chess"], "Unknown scenario 'chess'"),
        (["--set", "nosuch=1"], "has no setting 'nosuch'"),
        (["--server-args", "--a 'b"], "--server-args cannot be split"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = repro("run", "--sessions", "1", *args, "--out", str(tmp_path / "x"), timeout=60)
    assert message in first_error_line(done)


def test_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = repro(
            "run", "--sessions", "1", "--port", str(port), "--out", str(tmp_path / "x"), timeout=60
        )
    assert f"Port {port} on 127.0.0.1 is already in use" in first_error_line(done)


def test_unreadable_profile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[engine]\nname = 'x'\nversion = 1\n")
    done = repro("run", "--profile", str(bad), "--out", str(tmp_path / "x"), timeout=60)
    assert "is invalid at 'engine.version'" in first_error_line(done)


def test_engine_that_fails_to_start_shows_its_last_log_lines(
    tmp_path: Path, repo_root: Path
) -> None:
    text = (repo_root / "repro" / "profiles" / "sim.toml").read_text()
    broken = tmp_path / "broken.toml"
    broken.write_text(
        text.replace(
            '"--log-level", "{log_level}"', '"--log-level", "{log_level}", "--no-such-flag"'
        )
    )
    out = tmp_path / "run"
    done = repro(
        "run", "--profile", str(broken), "--topology", "single", "--out", str(out), timeout=60
    )
    err = first_error_line(done)
    assert "The single engine process exited with code 2 before it became healthy" in err
    assert "--no-such-flag" in err  # the engine's own complaint, from its log
    # Only the parser's verdict, not the usage text above it in the log.
    assert done.stderr.rstrip().endswith(
        "python -m repro.sim: error: unrecognized arguments: --no-such-flag"
    )
    assert "usage:" not in done.stderr and "[--seed SEED]" not in done.stderr
    assert summary(out)["error"].startswith("The single engine process exited")


def test_existing_run_folder_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "summary.json").write_text("{}")
    done = repro("run", "--out", str(tmp_path / "old"), timeout=60)
    assert "already exists and is not empty" in first_error_line(done)
    assert (tmp_path / "old" / "summary.json").read_text() == "{}"


def test_paths_that_cannot_be_written_are_one_sentence_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = repro("run", "--sessions", "1", "--out", str(blocker / "run"), timeout=60)
    assert f"Cannot create the run folder {blocker / 'run'}" in first_error_line(done)
    # Checked before any load is spent: no run folder appears.
    done = repro("gate", "--junit", str(blocker / "j.xml"), "--out", str(tmp_path / "g"))
    assert "a-file is a file, not a folder" in first_error_line(done)
    assert not (tmp_path / "g").exists()
    done = repro(
        "bisect", "flags", "--bad", "index_k=bf16", "--good", "index_k=fp8",
        "--out", str(blocker / "b"),
    )  # fmt: skip
    assert f"Cannot create the trial cache {blocker / 'b'}" in first_error_line(done)
