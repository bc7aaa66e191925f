"""Continuous batching on the modelled clock: chunks, limits, aborts, and the cost model."""

from __future__ import annotations

import asyncio
from itertools import chain

import pytest

from repro.sim.cache import PrefixCache
from repro.sim.config import EngineConfig
from repro.sim.generation import Generation
from repro.sim.metrics import EngineMetrics
from repro.sim.prompt import RenderedPrompt
from repro.sim.scheduler import Scheduler
from repro.sim.timing import CostModel

DEADLINE_S = 10
pytestmark = pytest.mark.anyio


def _gen(rid: str, n_tokens: int, prompt_tokens: int = 100) -> Generation:
    return Generation(
        rid,
        RenderedPrompt((prompt_tokens, 1), (hash(rid), hash(rid + "x"))),
        [f"t{i}" for i in range(n_tokens)],
    )


async def _drain(gen: Generation) -> list[list[str]]:
    pieces = []
    while (piece := await gen.out.get()) is not None:
        pieces.append(piece)
    return pieces


def _scheduler(**overrides: object) -> Scheduler:
    config = EngineConfig(time_scale=0.001, stream_interval_tokens=4, **overrides)  # type: ignore[arg-type]
    return Scheduler(config, CostModel(), PrefixCache(1_000_000, False), EngineMetrics())


async def test_tokens_arrive_in_stream_interval_chunks_and_finish_with_stop() -> None:
    scheduler = _scheduler()
    task = asyncio.create_task(scheduler.run())
    try:
        gen = _gen("a", 10)
        scheduler.add_prefill(gen)
        pieces = await asyncio.wait_for(_drain(gen), DEADLINE_S)
    finally:
        task.cancel()
    # the prefill yields the first token, then decode slices of 4
    assert [len(p) for p in pieces] == [1, 4, 4, 1]
    assert list(chain.from_iterable(pieces)) == gen.tokens and gen.finish_reason == "stop"


async def test_max_tokens_ends_with_length_and_abort_ends_with_abort() -> None:
    scheduler = _scheduler()
    task = asyncio.create_task(scheduler.run())
    try:
        short, long = _gen("short", 50), _gen("long", 10_000)
        short.max_tokens = 7
        scheduler.add_prefill(short)
        scheduler.add_prefill(long)
        assert (
            len(list(chain.from_iterable(await asyncio.wait_for(_drain(short), DEADLINE_S)))) == 7
        )
        assert short.finish_reason == "length"
        await asyncio.wait_for(long.out.get(), DEADLINE_S)
        assert scheduler.abort(long) and not scheduler.abort(long)
        await asyncio.wait_for(_drain(long), DEADLINE_S)
        assert long.finish_reason == "abort" and scheduler.idle
    finally:
        task.cancel()


async def test_requests_are_batched_together() -> None:
    scheduler = _scheduler()
    gens = [_gen(str(i), 20) for i in range(8)]
    for gen in gens:
        scheduler.add_prefill(gen)
    task = asyncio.create_task(scheduler.run())
    try:
        await asyncio.wait_for(asyncio.gather(*(_drain(g) for g in gens)), DEADLINE_S)
    finally:
        task.cancel()
    # one prefill batch took all eight; they decoded side by side, so they share first-token time
    assert len({g.first_token_at_s for g in gens}) == 1


def test_cost_grows_with_batch_context_and_uncached_tokens() -> None:
    cost = CostModel()
    assert (
        cost.decode_step_s(80, 80 * 40_000)
        > cost.decode_step_s(8, 8 * 40_000)
        > cost.decode_step_s(8, 8_000)
    )
    assert (
        cost.prefill_s(8_000, 80_000) > cost.prefill_s(2_000, 80_000) > cost.prefill_s(2_000, 2_000)
    )
    assert cost.host_load_s(1_000, 256) > cost.host_load_s(1_000, 128) > 0


@pytest.mark.parametrize(
    ("overrides", "slower"),
    [({"cuda_graph": False}, True), ({"custom_kernels": True}, False), ({"topk_v2": False}, True)],
)
def test_red_herrings_change_timing_only(overrides: dict, slower: bool) -> None:
    base = CostModel.for_config(EngineConfig()).decode_step_s(40, 1_000_000)
    changed = CostModel.for_config(EngineConfig(**overrides)).decode_step_s(40, 1_000_000)
    assert (changed > base) is slower and changed != base
