"""Everything that can fail before a campaign's first wave fails before it: no progress line,
no cache folder, one sentence and exit 2, with the real launch profile (no engine starts)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from fake_oracle import FakeOracle
from typer.testing import CliRunner

import repro.bisect.campaign as campaign_module
from repro.bisect.campaign import launch_cover
from repro.cli_bisect import app
from repro.knobs import describe

FLAGS = ["flags", "--bad", "hicache=on,index_k=bf16", "--good", "hicache=off,index_k=fp8"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*FLAGS, "--set", "nope=1"], "has no setting 'nope'; its settings are:"),
        ([*FLAGS, "--knob", "nope=1"], "has no knob 'nope'; its knobs are: topology,"),
        ([*FLAGS, "--index-k", "bf17"], "Knob 'index_k' has no value 'bf17'"),  # overridden
        ([*FLAGS, "--topk-v2", "maybe"], "Knob 'topk_v2' has no value 'maybe'"),
        (
            ["flags", "--bad", "index_k=bf16", "--good", "index_k=bf16"],
            "--bad and --good resolve to the same configuration",
        ),
        (  # only the trials launching sglang-router use its interpreter's setting
            [*FLAGS, "--knob", "router=sglang", "--set", "sglang_router_python={repo_root"],
            "has a lone brace in '{repo_root'",
        ),
        (
            ["flags", "--backend", "sglang", "--bad", "hicache=on", "--good", "hicache=off"],
            "needs a value for 'model_path'; give it with --model-path M.",
        ),
        (
            ["matrix", "--factor", "hicache=off,on", "--factor", "nope=a,b"],
            "has no knob 'nope'",
        ),
        (
            ["matrix", "--factor", "index_k=fp8,bf16", "--set", "time_scale=REQUIRED"],
            "needs a value for 'time_scale'",
        ),
    ],
)
def test_fails_before_the_cache_folder_and_any_progress(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "out"
    result = invoke(*args, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "bisect:" not in result.output  # no progress line came first
    assert not out.exists()


def test_a_flag_that_only_a_later_trial_launches_fails_its_preflight_first(
    tmp_path: Path, sglang_python: Path, repo_root: Path
) -> None:
    fork = repo_root / "repro" / "profiles" / "examples" / "sglang-fork-index-k.toml"
    broken = tmp_path / "fork.toml"  # the knob value only good launches carries a typo
    broken.write_text(
        fork.read_text().replace('"--index-k-dtype", "fp8"', '"--index-k-dtyp", "fp8"')
    )
    out = tmp_path / "out"
    result = invoke(
        "flags", "--profile", str(broken), "--model-path", "m", "--server-python",
        str(sglang_python), "--bad", "index_k=bf16", "--good", "index_k=fp8", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Preflight failed" in result.stderr and "--index-k-dtyp" in result.stderr
    assert not out.exists()


def test_the_cover_meets_every_value_with_every_topology_a_search_can_mix() -> None:
    bad = {"topology": "pd", "hicache": "on", "index_k": "bf16", "router": "sglang"}
    good = {"topology": "single", "hicache": "off", "index_k": "fp8", "router": "sglang"}
    cover = launch_cover(bad, good)
    reachable = {  # (topology, knob, value) of every mix of the two sides
        (mix["topology"], knob, mix[knob])
        for picks in itertools.product((bad, good), repeat=len(bad))
        for mix in [{k: side[k] for k, side in zip(bad, picks, strict=True)}]
        for knob in bad
    }
    covered = {(c["topology"], k, c[k]) for c in cover for k in c}
    assert reachable <= covered and len(cover) == 4
    assert launch_cover(bad, {**good, "topology": "pd"}) == [bad, {**good, "topology": "pd"}]


def test_the_campaign_checks_what_it_measures(tmp_path: Path, monkeypatch) -> None:
    made: list[FakeOracle] = []
    monkeypatch.setattr(
        campaign_module, "_harness_oracle", lambda run, slot: made.append(FakeOracle()) or made[-1]
    )
    result = invoke(
        "matrix", "--factor", "hicache=off,on", "--factor", "index_k=fp8,bf16", "--out",
        str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [oracle] = made
    assert len(oracle.checked) == 4
    assert sorted(describe(c) for c in oracle.checked) == sorted(set(oracle.configs_run()))
