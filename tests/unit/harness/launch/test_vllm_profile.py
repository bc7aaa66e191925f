"""The vLLM profile: its plans, its releases, and every engine knob combination through `vllm
serve`'s own parser in the vLLM environment (built on first use by scripts/build-vllm-env)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.harness.launch.plan import LaunchPlan, build_plan
from repro.harness.launch.preflight import check_plans
from repro.harness.launch.profile import Profile, load_profile
from repro.spec import DEFAULT_PROFILES, RunSpec

ENGINE_KNOBS = (
    "prefix_caching",
    "chunked_prefill",
    "compile",
    "max_batched_tokens",
    "max_num_seqs",
    "reasoning",
)


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile(DEFAULT_PROFILES["vllm"])


def plan_for(profile: Profile, knobs=None, server_args=(), **fields) -> LaunchPlan:
    spec = RunSpec.build(
        backend="vllm", knobs=knobs or {}, server_args=tuple(server_args), **fields
    )
    return build_plan(profile, spec, profile.resolve_knobs(spec.knobs))


def test_backend_vllm_selects_the_profile_and_its_defaults(
    profile: Profile, repo_root: Path
) -> None:
    plan = plan_for(profile)
    (single,) = plan.roles
    assert plan.engine_identity == "vllm 0.32.0" and plan.config["topology"] == "single"
    assert single.argv[:5] == (
        str(repo_root / ".cache" / "vllm-0.32.0" / "bin" / "python"),
        "-m", "vllm.entrypoints.cli.main", "serve", str(repo_root / ".cache" / "tiny-qwen2"),
    )  # fmt: skip
    argv = " ".join(single.argv)
    assert "--max-model-len 65536" in argv and "--tool-call-parser hermes" in argv
    assert argv.endswith(
        "--enable-prefix-caching --enable-chunked-prefill --enforce-eager --reasoning-parser qwen3 "
        '--default-chat-template-kwargs {"enable_thinking": false}'
    )
    state = repo_root / ".cache" / "vllm-0.32.0" / "state"
    assert single.env["TMPDIR"] == f"{state}/tmp" and single.env["HF_HUB_OFFLINE"] == "1"
    assert single.env["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_batch_invariance_is_refused_on_cpu_with_the_gpu_mapping(profile: Profile) -> None:
    with pytest.raises(UsageError, match="no batch-invariant kernels for the CPU platform") as err:
        profile.resolve_knobs({"batch_invariant": "on"})
    assert 'map.on.single = { env = { VLLM_BATCH_INVARIANT = "1" } }' in str(err.value)


def test_proxied_topology_starts_the_engine_then_the_proxy_in_front(profile: Profile) -> None:
    knobs = {"topology": "proxied", "proxy_rule": "splice", "proxy_min_streams": "8"}
    plan = plan_for(profile, knobs=knobs, server_args=["--max-num-seqs", "4"], seed=3)
    single, proxy = plan.roles
    assert (single.name, proxy.name, plan.entry) == ("single", "proxy", "proxy")
    assert proxy.argv[1:4] == ("-m", "repro", "proxy")
    argv = " ".join(proxy.argv)
    assert f"--upstream {single.url}" in argv and "--seed 3" in argv
    assert "--rule splice" in argv and "--min-streams 8" in argv and "--target any" in argv
    assert "--max-num-seqs" not in argv  # --server-args go to the engine, not the proxy
    assert single.argv[-2:] == ("--max-num-seqs", "4")


@pytest.fixture(scope="module")
def checked(profile: Profile, vllm_python: Path, fixed_ports) -> dict:
    """One probe run: every engine knob combination, bad --server-args, a bad environment."""
    axes = [[(k, v) for v in profile.knob_values(k)] for k in ENGINE_KNOBS]
    combos = [dict(c) for c in itertools.product(*axes)]
    plans = [plan_for(profile, knobs=c) for c in combos]
    bad_args = plan_for(
        profile,
        server_args=["--max-model", "100", "--enable-prefix-cachng", "--max-num-seqs", "x"],
    )
    bad_env = plan_for(profile)
    single = bad_env.roles[0]
    env = single.env | {"VLLM_CPU_KVCACHE_SPACE": "lots", "VLLM_NO_SUCH_SWITCH": "1"}
    bad_env = replace(bad_env, roles=(replace(single, env=env),))
    reports = check_plans([*plans, bad_args, bad_env], profile)
    return {
        "combos": combos,
        "reports": reports[:-2],
        "bad_args": reports[-2],
        "bad_env": reports[-1],
    }


def test_every_engine_knob_combination_is_accepted_by_vllm_serve(checked) -> None:
    assert len(checked["combos"]) == 2 * 2 * 2 * 4 * 4 * 2
    failing = [
        (c, r.problems_by_role())
        for c, r in zip(checked["combos"], checked["reports"], strict=True)
        if not r.ok
    ]
    assert failing == []
    versions = {(v.role, v.checker, v.versions) for r in checked["reports"] for v in r.verdicts}
    assert versions == {("single", "vllm-server", "vllm 0.32.0+cpu")}


def test_bad_flags_are_each_named_with_vllm_s_abbreviation_trap(checked) -> None:
    (problems,) = checked["bad_args"].problems_by_role().values()
    assert problems == (
        "argument --max-num-seqs: invalid int value: 'x'",
        "--max-model: not a flag; vLLM's own launcher (abbreviations on) would silently take "
        "it as --max-model-len: write the full name",
        "--enable-prefix-cachng: not a flag; did you mean --enable-prefix-caching or "
        "--no-enable-prefix-caching?",
    )


def test_vllm_environment_variables_are_read_as_vllm_reads_them(checked) -> None:
    (verdict,) = checked["bad_env"].verdicts
    assert len(verdict.problems) == 1
    assert verdict.problems[0].startswith("VLLM_CPU_KVCACHE_SPACE='lots': ")
    assert (
        "VLLM_NO_SUCH_SWITCH is not declared in vllm/envs.py; vLLM ignores it" in verdict.warnings
    )
