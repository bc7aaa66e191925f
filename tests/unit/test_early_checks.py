"""run, gate and preflight refuse bad settings, knobs and placeholders before anything starts
or is written: one sentence, exit 2, no run folder (with --url too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from repro.cli import app

CASES = [
    (
        ["--set", "nope=1"],
        "has no setting 'nope'; its settings are: host_link_gbytes_per_s, kv_pool_gb,",
    ),
    (["--knob", "nope=1"], "has no knob 'nope'; its knobs are: topology,"),
    (
        ["--hicache", "maybe"],
        "Knob 'hicache' has no value 'maybe' in profile sim.toml; choose one of: on, off.",
    ),
    (["--set", "time_scale=REQUIRED"], "needs a value for 'time_scale'; give it with --set"),
    (["--set", "log_level={python"], "has a lone brace in '{python'"),
    (["--backend", "sglang"], "needs a value for 'model_path'; give it with --model-path M."),
]


@pytest.mark.parametrize("command", ["run", "gate", "preflight"])
@pytest.mark.parametrize(("args", "message"), CASES)
def test_refused_before_anything_starts(
    tmp_path: Path, command: str, args: list[str], message: str
) -> None:
    out = ["--out", str(tmp_path / "run")] if command != "preflight" else []
    result = CliRunner().invoke(app, [command, *args, *out])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", ["run", "gate"])
def test_with_url_an_unknown_setting_or_knob_is_refused_too(tmp_path: Path, command: str) -> None:
    url = ["--url", "http://127.0.0.1:9", "--out", str(tmp_path / "run")]
    launches_none = (
        "--set (or --model-path) shapes an engine repro launches; with --url it launches none."
    )
    for args, message in [(CASES[0][0], launches_none), *CASES[1:3]]:
        result = CliRunner().invoke(app, [command, *url, *args])
        assert result.exit_code == 2 and message in result.stderr, result.output
        assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "args",
    [["--server-args", "--tp 2"], ["--port", "31000"], ["--health-timeout", "5"],
     ["--server-python", "/usr/bin/python3"], ["--model-path", "m"]],
)  # fmt: skip
def test_with_url_what_only_shapes_a_launch_is_refused(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(app, ["run", "--url", "http://127.0.0.1:9", *args])
    assert result.exit_code == 2, result.output
    assert "shapes an engine repro launches; with --url it launches none." in result.stderr
    option = "--set (or --model-path)" if args[0] == "--model-path" else args[0]
    assert result.stderr.startswith(f"error: {option} shapes")
