"""The divergence oracle end to end: scripted history, the replay alone, verdicts and the gate."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.conftest import SPILL, engine_processes, processes_with_ports, repro, summary

pytestmark = pytest.mark.e2e

QUICK = ["--set", "time_scale=0.1", "--ramp-up", "0.5"]
# The story's race at CI scale (as in test_gate): bf16 index-K on a single server whose small
# pool spills, so later turns load their own prefixes back and some race.
RACING = ["--sessions", "24", "--index-k", "bf16", "--topology", "single", "--context-max",
          "12000", "--set", "time_scale=0.05", *SPILL]  # fmt: skip


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_both_oracles_see_the_race_and_divergence_sees_at_least_what_validity_sees(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    done = repro("run", *RACING, "--oracle", "both", "--replay-sample", "all", "--out", str(out))
    assert done.returncode == 0, done.stderr
    s = summary(out)
    d = s["divergence"]
    assert s["oracle"] == "both" and d["sessions_replayed"] == d["sessions_with_turns"] == 24
    assert d["turns_replayed"] == d["turns_by_tokens"] == d["turns_with_outcome_ok"] == s["turns"]
    assert d["kinds"]["corrupt"] >= 1 and d["kinds"]["numerical"] == 0 and d["errors"] == 0
    turns = pq.read_table(out / "turns.parquet").to_pandas()
    by_validity = {(r.session_id, r.turn) for r in turns.itertuples() if r.corrupted}
    verdicts = {(v["session_id"], v["turn"]): v for v in lines(out / "divergence.jsonl")}
    assert len(verdicts) == s["turns"]
    by_divergence = {k for k, v in verdicts.items() if v["kind"] == "corrupt"}
    assert by_validity <= by_divergence  # a splice that stays grammatical is still a divergence
    assert s["turns_corrupted"] == len(by_validity | by_divergence)
    failures = [f for f in lines(out / "failures.jsonl") if f.get("oracle") == "divergence"]
    assert {(f["session_id"], f["turn"]) for f in failures} == by_divergence
    first = failures[0]
    k = first["divergence"]["token_offset"]
    around = first["output"]["tokens_around"]
    theirs = first["reference"]["tokens_around"]
    assert around["from"] == theirs["from"] and around["from"] <= k
    at = k - around["from"]
    assert (
        around["tokens"][:at] == theirs["tokens"][:at]
        and around["tokens"][at] != theirs["tokens"][at]
    )
    assert first["request"]["logprobs"] is True and first["request"]["messages"]
    assert "corrupt@content:" in first["where"] and "not among its top choices" in first["where"]
    # `repro report` recomputes the same figures from the folder.
    shown = repro("report", str(out), "--json", timeout=60)
    assert json.loads(shown.stdout)["turns_corrupted"] == s["turns_corrupted"]


@pytest.mark.slow
def test_tool_parser_mode_divergence_alone_fails_the_gate(tmp_path: Path) -> None:
    out, junit = tmp_path / "run", tmp_path / "junit.xml"
    done = repro("gate", *RACING, "--knob", "tool_parser=on", "--oracle", "divergence",
                 "--replay-sample", "all", "--out", str(out), "--junit", str(junit))  # fmt: skip
    s = summary(out)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert (
        s["oracle"] == "divergence"
        and s["turns_corrupted"] == s["divergence"]["kinds"]["corrupt"] >= 1
    )
    assert set(s["defects"]) == {"corrupt_divergence"}  # no grammar, schema or semantic checks ran
    assert done.stderr.startswith(f"FAIL: {s['turns_corrupted']} of {s['turns']} turns corrupted")
    failed = [
        c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None
    ]
    assert len(failed) == s["sessions_corrupted"] + 1


def test_near_ties_flipped_by_batching_are_numerical_and_pass_the_gate(tmp_path: Path) -> None:
    out, junit = tmp_path / "run", tmp_path / "junit.xml"
    done = repro("gate", "--sessions", "8", "--topology", "single", "--knob", "near_tie_flip=on",
                 "--context-max", "6000", *QUICK, "--oracle", "divergence", "--replay-sample", "all",
                 "--reference-engines", "1", "--out", str(out), "--junit", str(junit))  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    s = summary(out)
    d = s["divergence"]
    numerical = d["kinds"]["numerical"]
    assert numerical >= 1 and d["kinds"]["corrupt"] == d["kinds"]["diverged"] == 0
    assert s["turns_corrupted"] == 0 and s["turns"] == d["turns_replayed"] > numerical
    assert d["reference"] == "1 engine(s) launched like the run's, alongside the load"
    assert all(0 < n["gap_nats"] < d["numerical_margin_nats"] for n in d["numerical"])
    assert f"{numerical} numerical divergences (near-ties) not counted" in done.stdout
    assert not (out / "failures.jsonl").read_text()  # nothing counted, nothing listed
    assert ET.parse(junit).getroot().get("failures") == "0"
    argv = (out / "logs" / "reference-0" / "single.log").read_text().splitlines()[0].split()
    reference_port = argv[argv.index("--port") + 1]
    assert engine_processes(out) == [] and processes_with_ports([reference_port]) == []


def test_a_sample_of_sessions_is_judged_and_said_so(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = repro("run", "--sessions", "6", "--topology", "single", "--context-max", "6000", *QUICK,
                 "--oracle", "divergence", "--replay-sample", "2", "--top-logprobs", "0",
                 "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    s = summary(out)
    d = s["divergence"]
    assert d["sessions_replayed"] == s["sessions"] == 2 and s["sessions_started"] == 6
    assert (
        d["turns_by_tokens"] == 0
        and d["kinds"]["identical"] == s["turns"] < d["turns_with_outcome_ok"]
    )
    assert "a seeded random sample (--replay-sample 2), 2 of 6 sessions" in done.stdout
    request = json.loads((out / "loaded.jsonl").read_text().splitlines()[0])
    assert request["tokens"] == [] and len(request["body_sha256"]) == 64


def test_ctrl_c_during_the_replay_keeps_every_verdict_so_far(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "repro", "run", "--sessions", "6", "--topology", "single",
            "--context-max", "20000", *QUICK, "--oracle", "divergence", "--replay-sample", "all",
            "--reference-engines", "1", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    verdicts = out / "divergence.jsonl"
    deadline = time.monotonic() + 120
    while not (verdicts.exists() and len(verdicts.read_text().splitlines()) >= 3):
        assert time.monotonic() < deadline and process.poll() is None, "no replay to interrupt"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    s = summary(out)
    d = s["divergence"]
    assert s["interrupted"] and d["stopped"] == "interrupted"
    assert 3 <= d["turns_replayed"] == s["turns"] < d["turns_with_outcome_ok"]
    assert d["turns_replayed"] == len(lines(verdicts))
    assert "interrupted after" in stdout and engine_processes(out) == []
    argv = (out / "logs" / "reference-0" / "single.log").read_text().splitlines()[0].split()
    assert processes_with_ports([argv[argv.index("--port") + 1]]) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--oracle", "divergence", "--history", "live"], "needs --history scripted"),
        (["--replay-sample", "some"], "Invalid --replay-sample: must be all, auto or a number"),
        (
            ["--oracle", "divergence", "--reference-url", "http://127.0.0.1:9"],
            "Cannot reach http://127.0.0.1:9",
        ),
        (["--reference-engines", "1", "--reference-url", "http://127.0.0.1:9"], "not both"),
    ],
)
def test_bad_oracle_options_are_one_sentence_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = repro("run", "--sessions", "1", "--topology", "single", *QUICK, *args,
                 "--out", str(tmp_path / "run"), timeout=60)  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr
