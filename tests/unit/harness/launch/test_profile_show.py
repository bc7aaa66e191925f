"""`repro profile show`: every bundled profile and a custom one, as tables and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.harness.launch.profile import load_profile

BUNDLED = sorted((Path(__file__).parents[4] / "repro" / "profiles").rglob("*.toml"))
assert BUNDLED, "no bundled profile found: the path to repro/profiles is wrong"

CUSTOM = """
[engine]
name = "team-engine"
version = "2.1"
description = "our fork behind a wrapper"

[settings]
python = "python3"
model = "REQUIRED"

[topologies.single]
roles = ["single"]
entry = "single"

[roles.single]
command = ["{profile_dir}/wrap.sh", "--port", "{port}", "--", "{python}", "-m", "engine",
           "--port", "{{port}}", "--model", "{model}"]
health = "/ready"
env = { TEAM_MODE = "strict" }

[knobs.fast_path]
values = ["off", "on"]
description = "our fused kernel [experimental]"
map.on.engine = { args = ["--fast-path"], env = { FAST = "1" } }

[knobs.hicache]
values = ["off", "on"]
default = "off"
unmapped = { native = "off", hint = "not in our fork" }

[knobs.index_k]
values = ["bf16", "fp8"]
map.bf16.single = { args = ["--index-k", "bf16"] }
"""


def show(*args: str, columns: int = 80):
    return CliRunner().invoke(app, ["profile", "show", *args], env={"COLUMNS": str(columns)})


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_profile_as_json(path: Path) -> None:
    result = show("--profile", str(path), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    profile = load_profile(path)
    assert doc["identity"] == profile.identity()
    assert list(doc["knobs"]) == profile.knob_names()
    defaults = profile.defaults()
    for name, knob in doc["knobs"].items():
        assert knob["values"] == profile.knob_values(name)
        assert knob["default"] == defaults[name]
    for name, role in doc["roles"].items():
        assert role["command"] == profile.roles[name].command
        assert role["health_url"] == f"http://127.0.0.1:{{port}}{profile.roles[name].health}"
    assert {k: s["default"] for k, s in doc["settings"].items()} == profile.settings


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_profile_as_text_cuts_nothing_at_80_columns(path: Path) -> None:
    result = show("--profile", str(path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    words = set(result.stdout.split())
    profile = load_profile(path)
    for name, role in profile.roles.items():  # every word of every argv template is there
        assert set(role.command) <= words, name
    for name in profile.knob_names():
        assert f"{name}:" in words
    for name in profile.settings:
        assert name in words


def test_a_custom_profile_shows_its_own_knobs_defaults_and_rules(tmp_path: Path) -> None:
    (tmp_path / "team.toml").write_text(CUSTOM)
    doc = json.loads(show("--profile", str(tmp_path / "team.toml"), "--json").stdout)
    assert doc["knobs"]["fast_path"]["default"] == "off"
    assert doc["knobs"]["fast_path"]["default_from"] == "first value"
    assert doc["knobs"]["hicache"]["default_from"] == "profile"
    assert (doc["knobs"]["index_k"]["default"], doc["knobs"]["index_k"]["default_from"]) == (
        "fp8",
        "story",
    )
    assert doc["knobs"]["topology"]["values"] == ["single"]
    assert doc["settings"]["model"] == {
        "default": "REQUIRED",
        "required": True,
        "option": "--set model=VALUE",
    }
    assert doc["roles"]["single"]["health_url"] == "http://127.0.0.1:{port}/ready"
    assert "profile_dir" in doc["placeholders"] and "single_url" in doc["placeholders"]

    text = show("--profile", str(tmp_path / "team.toml")).stdout
    assert "team-engine 2.1 — our fork behind a wrapper" in text
    assert "{profile_dir}/wrap.sh --port {port} -- {python} -m engine --port {{port}}" in text
    assert "fast_path: off*, on   (default from the first value)" in text
    assert "our fused kernel [experimental]" in text  # brackets are text, not markup
    assert "on → engine: adds --fast-path; FAST=1" in text
    assert "unmapped: only off, the engine's own" in text
    assert "model = REQUIRED   (--set model=VALUE)" in text
    assert "index_k: bf16, fp8*   (default from the story)" in text


def test_backend_picks_the_bundled_profile_and_a_bad_one_is_one_sentence(tmp_path) -> None:
    assert json.loads(show("--backend", "sglang", "--json").stdout)["identity"] == "sglang 0.5.23"
    result = show("--profile", str(tmp_path / "nope.toml"))
    assert result.exit_code == 2 and "does not exist" in result.stderr


@pytest.mark.parametrize("command", [["run"], ["gate"], ["bisect", "flags"]])
def test_help_points_at_profile_show_for_a_profiles_own_knobs(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.output.split())
    assert "the story's common ones; `repro profile show` lists every knob of a profile" in text
    assert "(story default fp8; a profile may differ)" in text


def test_the_embedded_engine_shows_its_run_options_in_modelled_seconds() -> None:
    doc = json.loads(show("--json").stdout)
    assert doc["time_scale_setting"] == "time_scale"
    assert doc["modelled_s"]["stall_after_s"] == {"modelled_s": 120.0, "wall_s": 30.0}
    assert doc["modelled_s"]["ramp_up_s"] == {"modelled_s": 8.0, "wall_s": 2.0}
    assert "stall_after_s = 120 modelled s x time_scale (30 s at its default)" in show().stdout
    vllm = json.loads(show("--backend", "vllm", "--json").stdout)
    assert vllm["modelled_s"] == {} and vllm["run"]["stall_after_s"] == 300.0
