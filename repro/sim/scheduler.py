"""Continuous batching on a modelled clock: prefill batches first, then decode steps.

One asyncio task per server. Each iteration either runs one prefill batch (waiting
requests up to a token budget, as SGLang's chunked-prefill budget) or one decode slice
(`stream_interval` tokens for every running request). It sleeps the modelled duration
times `--time-scale`, so batching, queueing and their interleaving are real while the
arithmetic stays cheap: per iteration the work is O(requests in the batch).

The modelled clock (clock.py) moves by step durations while there is work, and with the
wall clock only while idle, so what the fault model decides depends on the interleaving,
not on how busy this CPU happens to be.

A request enters a prefill batch only once the device pool has its pages (cache.py); until
then it waits, and so do the requests behind it, as SGLang's prefill adder stops at the
first request that does not fit. A HiCache load-back is copied host -> device layer by
layer while the forward computes; the copies share the link with the other load-backs of
the batch and with the PD hand-overs in flight, and the forward's gated reads wait for them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from repro.sim.cache import PrefixCache
from repro.sim.clock import ModelledClock
from repro.sim.config import EngineConfig
from repro.sim.generation import Generation
from repro.sim.metrics import EngineMetrics
from repro.sim.timing import CostModel

PREFILL_BUDGET_TOKENS = 8192


@dataclass(frozen=True, slots=True)
class PrefillForward:
    """One prefill batch as the fault model sees it; times in modelled seconds from its start."""

    batch: tuple[Generation, ...]
    start_s: float
    compute_s: float  # the forward's compute, were nothing to wait for
    head_start_s: float  # the load-backs started this much before the forward
    load_done_s: tuple[float, ...]  # per request: when its loaded-back prefix has landed (0: none)
    handovers: int  # PD hand-overs sharing the host link during the loads

    @property
    def duration_s(self) -> float:
        """The gated reads wait for the last load, so a long load paces the forward."""
        last = max(self.load_done_s, default=0.0) - self.head_start_s
        return max(self.compute_s, last + PREFILL_TAIL_S)


PREFILL_TAIL_S = 0.010  # what is left of the forward once its last layer's load has landed

# Hooks the fault model attaches to (faults.py); None means a healthy engine.
PrefillHook = Callable[[PrefillForward], None]
DecodeHook = Callable[[list[Generation], float], None]


class Scheduler:
    def __init__(
        self,
        config: EngineConfig,
        cost: CostModel,
        cache: PrefixCache | None,
        metrics: EngineMetrics,
        on_prefill: PrefillHook | None = None,
        on_decode: DecodeHook | None = None,
    ) -> None:
        self._config = config
        self._cost = cost
        self._cache = cache
        self._metrics = metrics
        self._on_prefill = on_prefill
        self._on_decode = on_decode
        # PD prefill: modelled end times of the KV hand-overs under way. Decode has its pages
        # ready before the prefill runs (SGLang's bootstrap), so a hand-over starts as its
        # forward ends; counting in modelled time keeps this CPU's load out of the race.
        self._handover_ends_s: list[float] = []
        self._waiting: deque[Generation] = deque()
        self._running: list[Generation] = []
        self._wake = asyncio.Event()
        self.clock = ModelledClock(config.time_scale)
        # The last prefill forward: (start, end, when its load-backs had all landed), modelled s.
        self._last_prefill: tuple[float, float, float] | None = None

    @property
    def num_running(self) -> int:
        return len(self._running)

    @property
    def num_waiting(self) -> int:
        return len(self._waiting)

    @property
    def idle(self) -> bool:
        return not self._running and not self._waiting

    def running(self) -> list[Generation]:
        return list(self._running)

    def add_prefill(self, gen: Generation) -> None:
        gen.arrived_at_s = self.clock.now_s()
        self._waiting.append(gen)
        self._metrics.requests_total += 1
        self._wake.set()

    def add_decode(self, gen: Generation) -> None:
        """A request whose KV is in place (decode side, after the PD hand-over)."""
        if gen.finished:
            return
        gen.arrived_at_s = self.clock.now_s()
        self._running.append(gen)
        self._metrics.requests_total += 1
        self._wake.set()

    def abort(self, gen: Generation) -> bool:
        """Stop a request wherever it is; its stream ends with finish_reason "abort"."""
        if gen.finished:
            return False
        if gen in self._waiting:
            self._waiting.remove(gen)
        if gen in self._running:
            self._running.remove(gen)
        gen.finish_reason = "abort"
        gen.out.put_nowait(None)
        gen.prefilled.set()
        self.release(gen)
        self._metrics.aborted_requests_total += 1
        return True

    def release(self, gen: Generation) -> None:
        """Give back the request's pages (once); its prompt stays cached. Waiters may fit now."""
        if self._cache is None or gen.reservation is None:
            return
        self._cache.release(gen.prompt, gen.reservation)
        gen.reservation = None
        self._wake.set()

    def all_generations(self) -> list[Generation]:
        return [*self._waiting, *self._running]

    async def run(self) -> None:
        """The scheduler loop; runs until cancelled."""
        while True:
            self.refresh_metrics()
            batch = self._take_prefill_batch() if self._waiting else []
            if batch:
                self.clock.busy()
                await self._prefill_step(batch)
            elif self._running:
                self.clock.busy()
                await self._decode_step()
            else:
                # Idle, or every waiting request needs pages held by requests in flight.
                self.clock.idle()
                self._wake.clear()
                await self._wake.wait()

    def _take_prefill_batch(self) -> list[Generation]:
        batch: list[Generation] = []
        budget = PREFILL_BUDGET_TOKENS
        while self._waiting:
            gen = self._waiting[0]
            match = self._cache.match(gen.prompt) if self._cache else gen.match
            new_tokens = gen.prompt_tokens - match.cached_tokens
            if batch and new_tokens > budget:
                break
            if self._cache is not None:
                # A single server's request keeps its pages while it decodes: its output too.
                reservation = self._cache.reserve(gen.prompt, match, len(gen.tokens))
                if reservation is None:
                    break  # no room until requests in flight give pages back
                gen.reservation = reservation
            self._waiting.popleft()
            gen.match = match
            budget -= new_tokens
            batch.append(gen)
        return batch

    def _plan_forward(self, batch: list[Generation], start_s: float) -> PrefillForward:
        compute_s = self._cost.prefill_base_s
        self._handover_ends_s = [end for end in self._handover_ends_s if end > start_s]
        handovers = len(self._handover_ends_s)
        # A server with requests decoding admits a batch while their decode step is on the
        # GPU, so its load-backs start a step early. By default a batch behind another prefill
        # forward gets no such start: that asymmetry is what makes PD the amplifier here
        # (docs/sim.md, "The head start").
        head_start_s = (
            self._cost.decode_step_s(len(self._running), self._running_context_tokens())
            if self._running and self._config.overlap_schedule
            else 0.0
        )
        if self._config.overlap_prefill_loads and self._config.overlap_schedule:
            head_start_s = max(head_start_s, self._overlap_head_start_s(batch, start_s))
        loaded_bytes = 0
        load_done_s = []
        for gen in batch:
            new_tokens = gen.prompt_tokens - gen.match.cached_tokens
            compute_s += (
                self._cost.prefill_s(new_tokens, gen.prompt_tokens) - self._cost.prefill_base_s
            )
            # The batch's load-backs go over the link one after another, sharing it.
            loaded_bytes += gen.match.host_tokens * self._config.bytes_per_token
            own = gen.match.host_tokens > 0
            load_done_s.append(self._cost.host_load_s(loaded_bytes, handovers) if own else 0.0)
            self._metrics.prompt_tokens_total += gen.prompt_tokens
            self._metrics.cached_tokens_total += gen.match.cached_tokens
            self._metrics.load_back_tokens_total += gen.match.host_tokens
        return PrefillForward(
            tuple(batch), start_s, compute_s, head_start_s, tuple(load_done_s), handovers
        )

    def _overlap_head_start_s(self, batch: list[Generation], start_s: float) -> float:
        """SGLang 0.5.10's overlap loop forms the next batch as it launches this one, and its
        load-backs start then (their start event is recorded on the scheduler's stream, not
        behind the forward), after the loads already queued on the one load stream. So a
        batch whose requests waited through the previous prefill forward, run back to back
        with it, had that forward (less its loads' overrun) as a head start. A request that
        came during that forward gets none here; the real loop would hold it one forward
        longer and then give it one, so this errs towards exposure."""
        last = self._last_prefill
        if last is None or last[1] != start_s or batch[0].arrived_at_s > last[0]:
            return 0.0
        started_s, _, loads_landed_s = last
        return start_s - max(started_s, loads_landed_s)

    async def _prefill_step(self, batch: list[Generation]) -> None:
        forward = self._plan_forward(batch, self.clock.now_s())
        if self._on_prefill is not None:
            self._on_prefill(forward)
        loads_started_s = forward.start_s - forward.head_start_s
        loads_landed_s = loads_started_s + max(forward.load_done_s, default=0.0)
        await self.clock.sleep(forward.duration_s)
        self._last_prefill = (forward.start_s, self.clock.now_s(), loads_landed_s)
        for gen in batch:
            if gen.finished:
                continue
            gen.prefilled.set()
            if not gen.tokens and self._config.role == "prefill":
                self._handover_ends_s.append(
                    self.clock.now_s() + self._cost.transfer_s(gen.prompt_tokens)
                )
            if gen.tokens:  # single server: the prefill forward yields the first token
                self._emit(gen, 1)
                if gen.finished:
                    self.release(gen)
                else:
                    self._running.append(gen)

    def _running_context_tokens(self) -> int:
        return sum(g.context_tokens for g in self._running)

    async def _decode_step(self) -> None:
        start_s = self.clock.now_s()
        steps = self._config.stream_interval_tokens
        step_s = self._cost.decode_step_s(len(self._running), self._running_context_tokens())
        duration_s = steps * step_s
        if self._on_decode is not None:
            self._on_decode(self._running, start_s)
        await self.clock.sleep(duration_s)
        for gen in list(self._running):
            if not gen.finished:
                self._emit(gen, steps)
            if gen.finished and gen in self._running:
                self._running.remove(gen)
                self.release(gen)

    def _emit(self, gen: Generation, count: int) -> None:
        limit = len(gen.tokens)
        if gen.max_tokens is not None:
            limit = min(limit, gen.max_tokens)
        end = min(gen.emitted_tokens + count, limit)
        piece = gen.tokens[gen.emitted_tokens : end]
        if piece:
            if gen.first_token_at_s is None:
                gen.first_token_at_s = self.clock.now_s()
            gen.out.put_nowait(piece)
            self._metrics.generation_tokens_total += len(piece)
        gen.emitted_tokens = end
        if end >= limit:
            gen.finish_reason = "stop" if end >= len(gen.tokens) else "length"
            gen.out.put_nowait(None)

    def refresh_metrics(self) -> None:
        self._metrics.time_scale = self.clock.time_scale
        wall_s, modelled_s = self.clock.busy_seconds()
        self._metrics.busy_wall_seconds_total = wall_s
        self._metrics.busy_modelled_seconds_total = modelled_s
        self._metrics.num_running_reqs = len(self._running)
        self._metrics.num_queue_reqs = len(self._waiting)
        if self._cache is not None:
            self._metrics.kv_used_tokens = self._cache.used_tokens
