"""A profile's [run] table: options the user left unsaid, settings scaled by sessions in
flight, validated like the options themselves; what the user typed always wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.errors import UsageError
from repro.harness import resolve
from repro.harness.launch.profile import load_profile
from repro.spec import RunSpec
from tests.unit.harness.launch.test_profile import MINIMAL, write

RUN_TABLE = """
[settings]
cache_gib = "1"
[run]
context_max_tokens = 14000
max_output_tokens = 64
thinking = false
[run.settings_by_concurrency.cache_gib]
41 = "2"
91 = "4"
"""


def spec_for(path: Path, **fields) -> RunSpec:
    return resolve(RunSpec.build(profile=path, **fields)).spec


def test_unsaid_options_come_from_the_profile_and_given_ones_win(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + RUN_TABLE)
    filled = spec_for(path, sessions=8)
    assert (filled.context_max_tokens, filled.max_output_tokens, filled.thinking) == (
        14000, 64, False,
    )  # fmt: skip
    assert filled.max_turns == RunSpec.model_fields["max_turns"].default  # not in the table
    given = spec_for(path, sessions=8, context_max_tokens=6000, thinking=True)
    assert (given.context_max_tokens, given.max_output_tokens, given.thinking) == (6000, 64, True)


def test_a_scaled_setting_follows_sessions_in_flight_unless_set(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + RUN_TABLE)
    assert "cache_gib" not in spec_for(path, sessions=40).settings  # [settings] holds: 1
    assert spec_for(path, sessions=41).settings["cache_gib"] == "2"
    assert spec_for(path, sessions=500, concurrency=64).settings["cache_gib"] == "2"
    assert spec_for(path, sessions=91).settings["cache_gib"] == "4"
    assert spec_for(path, sessions=91, settings={"cache_gib": "3"}).settings["cache_gib"] == "3"


def test_filling_twice_changes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + RUN_TABLE)
    once = spec_for(path, sessions=64)
    assert resolve(once).spec == once


def test_the_profile_oracle_default_brings_scripted_history(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace('version = "1"', 'version = "1"\noracle = "divergence"'))
    spec = spec_for(path)
    assert (spec.oracle, spec.history) == ("divergence", "scripted")
    assert spec_for(path, oracle="validity").history == "live"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[run]\ncontext_max = 9000", r"at 'run.context_max': no such key; did you mean 'context_max_tokens'"),
        ("[run]\ncontext_max_tokens = 100", r"at 'run.context_max_tokens': Input should be greater than or equal to 4000"),
        ("[run]\nthinking = \"no\"", r"at 'run.thinking': Input should be a valid boolean"),
        ("[run]\nmax_output_tokens = 64.5", r"at 'run.max_output_tokens': Input should be a valid integer"),
        ("[run]\nsessions = 8", r"at 'run.sessions': no such key"),
        ("[run.settings_by_concurrency.kv]\n8 = \"2\"", r"scales 'kv', which \[settings\] does not declare"),
        ("[settings]\nkv = \"1\"\n[run.settings_by_concurrency.kv]\n08 = \"2\"", r"'08' is not a number of sessions"),
        ("[settings]\nkv = \"1\"\n[run.settings_by_concurrency.kv]\n8 = \"{port}\"", r"'run.settings_by_concurrency.kv.8' uses \{port\}; a setting may use only"),
        ("[run.modelled_s]\nstall_after_s = 120", r"time_scale_setting and \[run.modelled_s\] go together"),
        ("[run]\ntime_scale_setting = \"ts\"\n[run.modelled_s]\nstall_after_s = 120", r"time_scale_setting names 'ts', which \[settings\] does not declare"),
        ("[settings]\nts = \"1\"\n[run]\ntime_scale_setting = \"ts\"\nstall_after_s = 9\n[run.modelled_s]\nstall_after_s = 120", r"'stall_after_s' is in \[run\] and in \[run.modelled_s\]: give one"),
        ("[settings]\nts = \"1\"\n[run]\ntime_scale_setting = \"ts\"\n[run.modelled_s]\nsessions = 120", r"at 'run.modelled_s.sessions': Input should be 'ramp_up_s', 'turn_timeout_s' or 'stall_after_s'"),
        ("[settings]\nts = \"1\"\n[run]\ntime_scale_setting = \"ts\"\n[run.modelled_s]\nramp_up_s = -1", r"at 'run.modelled_s.ramp_up_s': Input should be greater than 0"),
    ],
)  # fmt: skip
def test_a_bad_run_table_is_one_sentence_naming_the_key(
    tmp_path: Path, table: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        load_profile(write(tmp_path, MINIMAL + table))


def test_an_engine_on_a_modelled_clock_gets_its_pacing_and_deadlines_at_its_time_scale() -> None:
    """The embedded engine's stuck hand-over lasts 60 modelled s; at time_scale 1.0 that is a
    minute of wall time, which a fixed 30 s detector would call a wedge. Its ramp-up and turn
    deadline scale alike, so a run at any scale paces and judges the engine the same."""

    def timing(**fields: object) -> tuple[float, float, float]:
        spec = resolve(RunSpec.build(**fields)).spec
        return spec.ramp_up_s, spec.turn_timeout_s, spec.stall_after_s

    assert timing() == (2.0, 180.0, 30.0)  # the profile's time_scale of 0.25
    assert timing(settings={"time_scale": "1.0"}) == (8.0, 720.0, 120.0)
    assert timing(settings={"time_scale": "0.1"}) == (0.8, 180.0, 30.0)  # deadlines: a floor
    given = timing(settings={"time_scale": "1.0"}, stall_after_s=5.0, ramp_up_s=0.0)
    assert given == (0.0, 720.0, 5.0)  # given options win


def test_dry_run_of_the_vllm_backend_shows_the_scaled_kv_cache() -> None:
    shown = CliRunner().invoke(app, ["run", "--backend", "vllm", "--sessions", "200", "--dry-run"])
    assert shown.exit_code == 0, shown.output
    assert "VLLM_CPU_KVCACHE_SPACE=2 " in shown.output and "--max-model-len 65536" in shown.output
    small = CliRunner().invoke(app, ["run", "--backend", "vllm", "--sessions", "64", "--dry-run"])
    assert "VLLM_CPU_KVCACHE_SPACE=1 " in small.output


def test_profile_show_lists_the_run_defaults() -> None:
    shown = CliRunner().invoke(app, ["profile", "show", "--backend", "vllm", "--json"])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.output)
    assert doc["engine"]["oracle"] == "divergence"
    assert doc["run"]["context_max_tokens"] == 14000 and doc["run"]["thinking"] is False
    assert doc["run"]["stall_after_s"] == 300.0
    assert doc["settings_by_concurrency"]["kv_cache_gib"]["161"] == "2"


FORMAT_TABLE = """
[settings]
model_format = "hermes"
[run]
tool_format = "{model_format}"
"""


def test_the_judged_format_is_the_profiles_from_its_setting(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + FORMAT_TABLE)
    assert spec_for(path).tool_format == "hermes"
    assert spec_for(path, settings={"model_format": "kimi_k2"}).tool_format == "kimi_k2"
    assert spec_for(path, tool_format="openai-parsed").tool_format == "openai-parsed"  # given wins
    plain = write(tmp_path, MINIMAL)
    assert spec_for(plain).tool_format is None  # DSML, as before


def test_a_fixed_format_and_the_bundled_engines(tmp_path: Path, repo_root: Path) -> None:
    path = write(tmp_path, MINIMAL + '[run]\ntool_format = "glm47"\n')
    assert spec_for(path).tool_format == "glm47"
    sim = repo_root / "repro" / "profiles" / "sim.toml"
    assert spec_for(sim).tool_format == "dsml-v32"
    assert spec_for(sim, settings={"model_format": "harmony"}).tool_format == "harmony"


def test_an_unknown_format_is_refused_in_one_sentence(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + FORMAT_TABLE)
    with pytest.raises(UsageError, match="'qwen9' is not one repro reads; known: dsml-v32"):
        spec_for(path, settings={"model_format": "qwen9"})
    undeclared = write(tmp_path, MINIMAL + '[run]\ntool_format = "{family}"\n')
    with pytest.raises(
        UsageError, match=r"tool_format uses \{family\}, which \[settings\] does not"
    ):
        spec_for(undeclared)
