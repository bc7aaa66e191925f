"""LaunchPlan: knob values become flags and environment per role; ports are free and distinct."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.harness.plan import build_plan
from repro.harness.profile import load_profile
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
