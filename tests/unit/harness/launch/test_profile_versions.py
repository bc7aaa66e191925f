"""A profile across engine releases ([engine] version_setting, [versions."RANGE"]) and the
command that builds a missing environment ([builds])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.harness.launch.local_role import LocalRole
from repro.harness.launch.plan import RolePlan, build_plan, check_plan
from repro.harness.launch.preflight import check_plans
from repro.harness.launch.profile import Profile, load_profile
from repro.harness.launch.versions import VersionRange, version_key
from repro.spec import DEFAULT_PROFILES, RunSpec

RELEASES = """
[engine]
name = "toy"
version = "0.32.0"
version_setting = "toy_version"
[settings]
toy_version = "0.32.0"
python = "{profile_dir}/envs/toy-{toy_version}/bin/python"
log_flag = "--log-level"
[builds]
python = "scripts/build-toy-env {toy_version}"
[topologies.single]
roles = ["single"]
entry = "single"
[roles.single]
command = ["{python}", "-m", "toy", "--port", "{port}", "{log_flag}", "warning"]
[knobs.cache]
values = ["on", "off"]
map.on.single = { args = ["--enable-cache"] }
map.off.single = { args = ["--no-enable-cache"] }
[knobs.fast]
values = ["off", "on"]
map.on.single = { args = ["--fast"] }

# Before 0.20 the log flag had another name and caching had no "no-" form.
[versions."<0.20"]
settings = { log_flag = "--log" }
knobs.cache.map.off.single = { args = ["--disable-cache"] }
# Before 0.14 there was no fast path at all, and the server wanted a flag of its own.
[versions."<0.14"]
roles.single = { args = ["--legacy"], env = { TOY_OLD = "1" } }
knobs.fast.unmapped = { native = "off", hint = "toy before 0.14 has no fast path" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toy.toml"
    path.write_text(text)
    return path


def plan_at(profile: Profile, version: str | None, **knobs: str):
    settings = {"toy_version": version} if version else {}
    spec = RunSpec.build(profile=str(profile.source), settings=settings, knobs=knobs)
    return build_plan(profile, spec, profile.resolve_knobs(knobs))


@pytest.mark.parametrize(
    ("version", "inside", "outside"),
    [
        ("0.12", ["==0.12.0", ">=0.12,<0.17", "<0.12.1"], ["<0.12", "!=0.12.0"]),
        ("0.12.0.post2", [">0.12.0", "<0.12.1", ">=0.12"], ["==0.12.0", "<=0.12"]),
        ("0.20.0rc1", ["<0.20", ">=0.19.1"], [">=0.20"]),
        ("0.19.1", ["<0.20", ">=0.19"], [">=0.20", "<0.19.1"]),
    ],
)
def test_release_ranges_compare_as_registries_do(version, inside, outside) -> None:
    assert all(version in VersionRange.parse(r) for r in inside)
    assert not any(version in VersionRange.parse(r) for r in outside)


def test_a_release_number_that_cannot_be_read_says_so() -> None:
    with pytest.raises(ValueError, match=r"'0\.x' is not a release number"):
        version_key("0.x")
    with pytest.raises(ValueError, match=r"'0\.20' is not a version range"):
        VersionRange.parse("0.20")


def test_the_default_release_gets_the_profile_as_written(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, RELEASES))
    plan = plan_at(profile, None, cache="off", fast="on")
    (single,) = plan.roles
    assert plan.engine_identity == "toy 0.32.0"
    assert single.argv[0] == f"{tmp_path}/envs/toy-0.32.0/bin/python"
    assert single.argv[5:] == ("--log-level", "warning", "--no-enable-cache", "--fast")
    assert "TOY_OLD" not in single.env


def test_an_older_release_gets_its_ranges_flags_settings_and_identity(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, RELEASES))
    plan = plan_at(profile, "0.17.1", cache="off", fast="on")
    (single,) = plan.roles
    assert plan.engine_identity == "toy 0.17.1"
    assert single.argv[0] == f"{tmp_path}/envs/toy-0.17.1/bin/python"
    # The setting from "<0.20", the knob's mapping replaced there; "<0.14" does not hold.
    assert single.argv[5:] == ("--log", "warning", "--disable-cache", "--fast")
    on = plan_at(profile, "0.17.1", cache="on").roles[0]
    assert on.argv[-1] == "--enable-cache"  # what the range does not replace stays


def test_every_range_that_holds_applies_in_the_order_written(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, RELEASES))
    (single,) = plan_at(profile, "0.12.0.post2", cache="off").roles
    assert single.argv[5:] == ("--log", "warning", "--legacy", "--disable-cache")
    assert single.env["TOY_OLD"] == "1"


def test_a_knob_a_release_lacks_is_refused_with_its_hint(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, RELEASES))
    assert plan_at(profile, "0.12.0", fast="off").roles  # its native value is fine
    with pytest.raises(UsageError, match=r"cannot set fast=on: toy before 0\.14 has no fast path"):
        plan_at(profile, "0.12.0", fast="on")
    spec = RunSpec.build(profile=str(profile.source), settings={"toy_version": "0.12.0"})
    with pytest.raises(UsageError, match="no fast path"):  # campaigns check plans this way
        check_plan(profile, spec, profile.resolve_knobs({"fast": "on"}))


def test_a_release_number_that_is_no_release_is_one_sentence(tmp_path: Path) -> None:
    profile = load_profile(write(tmp_path, RELEASES))
    with pytest.raises(UsageError, match=r"--set toy_version=latest: 'latest' is not a release"):
        plan_at(profile, "latest")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace('toy_version = "0.32.0"\npython', 'toy_version = "0.31.0"\npython'),
            "version_setting names 'toy_version': [settings] must declare it with the engine's "
            'version, toy_version = "0.32.0"',
        ),
        (
            lambda t: t.replace('version_setting = "toy_version"\n', ""),
            "[versions] tables need [engine] version_setting",
        ),
        (lambda t: t.replace('"<0.14"]', '"before 0.14"]'), "is not a version range"),
        (
            lambda t: t.replace("roles.single = {", "roles.double = {"),
            "names role 'double', which has no [roles.double]",
        ),
        (
            lambda t: t.replace("knobs.fast.unmapped", "knobs.faster.unmapped"),
            "names knob 'faster', which [knobs] does not declare",
        ),
        (
            lambda t: t.replace("knobs.cache.map.off", "knobs.cache.map.maybe"),
            "map names value 'maybe'",
        ),
        (
            lambda t: t.replace('settings = { log_flag = "--log" }', 'settings = { nope = "1" }'),
            "sets 'nope', which is not a [settings] entry",
        ),
        (
            lambda t: t.replace(
                'settings = { log_flag = "--log" }', 'settings = { log_flag = "{port}" }'
            ),
            "uses {port}; a setting may use only these placeholders",
        ),
        (
            lambda t: t.replace("[builds]\npython", "[builds]\nruby"),
            "[builds] names 'ruby', which [settings] does not declare",
        ),
    ],
)
def test_invalid_release_tables_say_what_is_wrong(tmp_path: Path, edit, message: str) -> None:
    with pytest.raises(UsageError) as err:
        load_profile(write(tmp_path, edit(RELEASES)))
    assert message in str(err.value)


def test_the_vllm_profile_runs_another_release_from_its_own_environment(
    repo_root: Path,
) -> None:
    profile = load_profile(DEFAULT_PROFILES["vllm"])
    spec = RunSpec.build(backend="vllm", settings={"vllm_version": "0.19.1"})
    plan = build_plan(profile, spec, profile.resolve_knobs({}))
    (single,) = plan.roles
    assert plan.engine_identity == "vllm 0.19.1"
    env = repo_root / ".cache" / "vllm-0.19.1"
    assert single.argv[0] == str(env / "bin" / "python")
    assert single.env["TMPDIR"] == f"{env}/state/tmp"
    assert single.build == "scripts/build-vllm-env 0.19.1"


# -- a missing environment -----------------------------------------------------------------


def missing_env_profile(tmp_path: Path) -> Path:
    return write(tmp_path, RELEASES)  # its envs/ folder does not exist


def test_a_missing_environment_names_the_command_that_builds_it(tmp_path: Path) -> None:
    profile = load_profile(missing_env_profile(tmp_path))
    (single,) = plan_at(profile, "0.19.1").roles
    with pytest.raises(UsageError) as err:
        LocalRole(single, tmp_path, 1.0)
    assert str(err.value) == (
        f"The single role's program {tmp_path}/envs/toy-0.19.1/bin/python does not exist: "
        "build it with `scripts/build-toy-env 0.19.1` (or point the profile's setting at "
        "another)."
    )
    assert not (tmp_path / "single.log").exists()  # refused before anything started


def test_preflight_of_a_missing_environment_names_the_command_too(tmp_path: Path) -> None:
    profile = load_profile(missing_env_profile(tmp_path))
    plan = plan_at(profile, "0.20.2")
    profile = profile.model_copy(
        update={
            "roles": {
                "single": profile.roles["single"].model_copy(update={"preflight": "vllm-server"})
            }
        }
    )
    (report,) = check_plans([plan], profile)
    (problems,) = report.problems_by_role().values()
    assert problems == (
        f"The single role's program {tmp_path}/envs/toy-0.20.2/bin/python does not exist: "
        "build it with `scripts/build-toy-env 0.20.2` (or point the profile's setting at "
        "another).",
    )


def test_a_program_the_user_named_gets_no_build_hint(tmp_path: Path) -> None:
    profile = load_profile(missing_env_profile(tmp_path))
    spec = RunSpec.build(profile=str(profile.source), server_python="/nowhere/bin/python")
    (single,) = build_plan(profile, spec, profile.resolve_knobs({})).roles
    assert single.build is None and single.missing_program() is None


def test_an_existing_program_is_not_reported(tmp_path: Path) -> None:
    role = RolePlan("single", (sys.executable, "-V"), {}, 1, "http://x/health", False, build="b")
    assert role.missing_program() is None


def test_run_with_sglang_router_missing_says_which_script_builds_it(tmp_path: Path) -> None:
    """`--router sglang` used to end in "No such file or directory" with no hint."""
    sim = DEFAULT_PROFILES["sim"].read_text()
    moved = sim.replace(
        'sglang_router_python = "{repo_root}/.cache/sglang-0.5.23/bin/python"',
        'sglang_router_python = "{profile_dir}/no-sglang-env/bin/python"',
    )
    assert moved != sim
    profile = write(tmp_path, moved)
    done = subprocess.run(
        [sys.executable, "-m", "repro", "run", "--profile", str(profile), "--topology", "pd",
         "--router", "sglang", "--sessions", "1", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        f"The router role's program {tmp_path}/no-sglang-env/bin/python does not exist: "
        "build it with `scripts/build-sglang-env`" in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_profile_show_lists_the_builds_and_the_release_ranges(tmp_path: Path) -> None:
    from repro.harness.launch.profile_view import profile_document

    doc = profile_document(load_profile(write(tmp_path, RELEASES)))
    assert doc["builds"] == {"python": "scripts/build-toy-env {toy_version}"}
    assert list(doc["versions"]) == ["<0.20", "<0.14"]
    assert doc["versions"]["<0.20"]["settings"] == {"log_flag": "--log"}
    assert doc["versions"]["<0.14"]["knobs"]["fast"]["unmapped"]["native"] == "off"
