"""The prefill's KV sender: hands each room's KV to the decode side that fetches it.

Hand-overs are sharded by room over a few queues, one at a time each (SGLang's Mooncake
sender, SGLANG_DISAGGREGATION_QUEUE_SIZE), so one that hangs holds up those behind it. Two
faults live here: a dead bootstrap worker (the abort wedge) serves nothing, and a hand-over
whose index-K part is never ready (faults: stuck hand-overs) waits out the transfer timeout.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson

from repro.sim.config import EngineConfig
from repro.sim.faults import BootstrapWorker
from repro.sim.metrics import EngineMetrics
from repro.sim.pd import Handover, HandoverBoard
from repro.sim.response import error_body
from repro.sim.timing import CostModel

log = logging.getLogger("repro.sim")


class KvSender:
    def __init__(
        self,
        board: HandoverBoard,
        worker: BootstrapWorker,
        config: EngineConfig,
        cost: CostModel,
        metrics: EngineMetrics,
    ) -> None:
        self._board = board
        self._worker = worker
        self._config = config
        self._cost = cost
        self._metrics = metrics
        self._queues = [asyncio.Lock() for _ in range(max(1, config.transfer_queues))]

    async def serve(self, room: int, timeout_s: float) -> tuple[int, bytes]:
        """Wait for the room's prefill, transfer it, answer its facts: (HTTP status, body)."""
        handover = self._board.entry(room)
        try:
            await asyncio.wait_for(handover.ready.wait(), timeout_s)
        except TimeoutError:
            self._board.discard(room)
            return 504, error_body(f"room {room} never prefilled", 504, "Timeout")
        if self._worker.dead:
            # Wedged: nobody serves hand-overs any more; the decode side waits until it gives up.
            await asyncio.sleep(timeout_s)
            return 504, error_body(f"room {room}: bootstrap worker is dead", 504, "Timeout")
        info = handover.info or {}
        async with self._queues[room % len(self._queues)]:
            if info.get("stuck"):
                return await self._stuck(room, handover, info)
            await asyncio.sleep(float(info.get("transfer_s", 0.0)) * self._config.time_scale)
        handover.fetched.set()
        return 200, orjson.dumps(info)

    async def _stuck(
        self, room: int, handover: Handover, info: dict[str, Any]
    ) -> tuple[int, bytes]:
        """The KV pages went; the index-K part waits for a signal that never comes, then the
        transfer times out. The prefill holds the request's pages all along."""
        timeout_s = self._config.transfer_timeout_s
        message = (
            f"KV transfer for room {room} failed: the index-K pages of its prefix loaded back "
            f"from the host tier ({info.get('host_tokens', 0)} tokens) never became ready to send "
            f"(bf16 index-K, ungated load-back); timed out after {timeout_s:g} s"
        )
        log.warning("%s", message)
        self._metrics.stuck_handovers_total += 1
        try:
            kv_part_s = self._cost.kv_part_s(int(info.get("prompt_tokens", 0)))
            await asyncio.sleep((kv_part_s + timeout_s) * self._config.time_scale)
        finally:
            handover.fetched.set()  # the prefill may let the pages go now
        return 500, error_body(message, 500, "InternalServerError")
