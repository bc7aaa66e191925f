"""The SGLang profiles against SGLang 0.5.23's and sglang-router 0.3.2's own parsers.

Every knob combination the 0.5.23 profile allows, for single and PD, is built into a plan
and all of them are checked in one probe process; so are the bad --server-args the
abbreviation trap lets through SGLang's own launcher.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from repro.errors import EXIT_ERROR, UsageError
from repro.harness.launch.plan import LaunchPlan, build_plan
from repro.harness.launch.preflight import PreflightReport, check_plans, preflight_plan
from repro.harness.launch.profile import Profile, load_profile
from repro.spec import RunSpec

MODEL = "deepseek-ai/DeepSeek-V3.2"
BAD_SERVER_ARGS = {
    "--tp 2": ("--tp", "--tp-size"),
    "--cuda-graph-max-bs 8": ("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"),
    "--prefill-only": ("--prefill-only", "--prefill-only-disable-kv-cache"),
}


@pytest.fixture(scope="module")
def upstream(repo_root: Path) -> Profile:
    return load_profile(repo_root / "repro" / "profiles" / "sglang-0.5.23.toml")


def plan_for(profile: Profile, python: Path, knobs=None, server_args=(), **settings) -> LaunchPlan:
    spec = RunSpec.build(
        backend="sglang",
        knobs=knobs or {},
        settings={"model_path": MODEL, **settings},
        server_args=tuple(server_args),
        server_python=str(python),
    )
    return build_plan(profile, spec, profile.resolve_knobs(spec.knobs))


def every_combination(profile: Profile) -> list[dict[str, str]]:
    """All values of every knob, unmapped knobs at their only allowed (native) value."""
    axes = []
    for knob in profile.knob_names():
        spec = profile.knobs.get(knob)
        values = [spec.unmapped.native] if spec and spec.unmapped else profile.knob_values(knob)
        axes.append([(knob, value) for value in values])
    return [dict(combo) for combo in itertools.product(*axes)]


@pytest.fixture(scope="module")
def checked(upstream: Profile, sglang_python: Path, fixed_ports) -> dict:
    """One probe run: every combination, the three bad --server-args, a bad router setting."""
    combos = every_combination(upstream)
    plans = [plan_for(upstream, sglang_python, knobs=c) for c in combos]
    bad = {
        text: plan_for(upstream, sglang_python, server_args=text.split())
        for text in BAD_SERVER_ARGS
    }
    bad_router = plan_for(upstream, sglang_python, router_policy="fastest")
    bad_env = plan_for(upstream, sglang_python, knobs={"topology": "single"})
    single = bad_env.roles[0]
    bad_env = replace(
        bad_env,
        roles=(
            replace(
                single,
                env=single.env | {"SGLANG_OPT_USE_TOPK_V2": "maybe", "SGLANG_NO_SUCH_SWITCH": "1"},
            ),
        ),
    )
    old_names = plan_for(
        upstream,
        sglang_python,
        server_args=["--nsa-prefill-backend", "fa3", "--disable-cuda-graph"],
    )
    reports = check_plans([*plans, *bad.values(), bad_router, bad_env, old_names], upstream)
    n = len(plans)
    return {
        "combos": combos,
        "plans": plans,
        "reports": reports[:n],
        "bad": dict(zip(bad, reports[n : n + len(bad)], strict=True)),
        "bad_router": reports[-3],
        "bad_env": reports[-2],
        "old_names": reports[-1],
    }


def test_every_knob_combination_is_accepted_by_sglang_and_the_router(checked, upstream) -> None:
    combos, plans, reports = checked["combos"], checked["plans"], checked["reports"]
    # 2 topologies x hicache 2 x decode_hicache 2 x topk_v2 2 x cuda_graph 2 x max_bs 3
    # x dsa_backend 3 x transfer 3 x batch_invariant 2 x overlap_schedule 2 x tool_parser 2
    # x router_resilience 2
    assert len(combos) == 13824
    assert {c["topology"] for c in combos} == {"single", "pd"}
    failing = [(c, r.problems_by_role()) for c, r in zip(combos, reports, strict=True) if not r.ok]
    assert failing == []
    checked_roles = {(v.role, v.checker, v.versions) for r in reports for v in r.verdicts}
    assert checked_roles == {
        ("single", "sglang-server", "sglang 0.5.23"),
        ("prefill", "sglang-server", "sglang 0.5.23"),
        ("decode", "sglang-server", "sglang 0.5.23"),
        ("router", "sglang-router", "sglang-router 0.3.2"),
    }
    assert all(r.unchecked == () for r in reports)
    # The combinations really differ: every mapped flag reached some argv.
    argvs = {" ".join(role.argv) for p in plans for role in p.roles}
    for flag in ("--enable-hierarchical-cache", "--disaggregation-decode-enable-radix-cache",
                 "--cuda-graph-backend-decode disabled", "--cuda-graph-max-bs-decode 64",
                 "--dsa-decode-backend flashmla_sparse", "--disaggregation-transfer-backend mooncake_tcp",
                 "--tool-call-parser deepseekv32", "--disable-circuit-breaker"):  # fmt: skip
        assert any(flag in argv for argv in argvs), flag


def test_no_role_warns_about_a_deprecated_flag(checked) -> None:
    warnings = {w for r in checked["reports"] for v in r.verdicts for w in v.warnings}
    assert not any("deprecated" in w for w in warnings), warnings


@pytest.mark.parametrize("server_args", list(BAD_SERVER_ARGS))
def test_abbreviated_or_removed_flags_are_rejected_by_name(checked, server_args: str) -> None:
    report: PreflightReport = checked["bad"][server_args]
    flag, full_name = BAD_SERVER_ARGS[server_args]
    assert not report.ok
    problems = report.problems_by_role()
    assert set(problems) == {"prefill", "decode"}  # --server-args go to engine roles only
    for role_problems in problems.values():
        assert len(role_problems) == 1 and role_problems[0].startswith(f"{flag}: not a flag")
        assert full_name in role_problems[0]
    message = report.failure_message()
    assert message.count(f"- {flag}:") == 2 and "nothing was started" in message


def test_a_bad_router_value_is_rejected_by_the_routers_parser(checked) -> None:
    problems = checked["bad_router"].problems_by_role()
    assert list(problems) == ["router"]
    assert "--policy" in problems["router"][0] and "'fastest'" in problems["router"][0]


def test_sglang_environment_values_are_checked(checked) -> None:
    (verdict,) = checked["bad_env"].verdicts
    assert any(p.startswith("SGLANG_OPT_USE_TOPK_V2='maybe'") for p in verdict.problems)
    assert any("SGLANG_NO_SUCH_SWITCH" in w for w in verdict.warnings)
    assert not any("SGLANG_NO_SUCH_SWITCH" in p for p in verdict.problems)


def test_0_5_10_names_fail_or_warn_on_0_5_23(checked) -> None:
    """Why a profile per version: 0.5.23 removed --nsa-* and deprecated --disable-cuda-graph."""
    report = checked["old_names"]
    for verdict in report.verdicts[:2]:
        assert len(verdict.problems) == 1
        assert verdict.problems[0].startswith("--nsa-prefill-backend: not a flag; did you mean")
        assert "--dsa-prefill-backend" in verdict.problems[0]
        assert any("'--disable-cuda-graph' is deprecated" in w for w in verdict.warnings)


def test_preflight_raises_one_usage_error_naming_every_bad_flag(upstream, sglang_python) -> None:
    plan = plan_for(
        upstream,
        sglang_python,
        server_args=["--tp", "2", "--mem-fraction-static", "lots", "--bogus-flag"],
    )
    with pytest.raises(UsageError) as caught:
        preflight_plan(plan, upstream)
    message = str(caught.value)
    assert caught.value.exit_code == EXIT_ERROR
    for role in ("prefill", "decode"):
        assert f"  {role} (sglang-server, sglang 0.5.23):" in message
    assert message.count("- --tp: not a flag") == 2
    assert message.count("--mem-fraction-static: invalid float value: 'lots'") == 2
    assert message.count("- --bogus-flag: not a flag") == 2
    assert "router" not in message.split(":", 1)[1].replace("sglang-router", "")


def test_index_k_bf16_on_upstream_fails_with_the_mapping_hint(upstream) -> None:
    with pytest.raises(UsageError) as caught:
        upstream.resolve_knobs({"index_k": "bf16"})
    message = str(caught.value)
    assert "cannot set index_k=bf16" in message
    assert '"--index-k-dtype", "bf16"' in message and "extra_flags" in message
    assert "profiles/examples/sglang-fork-index-k.toml" in message
    with pytest.raises(UsageError, match="custom kernels"):
        upstream.resolve_knobs({"custom_kernels": "on"})


def test_fork_profile_maps_index_k_and_passes_preflight(repo_root, sglang_python) -> None:
    """The fork's declared flags stand in on upstream SGLang; every other flag is still checked."""
    fork = load_profile(repo_root / "repro" / "profiles" / "examples" / "sglang-fork-index-k.toml")
    good = plan_for(fork, sglang_python, knobs={"index_k": "bf16", "custom_kernels": "on"})
    typo = plan_for(
        fork, sglang_python, knobs={"index_k": "bf16"}, server_args=["--index-k-dtyp", "fp8"]
    )
    wrong_value = plan_for(fork, sglang_python, server_args=["--index-k-dtype", "bf32"])
    for role in good.roles[:2]:
        argv = " ".join(role.argv)
        assert "--index-k-dtype bf16" in argv and "--enable-custom-kernels" in argv
    good_report, typo_report, wrong_report = check_plans([good, typo, wrong_value], fork)
    assert good_report.ok and [v.role for v in good_report.verdicts] == [
        "prefill",
        "decode",
        "router",
    ]
    typo_problems = typo_report.problems_by_role()["prefill"]
    assert (
        typo_problems[0].startswith("--index-k-dtyp: not a flag")
        and "--index-k-dtype" in typo_problems[0]
    )
    assert "invalid choice: 'bf32'" in wrong_report.problems_by_role()["decode"][0]


def test_a_missing_interpreter_is_one_clear_problem_per_role(upstream, tmp_path) -> None:
    plan = plan_for(upstream, tmp_path / "no-such-venv" / "bin" / "python")
    report = check_plans([plan], upstream)[0]
    assert set(report.problems_by_role()) == {"prefill", "decode", "router"}
    assert all(
        "not found" in p[0] and "--server-python" in p[0]
        for p in report.problems_by_role().values()
    )
    # No parser ran, so the headline does not say one rejected anything.
    message = report.failure_message()
    assert message.startswith("Preflight failed for 3 role(s)") and "parser rejects" not in message


def test_an_interpreter_that_exits_silently_says_so(upstream, tmp_path) -> None:
    plan = plan_for(upstream, Path("/bin/false"), knobs={"topology": "single"})
    (verdict,) = check_plans([plan], upstream)[0].verdicts
    assert verdict.problems == ("/bin/false exited 1 without an answer: (no output)",)


def test_an_interpreter_without_sglang_says_so(upstream) -> None:
    import sys

    plan = plan_for(upstream, Path(sys.executable), knobs={"topology": "single"})
    (verdict,) = check_plans([plan], upstream)[0].verdicts
    assert verdict.versions == "sglang not installed"
    assert verdict.problems[0].startswith("cannot import sglang.srt.server_args")
