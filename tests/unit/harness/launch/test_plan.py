"""LaunchPlan: knob values become flags and environment per role; ports are free and distinct."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

import repro.harness.launch.plan as plan_module
from repro.errors import UsageError
from repro.harness.launch.plan import build_plan, check_plan
from repro.harness.launch.profile import load_profile
from repro.spec import RunSpec


@pytest.fixture
def sim(repo_root: Path):
    return load_profile(repo_root / "repro" / "profiles" / "sim.toml")


def plan_for(profile, **fields):
    spec = RunSpec.build(**fields)
    return build_plan(profile, spec, profile.resolve_knobs(spec.knobs))


def test_pd_starts_workers_before_the_router(sim) -> None:
    plan = plan_for(sim)
    assert [r.name for r in plan.roles] == ["prefill", "decode", "router"]
    assert plan.entry == "router" and plan.entry_url == plan.roles[-1].url
    ports = [r.port for r in plan.roles]
    assert len(set(ports)) == 3


def test_knobs_become_flags_and_env_on_engine_roles_only(sim) -> None:
    plan = plan_for(sim, knobs={"index_k": "bf16", "cuda_graph": "off", "topk_v2": "off"})
    prefill, decode, router = plan.roles
    for role in (prefill, decode):
        argv = " ".join(role.argv)
        assert "--index-k-dtype bf16" in argv and "--disable-cuda-graph" in argv
        assert "--enable-hierarchical-cache" in argv
        assert role.env == {"SGLANG_OPT_USE_TOPK_V2": "0"}
    assert "--index-k-dtype" not in router.argv and router.env == {}


def test_router_is_wired_to_the_workers_ports(sim) -> None:
    prefill, decode, router = plan_for(sim).roles
    argv = list(router.argv)
    at = argv.index("--prefill")
    assert argv[at + 1] == prefill.url
    bootstrap = prefill.argv[list(prefill.argv).index("--disaggregation-bootstrap-port") + 1]
    assert argv[at + 2] == bootstrap
    assert argv[argv.index("--decode") + 1] == decode.url


def test_server_args_go_to_engine_roles_not_the_router(sim) -> None:
    prefill, decode, router = plan_for(sim, server_args=("--log-level", "debug")).roles
    assert prefill.argv[-2:] == decode.argv[-2:] == ("--log-level", "debug")
    assert "debug" not in router.argv


def test_single_topology_and_fixed_port(sim) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    plan = plan_for(sim, knobs={"topology": "single"}, port=port)
    assert [r.name for r in plan.roles] == ["single"] and plan.roles[0].port == port


def test_port_in_use_is_refused(sim) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UsageError, match=f"Port {port} on 127.0.0.1 is already in use"):
            plan_for(sim, port=port)


def test_unknown_setting_and_required_setting(sim, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="has no setting 'nope'"):
        plan_for(sim, settings={"nope": "1"})
    text = re.sub(
        r'^time_scale = "[^"]*"',
        'time_scale = "REQUIRED"',
        Path(sim.source).read_text(),
        flags=re.M,
    )
    assert 'time_scale = "REQUIRED"' in text
    (tmp_path / "p.toml").write_text(text)
    with pytest.raises(
        UsageError, match="needs a value for 'time_scale'; give it with --set time_scale=VALUE"
    ):
        plan_for(load_profile(tmp_path / "p.toml"))


def test_profile_dir_is_the_profiles_own_folder(tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "p.toml").write_text(
        '[engine]\nname = "t"\nversion = "1"\n[topologies.single]\nroles = ["single"]\n'
        'entry = "single"\n[roles.single]\n'
        'command = ["{profile_dir}/serve.sh", "--port", "{port}", "--upstream", "{{port}}"]\n'
    )
    [role] = plan_for(load_profile(folder / "p.toml")).roles
    assert role.argv == (
        f"{folder.resolve()}/serve.sh",
        "--port",
        str(role.port),
        "--upstream",
        "{port}",
    )


def test_repo_root_is_the_checkout_and_from_a_wheel_asks_for_the_setting(
    sim, repo_root: Path, monkeypatch
) -> None:
    router = plan_for(sim, knobs={"router": "sglang"}).role("router")
    assert router.argv[0] == f"{repo_root}/.cache/sglang-0.5.23/bin/python"
    monkeypatch.setattr(plan_module, "source_checkout", lambda: None)  # as from a wheel
    assert plan_for(sim).role("router").argv[1:3] == ("-m", "repro.sim")  # unused: no error
    with pytest.raises(
        UsageError,
        match=r"Role 'router' of profile .*sim.toml needs the setting 'sglang_router_python', "
        r"whose value uses \{repo_root\}, repro's source checkout, but this repro is installed "
        r"without one \(from a wheel\); give it with --set sglang_router_python=VALUE\.",
    ):
        plan_for(sim, knobs={"router": "sglang"})
    given = plan_for(sim, knobs={"router": "sglang"}, settings={"sglang_router_python": "/x/py"})
    assert given.role("router").argv[0] == "/x/py"


def test_check_plan_fails_like_build_plan_and_takes_no_port(sim, monkeypatch) -> None:
    monkeypatch.setattr(plan_module, "free_ports", None)  # would raise if called
    spec = RunSpec.build(settings={"nope": "1"})
    with pytest.raises(UsageError, match="has no setting 'nope'"):
        check_plan(sim, spec, sim.resolve_knobs({}))
    check_plan(sim, RunSpec.build(), sim.resolve_knobs({"topology": "single"}))
