"""bench/stale_reads.py: the engine's load-back debug lines read back into a stale read's geometry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))
from stale_reads import (  # noqa: E402
    alone_in_their_batch,
    cost_model,
    derailed_turns,
    describe,
    lateness_needed,
    layers_read_stale,
    load_backs,
    stale_reads,
    stale_with_the_whole_link,
)

from repro.sim.timing import CostModel  # noqa: E402

LOG = """\
2026-12-03 15:00:01,000 DEBUG repro.sim: load-back rid=a host_tokens=70000 prompt_tokens=71000 \
batch=1 handovers=0 load_s=0.0100 head_start_s=0.0200 slack_s=0.0350 ratio=1.200 stale=True
2026-12-03 15:00:02,000 DEBUG repro.sim: load-back rid=b host_tokens=70000 prompt_tokens=71000 \
batch=3 handovers=0 load_s=0.0100 head_start_s=0.0200 slack_s=0.2500 ratio=0.100 stale=False
2026-12-03 15:00:03,000 WARNING repro.sim: something else entirely
2026-12-03 15:00:04,000 DEBUG repro.sim: load-back rid=c host_tokens=50000 prompt_tokens=52000 \
batch=2 handovers=0 load_s=0.0200 head_start_s=0.0200 slack_s=0.0400 ratio=1.400 stale=True
"""


def test_only_the_stale_load_backs_are_read_with_every_field() -> None:
    rows = stale_reads(LOG)
    assert [r["rid"] for r in rows] == ["a", "c"]
    assert [lateness_needed(r) for r in rows] == pytest.approx([2.5, 1.0])


def test_the_summary_gives_the_spans_and_the_lateness_needed() -> None:
    text = describe(stale_reads(LOG))
    assert text.startswith("2 stale reads; batches [1, 2]; hand-overs under way [0]")
    assert "slack 35–40 ms" in text and "nominal load 10–20 ms" in text
    assert "median 1.75, least 1.00" in text
    assert "2 still stale with the hand-overs off the host link" in text
    assert text.endswith("share of layers read stale not logged")  # a log from before the rule
    assert describe([]) == "no stale read"


def test_a_read_made_stale_by_the_hand_overs_on_the_link_is_told_apart() -> None:
    cost = CostModel(host_load_bytes_per_s=450e9, transfer_bytes_per_s=50e9)
    row = {"handovers": "3", "ratio": "1.2"}  # the copy got 300 of 450 GB/s: 1.5x slower
    assert not stale_with_the_whole_link(row, cost)  # 1.2 / 1.5 = 0.8: it would have landed
    assert stale_with_the_whole_link({"handovers": "3", "ratio": "1.6"}, cost)
    assert stale_with_the_whole_link({"handovers": "0", "ratio": "1.01"}, cost)
    # Eight hand-overs leave a fair share, a ninth of the link.
    assert not stale_with_the_whole_link({"handovers": "8", "ratio": "8.9"}, cost)


def test_the_host_link_is_read_from_the_run_and_defaults_without_it(tmp_path: Path) -> None:
    argv = ["python", "-m", "repro.sim", "serve", "--host-link-gbytes-per-s", "55"]
    (tmp_path / "spec.json").write_text(json.dumps({"roles": [{"name": "prefill", "argv": argv}]}))
    assert cost_model(tmp_path, "prefill").host_load_bytes_per_s == 55e9
    assert cost_model(tmp_path, "prefill").handover_link_sharing
    assert cost_model(tmp_path, "single").host_load_bytes_per_s == 450e9
    assert cost_model(tmp_path / "nowhere", "prefill").host_load_bytes_per_s == 450e9


def test_a_run_without_the_link_sharing_is_not_given_a_counterfactual(tmp_path: Path) -> None:
    argv = ["python", "-m", "repro.sim", "serve", "--no-handover-link-sharing"]
    (tmp_path / "spec.json").write_text(json.dumps({"roles": [{"name": "prefill", "argv": argv}]}))
    cost = cost_model(tmp_path, "prefill")
    assert not cost.handover_link_sharing
    text = describe(stale_reads(LOG), cost)
    assert "the hand-overs were off the host link in this run" in text
    assert "still stale" not in text


def test_load_backs_alone_in_their_batch_are_counted_with_their_stale_reads() -> None:
    assert [r["rid"] for r in load_backs(LOG)] == ["a", "b", "c"]
    assert (
        alone_in_their_batch(load_backs(LOG))
        == "1 load-backs alone in their batch, 1 of them stale"
    )
    assert alone_in_their_batch([]) == "0 load-backs alone in their batch, 0 of them stale"


def test_the_share_of_layers_read_stale_and_the_derailed_are_summed_up() -> None:
    line = "load-back rid={} batch=1 handovers=0 load_s=0.01 head_start_s=0.02 slack_s=0.03 "
    reads = (("a", "1.000", "True"), ("b", "0.200", "False"), ("c", "0.600", "True"))
    log = "\n".join(
        (line + "ratio=1.5 stale=True stale_share={} derails={}").format(*read) for read in reads
    )
    text = layers_read_stale(stale_reads(log))
    assert text == "share of layers read stale: median 0.60, 1 of 3 all of them; 2 derailed"
    assert describe(stale_reads(log)).endswith(text)


def test_derailed_reads_are_matched_to_their_turns_by_prompt_size() -> None:
    line = "load-back rid={} prompt_tokens={} batch=1 handovers=0 load_s=0.01 head_start_s=0 "
    reads = (
        ("a", 70000, "True"),
        ("b", 71000, "True"),
        ("c", 72000, "True"),
        ("d", 73000, "False"),
    )
    log = "\n".join(
        (line + "slack_s=0.01 ratio=2 stale=True stale_share=1.000 derails={}").format(*read)
        for read in reads
    )
    turns = pd.DataFrame(
        {
            "outcome": ["ok", "ok", "ok", "ok", "ok", "failed"],
            "prompt_tokens": [70000, 71000, 72000, 72000, 73000, 71000],
            "corrupted": [True, False, False, False, False, False],
            "n_calls": [1, 0, 1, 1, 0, 0],
        }
    )
    # a: flagged; b: a final answer the checkers missed (the failed turn of its size is not
    # judged); c: two judged turns share its size, so it stays unmatched; d did not derail.
    assert derailed_turns(stale_reads(log), turns) == (
        "2 of 3 derailed reads matched to one turn: 1 flagged corrupted, 1 not "
        "(1 of those final answers)"
    )
    assert derailed_turns([], turns) == "no derailed read to match to a turn"
