"""The story's faults as modelled mechanisms, each behind its trigger and its fix switch.

See docs/sim.md for what each one models and its calibration. In short:

- IndexKRace: with HiCache on, a request whose prefix is loaded back from the host tier
  gets its index-K pages filled asynchronously into a reused slot (pool.SlotPool). The
  fill takes a time that grows with index-K bytes (bf16 = 2 x fp8) and with the copies
  sharing the link; the indexer's read does not wait for it (`--index-k-gate buggy`), so
  when the fill is still running at the read, the slot's previous bytes are read. PD
  reads earlier (the layer-wise KV sender snapshots the slot before the forward's own
  read), which narrows the slack. A stale read corrupts the output only if another
  request is in flight to splice bytes from.
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

from repro.checkers.dsml.markers import DSML, EOS
from repro.sim.config import EngineConfig

log = logging.getLogger("repro.sim.faults")

# --- index-K race ----------------------------------------------------------------------
# fill / slack at no load, per index-K byte per token: bf16 (256 B) -> 0.2, fp8 (128 B) -> 0.1
FILL_PER_SLACK_PER_BYTE = 0.2 / 256
PD_SLACK_FACTOR = 0.6  # the KV sender reads the slot earlier than the forward does
NOISE_CAP = 3.9  # timing noise ~ Exp(1), capped: fp8 can never lose the race (see docs/sim.md)
LOAD_PER_COPY = 0.1  # each other copy on the link slows the fill by 10 %...
MAX_OTHER_COPIES = 2  # ...up to two (the copy engines are few)
SPLICE_MIN_TOKENS = 6
SPLICE_SPAN_TOKENS = 18

# --- abort wedge -----------------------------------------------------------------------
WEDGE_AFTER_ABORTS = 3

# --- drift -----------------------------------------------------------------------------
DRIFT_MIN_CONTEXT_TOKENS = 40_000
DRIFT_MIN_LONG_RUNNING = 16  # "heavy load": this many requests in flight past the threshold
DRIFT_RATE = 0.08


def _unit(seed: int, key: int, salt: int) -> float:
    """A uniform draw in [0, 1) fixed by (seed, request key, purpose)."""
    return random.Random(f"{seed}:{key}:{salt}").random()


@dataclass(frozen=True, slots=True)
class RaceOutcome:
    stale: bool
    fill_over_slack: float


class IndexKRace:
    def __init__(self, config: EngineConfig) -> None:
        self.enabled = config.hicache and config.index_k_gate == "buggy"
        self._seed = config.seed
        self._ratio = config.index_k_bytes_per_token * FILL_PER_SLACK_PER_BYTE
        self._slack = PD_SLACK_FACTOR if config.role == "prefill" else 1.0

    def decide(self, host_tokens: int, other_copies: int, key: int) -> RaceOutcome:
        """Does the ungated index-K read of a host-loaded prefix happen before its fill ends?"""
        if not self.enabled or host_tokens <= 0:
            return RaceOutcome(False, 0.0)
        noise = min(NOISE_CAP, -math.log(1.0 - _unit(self._seed, key, 1)))
        load = 1.0 + LOAD_PER_COPY * min(other_copies, MAX_OTHER_COPIES)
        ratio = self._ratio * (1.0 + noise) * load / self._slack
        return RaceOutcome(ratio > 1.0, ratio)


def splice(tokens: Sequence[str], donor: Sequence[str], key: int) -> list[str]:
    """`tokens` with a run of the donor's tokens spliced in inside the tool-call block."""
    marks = [i for i, t in enumerate(tokens) if t == DSML]
    end = len(tokens) - 1 if tokens and tokens[-1] == EOS else len(tokens)
    start = marks[0] if marks else end // 2
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
