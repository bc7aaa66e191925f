"""Dry run: the rendering pastes back into a shell as exactly the plan's environment and argv."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from repro.harness.launch.dry_run import render_plan
from repro.harness.launch.plan import LaunchPlan, build_plan
from repro.harness.launch.profile import load_profile
from repro.spec import RunSpec


@pytest.fixture
def pd_plan(repo_root: Path) -> LaunchPlan:
    profile = load_profile(repo_root / "repro" / "profiles" / "sglang-0.5.23.toml")
    spec = RunSpec.build(
        backend="sglang",
        knobs={"cuda_graph": "off", "topk_v2": "off"},
        settings={"model_path": "/models/DeepSeek V3.2", "prefill_gpus": "0,1"},
        server_args=("--json-model-override-args", '{"rope": {"factor": 2}}', "--chunked-prefill-size", "-1"),
    )  # fmt: skip
    return build_plan(profile, spec, profile.resolve_knobs(spec.knobs))


def commands(text: str) -> list[list[str]]:
    """What a POSIX shell would run: comments dropped, continuations joined, `&` split off."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    words = shlex.split(body.replace("\\\n", " "), comments=False)
    runs, current = [], []
    for word in words:
        if word == "&":
            runs.append(current)
            current = []
        else:
            current.append(word)
    assert current == []
    return runs


def test_each_role_pastes_back_as_its_env_and_argv(pd_plan: LaunchPlan) -> None:
    runs = commands(render_plan(pd_plan))
    assert len(runs) == 3
    for run, role in zip(runs, pd_plan.roles, strict=True):
        if role.env:
            assert run[0] == "env"
            assignments = run[1 : 1 + len(role.env)]
            assert dict(a.split("=", 1) for a in assignments) == role.env
            run = run[1 + len(role.env) :]
        assert tuple(run) == role.argv


def test_header_names_the_engine_configuration_order_and_health(pd_plan: LaunchPlan) -> None:
    text = render_plan(pd_plan)
    assert text.startswith("# repro dry run: sglang 0.5.23\n")
    assert "cuda_graph=off" in text and "topk_v2=off" in text
    assert (
        f"# start order: prefill, decode, router; clients talk to router at {pd_plan.entry_url}"
        in text
    )
    for role in pd_plan.roles:
        assert f"# {role.name}: health {role.health_url}" in text
    assert pd_plan.role("router").health_url.endswith("/readiness")
    # Values that need quoting are quoted; flags start their own lines.
    assert "'/models/DeepSeek V3.2'" in text and '\'{"rope": {"factor": 2}}\'' in text
    assert "\\\n    --chunked-prefill-size -1 &" in text
