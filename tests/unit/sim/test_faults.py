"""The fault mechanisms in isolation: triggers, fixes, and the race's rates by construction."""

from __future__ import annotations

from repro.dsml.encode import encode_completion
from repro.dsml.markers import DSML, EOS
from repro.sim.config import EngineConfig
from repro.sim.faults import (
    DRIFT_MIN_CONTEXT_TOKENS,
    DRIFT_MIN_LONG_RUNNING,
    WEDGE_AFTER_ABORTS,
    BootstrapWorker,
    Drift,
    IndexKRace,
    splice,
)
from repro.sim.pool import SlotPool
from repro.sim.tokens import split_tokens

KEYS = range(5_000)
RACY = EngineConfig(role="prefill", hicache=True, index_k_dtype="bf16")


def _rate(race: IndexKRace, load_done_s: float, slack_s: float, head_start_s: float = 0.0) -> float:
    """How often the read is stale, the forward's compute being the slack less the head start."""
    outcomes = [race.decide(load_done_s, head_start_s, slack_s - head_start_s, k) for k in KEYS]
    return sum(o.stale for o in outcomes) / len(KEYS)


def test_only_the_ungated_bf16_path_can_read_early() -> None:
    # fp8's fused store waits for the layer; the gate fix waits; without HiCache nothing loads.
    for config in (
        EngineConfig(role="prefill", hicache=True, index_k_dtype="fp8"),
        EngineConfig(role="prefill", hicache=True, index_k_dtype="bf16", index_k_gate="fixed"),
        EngineConfig(role="prefill", hicache=False, index_k_dtype="bf16"),
    ):
        assert _rate(IndexKRace(config), load_done_s=0.9, slack_s=1.0) == 0.0
    assert _rate(IndexKRace(RACY), load_done_s=0.0, slack_s=1.0) == 0.0  # no load-back, no race


def test_the_window_grows_with_the_load_against_the_slack() -> None:
    race = IndexKRace(RACY)
    rates = [_rate(race, load, 1.0) for load in (0.1, 0.2, 0.3, 0.5)]
    assert rates[0] < 0.001 and rates == sorted(rates) and rates[-1] > 0.1
    assert _rate(race, 1.0, 1.0) == 1.0  # a load slower than the whole forward always loses
    assert _rate(race, 0.3, 2.0) < _rate(race, 0.3, 1.0)  # a longer forward helps
    assert _rate(race, 0.3, 1.0, head_start_s=0.5) == _rate(race, 0.3, 1.0)  # same slack, same race


def test_a_head_start_leaves_only_the_last_layers_stale_and_they_seldom_derail() -> None:
    race = IndexKRace(RACY)
    # No head start: the copy and the reads both start at zero, so a copy slower than the
    # compute is behind at every layer.
    bare = [race.decide(0.6, 0.0, 1.0, k) for k in KEYS]
    assert all(o.stale_share == 1.0 and o.derails for o in bare if o.stale)
    # The same slack, half of it a head start: a late copy is caught up with by the reads
    # only in the forward's last layers, the more the later it lands.
    ahead = [race.decide(0.6, 0.5, 0.5, k) for k in KEYS]
    stale = sorted((o for o in ahead if o.stale), key=lambda o: o.lands_s)
    assert len(stale) == sum(o.stale for o in bare)
    shares = [o.stale_share for o in stale]
    assert 0.0 < shares[0] < 0.05 and shares == sorted(shares) and shares[-1] > 0.5
    # The output derails as often as that share says (seeded per request: no flat coin).
    derailed = sum(o.derails for o in stale) / len(stale)
    assert abs(derailed - sum(shares) / len(shares)) < 0.05
    assert derailed < 0.5


def test_the_same_request_races_the_same_way() -> None:
    race = IndexKRace(EngineConfig(role="single", hicache=True, index_k_dtype="bf16", seed=3))
    again = IndexKRace(EngineConfig(role="single", hicache=True, index_k_dtype="bf16", seed=3))
    assert [race.decide(0.4, 0.2, 0.8, k) for k in range(500)] == [
        again.decide(0.4, 0.2, 0.8, k) for k in range(500)
    ]


def test_splice_puts_donor_bytes_inside_the_call_block() -> None:
    own = split_tokens(encode_completion([("read_file", {"path": "src/own.py"})], reasoning="mine"))
    donor = split_tokens(
        encode_completion([("search_code", {"query": "theirs_42"})], reasoning="theirs")
    )
    for key in range(50):
        out = splice(own, donor, key)
        assert len(out) > len(own) and out[-1] == EOS
        first_dsml = own.index(DSML)
        assert out[:first_dsml] == own[:first_dsml]  # reasoning untouched: the block is hit


def test_slots_are_reused_and_remember_their_last_owner() -> None:
    pool = SlotPool(4)
    slot_a, prev = pool.acquire("a")
    assert prev is None
    pool.release("a")
    slot_b, prev = pool.acquire("b")
    assert slot_b == slot_a and prev == "a" and pool.in_use() == 1


def test_abort_notices_wedge_only_nixl_without_the_fix() -> None:
    for backend, fix, wedges in (
        ("nixl", False, True),
        ("nixl", True, False),
        ("mooncake", False, False),
    ):
        worker = BootstrapWorker(
            EngineConfig(role="prefill", transfer_backend=backend, abort_fix=fix)
        )
        for room in range(WEDGE_AFTER_ABORTS - 1):
            worker.on_abort_notice(room)
        assert not worker.dead
        worker.on_abort_notice(99)
        assert worker.dead is wedges


def _history() -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for path in ("src/a.py", "src/b.py", "src/c.py"):
        messages.append({"role": "assistant", "content": None, "tool_calls": []})
        messages.append({"role": "tool", "content": f"read_file {path}\n1\tline of {path}"})
    return messages


def test_drift_swaps_in_another_files_lines_only_under_its_trigger() -> None:
    drift = Drift(EngineConfig(role="decode", index_k_dtype="bf16", hicache=False))
    long_ctx, heavy = DRIFT_MIN_CONTEXT_TOKENS + 1, DRIFT_MIN_LONG_RUNNING
    drifted = [d for k in range(400) if (d := drift.perturb(_history(), long_ctx, heavy, k))]
    assert 5 < len(drifted) < 80  # "sometimes"
    for messages in drifted:
        head, _, body = messages[-1]["content"].partition("\n")
        assert head == "read_file src/c.py" and "src/c.py" not in body
    assert all(drift.perturb(_history(), long_ctx - 2, heavy, k) is None for k in range(400))
    assert all(drift.perturb(_history(), long_ctx, heavy - 1, k) is None for k in range(400))
    for config in (
        EngineConfig(role="decode", index_k_dtype="bf16", hicache=False, drift_fix=True),
        EngineConfig(role="decode", index_k_dtype="bf16", hicache=True),
        EngineConfig(role="decode", index_k_dtype="fp8", hicache=False),
    ):
        assert not Drift(config).enabled
