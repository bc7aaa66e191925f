"""A test switch: a decode kernel that is not batch-invariant (`--near-tie-flip`).

Off by default. On, each batched decode step moves every sequence's logits by a small
amount that depends on the batch size (the reduction order changes with it, as in kernels
without SGLang's --enable-deterministic-inference or vLLM's VLLM_BATCH_INVARIANT). Where the
planned token leads its runner-up by less than that amount (a near-tie, logprobs.py), the
runner-up is emitted instead. Alone (batch of one) nothing moves, so a replay at
concurrency 1 always gives the plan: batching yields `numerical` divergences, never
`corrupt` ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from repro.sim.generation import Generation
from repro.sim.logprobs import LogprobModel, runner_up, unit

MAX_SHIFT_NATS = 0.3  # the largest logit gap a batched reduction order can close


class NearTieFlip:
    def __init__(self, stream_interval_tokens: int) -> None:
        self._steps = stream_interval_tokens

    def on_decode(self, batch: Sequence[Generation], _start_s: float = 0.0) -> None:
        """Scheduler hook before a decode slice: flip the near-ties its shift closes."""
        if len(batch) < 2:
            return
        for gen in batch:
            if gen.finished or not gen.tokens:
                continue
            model = LogprobModel(gen.key, gen.tokens, 0, gen.think_close, gen.think_open)
            end = min(gen.emitted_tokens + self._steps, len(gen.tokens))
            for position in range(gen.emitted_tokens, end):
                if not model.near_tie(position):
                    continue
                shift = MAX_SHIFT_NATS * unit(gen.key, position, f"shift:{len(batch)}")
                if shift > model.margin_nats(position):
                    gen.tokens[position] = runner_up(gen.tokens[position])
