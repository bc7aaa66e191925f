"""Continuous batching on the modelled clock: chunks, limits, aborts, and the cost model."""

from __future__ import annotations

import asyncio
from itertools import chain

import pytest

from repro.sim.cache import PrefixCache, Reservation
from repro.sim.config import EngineConfig
from repro.sim.generation import Generation
from repro.sim.metrics import EngineMetrics
from repro.sim.prompt import RenderedPrompt
from repro.sim.scheduler import PrefillForward, Scheduler
from repro.sim.timing import CostModel
from tests.unit.sim.parts import prompt_of

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


async def _run_until_drained(scheduler: Scheduler, gens: list[Generation]) -> None:
    """Run the scheduler until every one of `gens` has streamed its last piece."""
    task = asyncio.create_task(scheduler.run())
    try:
        await asyncio.wait_for(asyncio.gather(*(_drain(g) for g in gens)), DEADLINE_S)
    finally:
        task.cancel()


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
    await _run_until_drained(scheduler, gens)
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
def test_red_herrings_change_the_decode_step_time(overrides: dict, slower: bool) -> None:
    base = CostModel.for_config(EngineConfig()).decode_step_s(40, 1_000_000)
    changed = CostModel.for_config(EngineConfig(**overrides)).decode_step_s(40, 1_000_000)
    assert (changed > base) is slower and changed != base


async def test_a_request_waits_until_the_pool_has_its_pages() -> None:
    config = EngineConfig(time_scale=0.001, stream_interval_tokens=4)
    scheduler = Scheduler(config, CostModel(), PrefixCache(1_500, False), EngineMetrics())
    first = Generation("first", prompt_of(("a", 1000)), [f"t{i}" for i in range(40)])
    second = Generation("second", prompt_of(("b", 1000)), ["x", "y"])
    scheduler.add_prefill(first)
    scheduler.add_prefill(second)
    await _run_until_drained(scheduler, [first, second])
    # 1,040 pages held by the first left no room: the second ran only after it finished.
    assert first.finish_reason == "stop" and second.first_token_at_s is not None
    assert first.first_token_at_s is not None and second.first_token_at_s > first.first_token_at_s
    assert second.arrived_at_s <= first.first_token_at_s


async def test_load_backs_in_a_batch_share_the_link_one_after_another() -> None:
    seen: list[PrefillForward] = []
    config = EngineConfig(time_scale=0.001, hicache=True, index_k_dtype="bf16")
    cache = PrefixCache(2_500, True)
    for name in ("a", "b"):  # a and b end up on host once c and d take the pool
        cache.release(prompt_of(("s", 10), (name, 1000)), Reservation((), 0))
    for name in ("c", "d"):
        cache.release(prompt_of(("s", 10), (name, 1000)), Reservation((), 0))
    scheduler = Scheduler(config, CostModel(), cache, EngineMetrics(), on_prefill=seen.append)
    gens = [Generation(n, prompt_of(("s", 10), (n, 1000), (n + "2", 50)), ["t"]) for n in "ab"]
    for gen in gens:
        scheduler.add_prefill(gen)
    await _run_until_drained(scheduler, gens)
    forward = seen[0]
    assert [g.match.host_tokens for g in forward.batch] == [1000, 1000]
    first, second = forward.load_done_s
    assert second == pytest.approx(2 * first) and first > 0  # one after another on the link
    assert forward.head_start_s == 0.0  # nothing was decoding
    cost = CostModel()
    assert cost.host_load_s(10**9, handovers=3) > cost.host_load_s(10**9)


def test_without_link_sharing_a_load_back_has_the_whole_link_whatever_the_handovers() -> None:
    shared = CostModel.for_config(EngineConfig())
    duplex = CostModel.for_config(EngineConfig(handover_link_sharing=False))
    assert duplex.host_load_s(450 * 10**9, handovers=5) == pytest.approx(1.0)  # 450 GB/s
    assert shared.host_load_s(450 * 10**9, handovers=5) == pytest.approx(2.25)  # 200 GB/s left
    assert shared.host_load_s(10**9) == duplex.host_load_s(10**9)


@pytest.mark.parametrize("overlap_schedule", [True, False])
async def test_a_server_with_requests_decoding_starts_its_load_backs_a_step_early(
    overlap_schedule: bool,
) -> None:
    seen: list[PrefillForward] = []
    config = EngineConfig(
        time_scale=0.001, stream_interval_tokens=4, overlap_schedule=overlap_schedule
    )
    cache = PrefixCache(100_000, True)
    scheduler = Scheduler(config, CostModel(), cache, EngineMetrics(), on_prefill=seen.append)
    task = asyncio.create_task(scheduler.run())
    try:
        decoding = Generation("decoding", prompt_of(("p", 10)), [f"t{i}" for i in range(400)])
        scheduler.add_prefill(decoding)
        await asyncio.wait_for(decoding.out.get(), DEADLINE_S)
        late = Generation("late", prompt_of(("q", 10)), ["t"])
        scheduler.add_prefill(late)
        await asyncio.wait_for(_drain(late), DEADLINE_S)
    finally:
        task.cancel()
    assert seen[0].head_start_s == 0.0
    if not overlap_schedule:  # --disable-overlap-schedule: the batch waits for the step
        assert seen[1].head_start_s == 0.0
        return
    assert seen[1].head_start_s == pytest.approx(
        CostModel().decode_step_s(1, decoding.context_tokens), rel=0.2
    )


def _prefill_config(**overrides: object) -> EngineConfig:
    """A PD prefill with HiCache and the overlap loop's head start for prefill batches."""
    settings: dict = {"time_scale": 0.001, "role": "prefill", "hicache": True}
    return EngineConfig(**{"overlap_prefill_loads": True, **settings, **overrides})


async def _two_prefills(
    config: EngineConfig,
    first: Generation,
    second: Generation,
    cache: PrefixCache | None = None,
    late_second: bool = False,
) -> list[PrefillForward]:
    """Run `first` and `second` (too big to share a batch) through a prefill scheduler; the
    second waits from the start, or arrives while the first's forward runs."""
    seen: list[PrefillForward] = []

    def on_prefill(forward: PrefillForward) -> None:
        seen.append(forward)
        if late_second and len(seen) == 1:
            # Runs once the forward's sleep has begun: the clock is already at its end.
            asyncio.get_running_loop().call_soon(scheduler.add_prefill, second)

    cache = cache or PrefixCache(100_000, True)
    cost = CostModel.for_config(config)
    scheduler = Scheduler(config, cost, cache, EngineMetrics(), on_prefill=on_prefill)
    scheduler.add_prefill(first)
    if not late_second:
        scheduler.add_prefill(second)
    task = asyncio.create_task(scheduler.run())
    try:
        await asyncio.wait_for(second.prefilled.wait(), DEADLINE_S)
    finally:
        task.cancel()
    return seen


async def _prefill_forwards(
    overlap: bool, late_second: bool, overlap_schedule: bool = True
) -> list[PrefillForward]:
    config = _prefill_config(overlap_prefill_loads=overlap, overlap_schedule=overlap_schedule)
    first = Generation("first", prompt_of(("a", 8000)), [])
    second = Generation("second", prompt_of(("b", 1000)), [])
    return await _two_prefills(config, first, second, late_second=late_second)


async def test_with_overlapped_prefill_loads_a_queued_batch_starts_its_loads_under_the_last_forward() -> (
    None
):
    first, second = await _prefill_forwards(overlap=True, late_second=False)
    assert [g.rid for g in first.batch] == ["first"] and [g.rid for g in second.batch] == ["second"]
    assert first.head_start_s == 0.0  # nothing ran before it
    assert second.start_s == pytest.approx(first.start_s + first.duration_s)
    assert second.head_start_s == pytest.approx(first.duration_s)


@pytest.mark.parametrize(("overlap", "overlap_schedule"), [(False, True), (True, False)])
async def test_without_the_switch_or_the_overlap_loop_a_pd_prefill_batch_has_no_head_start(
    overlap: bool, overlap_schedule: bool
) -> None:
    forwards = await _prefill_forwards(overlap, False, overlap_schedule)
    assert [f.head_start_s for f in forwards] == [0.0, 0.0]


async def test_a_request_that_came_during_the_last_forward_gets_no_head_start() -> None:
    first, second = await _prefill_forwards(overlap=True, late_second=True)
    assert second.batch[0].arrived_at_s > first.start_s
    assert second.head_start_s == 0.0


async def test_a_batch_behind_a_load_bound_forward_gets_only_what_is_left_after_its_loads() -> None:
    """The loads share one load stream: a batch formed under a forward whose own loads ran
    until near its end starts its loads only when those have landed, so its head start is
    the forward's tail, not the whole forward."""
    # At 0.01 GB/s a 1,000-token load-back takes seconds, far past the compute.
    config = _prefill_config(host_link_gbytes_per_s=0.01)
    cache = PrefixCache(20_000, True)
    cache.release(prompt_of(("s", 10), ("a", 1000)), Reservation((), 0))
    for name in ("c", "d"):  # a ends up on the host tier once c and d take the pool
        cache.release(prompt_of((name, 9_500)), Reservation((), 0))
    first = Generation("first", prompt_of(("s", 10), ("a", 1000), ("a2", 50)), [])
    second = Generation("second", prompt_of(("b", 8_180)), [])  # too big to share its batch
    loaded, behind = await _two_prefills(config, first, second, cache)
    assert loaded.batch[0].match.host_tokens == 1000 and loaded.load_done_s[0] > loaded.compute_s
    loads_landed_s = loaded.start_s + loaded.load_done_s[0]  # no head start of its own
    assert behind.start_s == pytest.approx(loaded.start_s + loaded.duration_s)
    assert behind.head_start_s == pytest.approx(behind.start_s - loads_landed_s)
    assert behind.head_start_s == pytest.approx(0.010)  # PREFILL_TAIL_S
    assert behind.head_start_s < loaded.duration_s / 100
