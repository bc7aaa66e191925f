"""`repro bisect flags|matrix` as a user runs them (the engine replaced by the seeded fake)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_oracle import FakeOracle
from typer.testing import CliRunner

import repro.bisect.campaign as campaign_module
from repro.cli_bisect import app

BAD = "topology=pd,hicache=on,index_k=bf16,topk_v2=on,custom_kernels=on,cuda_graph=off"
GOOD = "topology=single,hicache=off,index_k=fp8,topk_v2=off,custom_kernels=off,cuda_graph=on"


@pytest.fixture
def fake(monkeypatch):
    made: list[FakeOracle] = []

    def harness_oracle(run, slot=0):
        made.append(FakeOracle(seed=run.seed))
        return made[-1]

    monkeypatch.setattr(campaign_module, "_harness_oracle", harness_oracle)
    return made


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def test_parallel_makes_one_deployment_per_slot_and_reports_the_same(tmp_path, fake):
    serial = invoke("flags", "--bad", BAD, "--good", GOOD, "--out", str(tmp_path / "1"), "--json")
    parallel = invoke("flags", "--bad", BAD, "--good", GOOD, "--out", str(tmp_path / "3"),
                      "--json", "--parallel", "3")  # fmt: skip
    assert parallel.exit_code == 0, parallel.output
    assert len(fake) == 4 and all(oracle.closed for oracle in fake)  # 1 serial + 3 slots
    first, second = json.loads(serial.stdout), json.loads(parallel.stdout)
    assert (first["culprit"], first["classes"]) == (second["culprit"], second["classes"])
    assert invoke("flags", "--bad", BAD, "--good", GOOD, "--parallel", "0").exit_code == 2


def test_flags_json_has_the_contract_keys(tmp_path, fake):
    result = invoke("flags", "--bad", BAD, "--good", GOOD, "--out", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["culprit"] == {"topology": "pd", "hicache": "on", "index_k": "bf16"}
    assert doc["classes"]["hicache"] == "needed" and doc["classes"]["topology"] == "amplifier"
    assert doc["trials"] == 10 and doc["sessions"] == 1200
    assert len(doc["table"]) == 10
    assert list((tmp_path / "bisect").glob("flags-*.json"))


def test_flags_table_output_and_run_options_reach_the_spec(tmp_path, fake):
    result = invoke(
        "flags", "--bad", BAD, "--good", GOOD, "--out", str(tmp_path),
        "--context-max", "16000", "--sessions", "40", "--seed", "3", "--sessions-cap", "240",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "culprit: topology=pd + hicache=on + index_k=bf16" in result.stdout
    assert "revert topk_v2" in result.stdout
    assert {sessions for _, _, sessions in fake[0].waves} == {40}  # --sessions is the wave


def test_bad_statistics_are_one_sentence_and_exit_2(tmp_path, fake):
    result = invoke("flags", "--bad", BAD, "--good", GOOD, "--p0", "0.1", "--p1", "0.05")
    assert result.exit_code == 2
    assert "p0 must be below p1" in result.stderr
    assert fake == []  # nothing ran


@pytest.mark.parametrize("command", ["flags", "matrix"])
def test_a_cap_below_one_wave_is_refused(tmp_path, fake, command):
    args = (
        ("--bad", BAD, "--good", GOOD) if command == "flags" else ("--factor", "index_k=fp8,bf16")
    )
    result = invoke(command, *args, "--sessions", "40", "--sessions-cap", "20")
    assert result.exit_code == 2 and fake == []
    assert "--sessions-cap 20 is below one wave (--sessions 40); give at least 40." in result.stderr


def test_url_is_refused_with_a_reason(tmp_path, fake):
    result = invoke("flags", "--bad", BAD, "--good", GOOD, "--url", "http://127.0.0.1:9")
    assert result.exit_code == 2
    assert "--url cannot be used" in result.stderr


@pytest.mark.parametrize(("bad", "good", "side"), [("", GOOD, "--bad"), (BAD, " , ", "--good")])
def test_an_empty_endpoint_names_its_option(tmp_path, fake, bad, good, side):
    result = invoke("flags", "--bad", bad, "--good", good, "--out", str(tmp_path))
    assert result.exit_code == 2
    assert f"{side} needs at least one knob as K=V" in result.stderr
    assert fake == []  # nothing ran


def test_refused_endpoint_exits_2(tmp_path, monkeypatch):
    monkeypatch.setattr(
        campaign_module, "_harness_oracle", lambda run, slot: FakeOracle(lambda c: 0.0)
    )
    result = invoke("flags", "--bad", BAD, "--good", GOOD, "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "did not reproduce" in result.stderr


def test_matrix_prints_cells_and_writes_parquet(tmp_path, fake):
    result = invoke(
        "matrix", "--factor", "hicache=off,on", "--factor", "index_k=fp8,bf16",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "full factorial: 4 cells" in result.stdout
    assert list((tmp_path / "bisect").glob("matrix-*.parquet"))


def test_malformed_factor_is_a_usage_error(tmp_path, fake):
    result = invoke("matrix", "--factor", "index_k", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "is not K=V1,V2" in result.stderr


def test_a_design_over_max_cells_is_refused_before_any_trial(tmp_path, fake):
    knobs = ("hicache", "topk_v2", "custom_kernels", "cuda_graph")
    factors = [a for k in knobs for a in ("--factor", f"{k}=off,on")]
    refused = invoke("matrix", *factors, "--max-cells", "15", "--out", str(tmp_path))
    assert refused.exit_code == 2 and fake == []  # no oracle made: nothing measured
    assert refused.stderr == (
        "error: The design has 16 cells, each at least one wave of 80 sessions, and "
        "--max-cells is 15: raise it if that is meant; --fraction needs 8.\n"
    )
    fraction = invoke("matrix", *factors, "--fraction", "--max-cells", "7", "--out", str(tmp_path))
    assert fraction.stderr.endswith("--max-cells is 7: raise it if that is meant.\n")
    allowed = invoke("matrix", *factors, "--max-cells", "16", "--out", str(tmp_path), "--json")
    assert allowed.exit_code == 0, allowed.output
    assert len(json.loads(allowed.stdout)["cells"]) == 16


def test_matrix_json_has_every_cell_and_the_totals(tmp_path, fake):
    result = invoke(
        "matrix", "--factor", "hicache=off,on", "--factor", "index_k=fp8,bf16",
        "--out", str(tmp_path), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["design"] == "full factorial" and doc["factors"]["index_k"] == ["fp8", "bf16"]
    cells = {(c["hicache"], c["index_k"]): c for c in doc["cells"]}
    assert len(cells) == 4 and cells[("on", "bf16")]["decision"] == "CORRUPTING"
    assert cells[("off", "fp8")]["sessions_corrupted"] == 0
    assert doc["sessions"] == sum(c["sessions_run"] for c in doc["cells"])
    assert doc["parquet"].endswith(".parquet") and Path(doc["parquet"]).exists()
    assert {"outcome", "decided_after_sessions", "rate_low", "rate_high"} <= set(doc["cells"][0])
