"""The prefill's KV sender: hand-overs through its queues, a stuck one and what it holds up."""

from __future__ import annotations

import asyncio
import dataclasses

import orjson
import pytest

from repro.sim.config import EngineConfig
from repro.sim.faults import BootstrapWorker
from repro.sim.kv_sender import KvSender
from repro.sim.metrics import EngineMetrics
from repro.sim.pd import HandoverBoard
from repro.sim.timing import CostModel

pytestmark = pytest.mark.anyio
CONFIG = EngineConfig(role="prefill", time_scale=0.001, transfer_queues=2, transfer_timeout_s=60)


def _sender(
    worker: BootstrapWorker | None = None, config: EngineConfig = CONFIG
) -> tuple[KvSender, HandoverBoard, EngineMetrics]:
    board, metrics = HandoverBoard(), EngineMetrics()
    sender = KvSender(board, worker or BootstrapWorker(config), config, CostModel(), metrics)
    return sender, board, metrics


def _publish(board: HandoverBoard, room: int, stuck: bool = False) -> None:
    info = {"prompt_tokens": 70_000, "host_tokens": 68_000, "transfer_s": 0.1, "stuck": stuck}
    board.publish(room, info)


async def test_a_hand_over_is_sent_and_its_facts_answered() -> None:
    sender, board, _ = _sender()
    _publish(board, 4)
    status, body = await asyncio.wait_for(sender.serve(4, timeout_s=5), 5)
    assert status == 200 and orjson.loads(body)["host_tokens"] == 68_000
    assert board.entry(4).fetched.is_set()


async def test_a_stuck_hand_over_fails_with_its_reason_and_holds_up_its_queue() -> None:
    # A transfer timeout of 1,000 modelled seconds is 1 s here: long beside the 0.1 ms
    # transfer next to it, however busy the machine.
    sender, board, metrics = _sender(config=dataclasses.replace(CONFIG, transfer_timeout_s=1000))
    _publish(board, 2, stuck=True)  # rooms 2 and 4 share queue 0; room 3 has queue 1
    _publish(board, 4)
    _publish(board, 3)
    stuck = asyncio.create_task(sender.serve(2, timeout_s=5))
    while metrics.stuck_handovers_total == 0:  # the stuck one takes its queue first
        await asyncio.sleep(0)
    behind = asyncio.create_task(sender.serve(4, timeout_s=5))
    beside = asyncio.create_task(sender.serve(3, timeout_s=5))
    assert (await asyncio.wait_for(beside, 5))[0] == 200
    assert not behind.done() and not stuck.done()
    status, body = await asyncio.wait_for(stuck, 5)
    assert status == 500 and metrics.stuck_handovers_total == 1
    message = orjson.loads(body)["message"]
    assert "room 2 failed" in message and "(68000 tokens) never became ready" in message
    assert board.entry(2).fetched.is_set()  # the prefill may let its pages go
    assert (await asyncio.wait_for(behind, 5))[0] == 200


async def test_a_dead_bootstrap_worker_serves_nothing() -> None:
    worker = BootstrapWorker(CONFIG)
    worker.dead = True
    sender, board, _ = _sender(worker)
    _publish(board, 1)
    status, body = await asyncio.wait_for(sender.serve(1, timeout_s=0.01), 5)
    assert status == 504 and b"bootstrap worker is dead" in body
