"""The story's faults as modelled mechanisms, each behind its trigger and its fix switch.

See docs/sim.md for what each one models and its calibration. In short:

- IndexKRace: with HiCache on, a turn whose prefix was spilled to the host tier loads it
  back into reused pages (pool.SlotPool) layer by layer while the forward computes. The
  copy takes longer the more bytes it moves (longer prefixes, bf16) and the more transfers
  share the link (the batch's other load-backs, PD hand-overs); with bf16 index-K the
  indexer's read does not wait for it (`--index-k-gate buggy`), so when the copy has not
  landed by the read, the pages' previous bytes are read, in the forward's last layers first
  (a head start buys the first ones back). The output derails with a chance equal to the
  share of layers read stale, and is corrupted only if another request is in flight to
  splice bytes from.
- Stuck hand-over (the same copy, seen by PD's KV sender): bf16 index-K is not in the layout
  the transfer engine registered, so the sender moves it after the KV pages; if a loaded-back
  prefix's ungated index-K copy has still not landed when the sender gets there, it waits for
  a layer-done signal that copy never raises, holding the request's pages, until the
  transfer times out (MC_TRANSFER_TIMEOUT): a failed turn, never a corrupted one.
- AbortWedge: PD with the nixl backend: the prefill's bootstrap worker mishandles abort
  notices from decode; after a few it dies and no hand-over ever completes again.
- Drift ("losing the plot"): bf16 index-K with HiCache off, long contexts under heavy
  load: the decode side now and then attends to the wrong earlier tool result.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.dsml.markers import DSML, EOS
from repro.sim.config import EngineConfig

log = logging.getLogger("repro.sim.faults")

# --- index-K race ----------------------------------------------------------------------
# The copy's timing jitter: its extra delay is JITTER_SCALE x Exp(1) of its nominal time
# (host memory and PCIe/C2C arbitration, the cache controller's thread). The one constant
# calibrated against the story's headline rate, see docs/sim.md.
JITTER_SCALE = 1.0
SPLICE_MIN_TOKENS = 6
SPLICE_SPAN_TOKENS = 18

# --- abort wedge -----------------------------------------------------------------------
WEDGE_AFTER_ABORTS = 3

# --- drift -----------------------------------------------------------------------------
DRIFT_MIN_CONTEXT_TOKENS = 40_000
DRIFT_MIN_LONG_RUNNING = 16  # "heavy load": this many requests held past the threshold
DRIFT_RATE = 0.08


def _unit(seed: int, key: int, salt: int) -> float:
    """A uniform draw in [0, 1) fixed by (seed, request key, purpose)."""
    return random.Random(f"{seed}:{key}:{salt}").random()


@dataclass(frozen=True, slots=True)
class RaceOutcome:
    stale: bool  # the indexer read some layer's pages before that layer's copy landed
    lands_s: float  # when the index-K copy lands, from the load's start (0: no race possible)
    fill_over_slack: float
    stale_share: float = 0.0  # the share of the forward's layers whose index-K was read stale
    derails: bool = False  # did those layers' wrong top-k selections derail the output?

    def misses(self, deadline_s: float) -> bool:
        """Had the copy still not landed by `deadline_s` (e.g. when the KV sender gets there)?"""
        return self.lands_s > deadline_s


class IndexKRace:
    """Does the indexer read a loaded-back prefix's index-K before its copy has landed?

    Only the bf16 fork's path can: fp8 index-K is stored by the fused quantize-and-store
    kernel, whose accessor waits for the layer's load before the indexer reads (SGLang
    0.5.10, research/sglang.md §3); bf16 has no such kernel and stores through the ungated
    fallback, so nothing holds the indexer's read back.

    Layer by layer: the copy moves the layers in order over its whole (jittered) time, and
    the forward reads them in order over its compute, `head_start_s` after the load
    started. So a late copy is read stale in the forward's last layers first; the share of
    layers read stale is what a head start buys back. Each stale layer's indexer picks its
    top-k positions by another request's keys; the output derails with a chance equal to
    that share (a few layers out of 61 the residual stream mostly survives, all of them it
    does not), drawn from the request's key like the jitter.
    """

    def __init__(self, config: EngineConfig) -> None:
        self.enabled = (
            config.hicache and config.index_k_gate == "buggy" and config.index_k_dtype == "bf16"
        )
        self._seed = config.seed

    def decide(
        self, load_done_s: float, head_start_s: float, compute_s: float, key: int
    ) -> RaceOutcome:
        """The load lands `load_done_s` after it started (jittered); the forward's reads run
        from `head_start_s` after that to `head_start_s + compute_s`."""
        if not self.enabled or load_done_s <= 0:
            return RaceOutcome(False, 0.0, 0.0)
        # Seeded by --seed and the request's content: the same request races the same way.
        jitter = -math.log(1.0 - _unit(self._seed, key, 1)) * JITTER_SCALE
        lands_s = load_done_s * (1.0 + jitter)
        slack_s = head_start_s + compute_s
        if lands_s <= slack_s:
            return RaceOutcome(False, lands_s, lands_s / slack_s)
        # Layer x (a share of the way through) lands at x * lands and is read at
        # head_start + x * compute: stale past x = head_start / (lands - compute).
        share = 1.0 - head_start_s / (lands_s - compute_s)
        derails = _unit(self._seed, key, 2) < share
        return RaceOutcome(True, lands_s, lands_s / slack_s, share, derails)


def splice(
    tokens: Sequence[str], donor: Sequence[str], key: int, calls_at: int | None = None
) -> list[str]:
    """`tokens` with a run of the donor's tokens spliced in inside the tool-call block.

    `calls_at` is the token where the calls begin, in the model's own format (DSML's first
    `｜DSML｜` token when not given); a turn without calls gets it in its second half."""
    if calls_at is None:
        calls_at = next((i for i, t in enumerate(tokens) if t == DSML), None)
    end = len(tokens) - 1 if tokens and tokens[-1] == EOS else len(tokens)
    start = calls_at if calls_at is not None else end // 2
    at = start + key % max(1, end - start)
    length = SPLICE_MIN_TOKENS + (key // 7) % SPLICE_SPAN_TOKENS
    body = [t for t in donor if t != EOS]
    source = min(at, max(0, len(body) - length))
    return [*tokens[:at], *body[source : source + length], *tokens[at:]]


# --- abort wedge -----------------------------------------------------------------------


class BootstrapWorker:
    """The prefill's bootstrap worker; under nixl without the fix, abort notices kill it."""

    def __init__(self, config: EngineConfig) -> None:
        self.vulnerable = (
            config.role == "prefill" and config.transfer_backend == "nixl" and not config.abort_fix
        )
        self.mishandled_notices = 0
        self.dead = False

    def on_abort_notice(self, room: int) -> None:
        if not self.vulnerable or self.dead:
            return
        self.mishandled_notices += 1
        log.warning("bootstrap worker: unhandled abort notice for room %d (nixl)", room)
        if self.mishandled_notices >= WEDGE_AFTER_ABORTS:
            self.dead = True
            log.error(
                "bootstrap worker died after %d abort notices; KV hand-over is wedged",
                WEDGE_AFTER_ABORTS,
            )


# --- drift -----------------------------------------------------------------------------


class Drift:
    def __init__(self, config: EngineConfig) -> None:
        self.enabled = (
            config.index_k_dtype == "bf16"
            and not config.hicache
            and not config.drift_fix
            and config.role != "prefill"
        )
        self._seed = config.seed

    def perturb(
        self, messages: list[dict[str, Any]], prompt_tokens: int, long_running: int, key: int
    ) -> list[dict[str, Any]] | None:
        """Messages as a drifting model reads them: the latest tool result's body swapped
        for an earlier result's of the same kind (another file); None when it does not drift."""
        if (
            not self.enabled
            or prompt_tokens < DRIFT_MIN_CONTEXT_TOKENS
            or long_running < DRIFT_MIN_LONG_RUNNING
        ):
            return None
        if _unit(self._seed, key, 2) >= DRIFT_RATE:
            return None
        tools = [
            i
            for i, m in enumerate(messages)
            if m.get("role") == "tool" and isinstance(m.get("content"), str)
        ]
        if len(tools) < 2:
            return None
        last = tools[-1]
        head, _, _ = messages[last]["content"].partition("\n")
        kind = head.split(" ", 1)[0]
        candidates = []
        for i in tools[:-1]:
            other_head, _, other_body = messages[i]["content"].partition("\n")
            if other_head.split(" ", 1)[0] == kind and other_head != head and other_body:
                candidates.append(other_body)
        if not candidates:
            return None
        body = candidates[key % len(candidates)]
        drifted = list(messages)
        drifted[last] = {**messages[last], "content": f"{head}\n{body}"}
        return drifted
