"""How many requests the replay sends at once to the run's own engine after the load.

A number given is taken as is. Auto replays a few turns alone (the pace alone, and their
answers alone), asks for as many at once as the budget needs at that pace (with headroom:
later turns have longer prompts), at most a small share of the load, and keeps that number
only if the engine answers those same turns at it as it answered them alone, a near tie
aside: the engine shown batch-invariant there. Otherwise the replay runs one at a time.
"""

from __future__ import annotations

import math
import ssl
import time
from typing import Any, Protocol

import anyio

from repro.checkers.divergence import Answer, compare
from repro.harness.load.client import ChatClient
from repro.harness.load.counts import ReplayCounts
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import Watchdog
from repro.records.turn import TurnOutcome
from repro.spec import RunSpec

PROBE_TURNS = 4  # turns replayed alone first: the pace alone, and the batch-invariance check
MAX_AUTO_CONCURRENCY = 32  # auto never replays more at once (a small share of an 80-session load)
# Auto asks for this much more concurrency than the pace alone says: later turns have longer
# prompts than the probe's, and several at once are not quite as fast as one.
AUTO_HEADROOM = 2.5


class Replay(Protocol):
    """What the probe uses of harness.lifecycle.replay.Replay (which imports this module)."""

    spec: RunSpec
    counts: ReplayCounts
    concurrency: int
    invariance: str
    alone_pace_s: float
    pace_from: tuple[float, int]

    def next_now(self) -> Any: ...
    def rebuild(self, loaded: Any) -> tuple[dict[str, Any], bytes, bool]: ...
    async def ask(self, client: ChatClient, body: bytes, streamed: bool) -> StreamProgress: ...
    def judge(self, item: Any, url: str, progress: StreamProgress, request: dict) -> None: ...
    async def replay_one(self, client: ChatClient, url: str, item: Any) -> None: ...
    def answer_of(self, progress: StreamProgress) -> Answer: ...


async def settle_concurrency(
    replay: Replay, url: str, watchdog: Watchdog, tls: ssl.SSLContext
) -> None:
    """Set `replay.concurrency` for the replay on `url` (the run's engine, after the load)."""
    spec = replay.spec
    if spec.replay_concurrency != "auto":
        replay.concurrency = int(spec.replay_concurrency)
        return
    cap = min(MAX_AUTO_CONCURRENCY, max(1, spec.effective_concurrency() // 2))
    if cap == 1:
        return
    probe = [item for _ in range(PROBE_TURNS) if (item := replay.next_now()) is not None]
    if not probe:
        return
    client = ChatClient(url, watchdog, spec.stall_after_s * 2, tls=tls)
    alone: list[StreamProgress] = []
    try:
        started = time.monotonic()
        for item in probe:  # one at a time: the pace alone, and the answers alone
            request, body, streamed = replay.rebuild(item.loaded)
            alone.append(await replay.ask(client, body, streamed))
            replay.judge(item, url, alone[-1], request)
        pace_s = (time.monotonic() - started) / len(probe)
    finally:
        with anyio.CancelScope(shield=True):
            await client.aclose()
    replay.alone_pace_s = pace_s
    counts = replay.counts
    wanted = cap
    if counts.budget_s is not None:
        left = counts.turns_planned - counts.turns_done
        room_s = counts.budget_s - (time.monotonic() - counts.started_at_s)
        wanted = math.ceil(left * pace_s * AUTO_HEADROOM / room_s) if room_s > 0 else cap
    concurrency = max(1, min(cap, wanted))
    if concurrency > 1:
        concurrency = await _batch_invariant(replay, url, watchdog, tls, probe, alone, concurrency)
    replay.concurrency = concurrency
    replay.pace_from = (time.monotonic(), counts.turns_done)


async def _batch_invariant(
    replay: Replay,
    url: str,
    watchdog: Watchdog,
    tls: ssl.SSLContext,
    probe: list[Any],
    alone: list[StreamProgress],
    concurrency: int,
) -> int:
    """The probed turns again, at once with others up to `concurrency`: the concurrency if
    each answer agrees with its answer alone (a near tie aside), else 1."""
    again: list[StreamProgress | None] = [None] * len(probe)
    stall_s = replay.spec.stall_after_s * 2

    async def ask(index: int) -> None:
        client = ChatClient(url, watchdog, stall_s, tls=tls)
        try:
            _, body, streamed = replay.rebuild(probe[index].loaded)
            again[index] = await replay.ask(client, body, streamed)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def one_more() -> None:  # the rest of the batch: real replays
        item = replay.next_now()
        if item is None:
            return
        client = ChatClient(url, watchdog, stall_s, tls=tls)
        try:
            await replay.replay_one(client, url, item)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    replay.concurrency = concurrency  # the batch's other turns are judged as at it
    async with anyio.create_task_group() as batch:
        for index in range(len(probe)):
            batch.start_soon(ask, index)
        for _ in range(concurrency - len(probe)):
            batch.start_soon(one_more)
    margin = replay.spec.numerical_margin_nats
    for item, first, second in zip(probe, alone, again, strict=True):
        if second is None or first.outcome is not TurnOutcome.OK:
            continue
        if second.outcome is not TurnOutcome.OK:
            replay.invariance = f"a probe at {concurrency} at once was not answered"
            return 1
        verdict = compare(replay.answer_of(first), replay.answer_of(second), margin)
        if verdict.counts:
            where = f"session {item.loaded.session_id} turn {item.loaded.turn}"
            replay.invariance = (
                f"the engine answered {where} differently with {concurrency} at once than "
                f"alone ({verdict.describe()}), so the replay ran one at a time"
            )
            return 1
    replay.invariance = f"{len(probe)} turns answered the same with {concurrency} at once as alone"
    return concurrency
