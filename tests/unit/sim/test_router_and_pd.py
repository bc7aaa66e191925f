"""PD plumbing: bootstrap fields spliced into raw bodies; rooms pair either arrival order."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from repro.sim.pd import HandoverBoard
from repro.sim.serving.router import inject_bootstrap


def test_inject_bootstrap_keeps_the_body_and_adds_three_fields() -> None:
    body = orjson.dumps({"messages": [{"role": "user", "content": "}{"}], "stream": True}) + b"\n"
    routed = orjson.loads(inject_bootstrap(body, "127.0.0.1", 8998, 2**62))
    assert routed["messages"][0]["content"] == "}{" and routed["stream"] is True
    assert (routed["bootstrap_host"], routed["bootstrap_port"], routed["bootstrap_room"]) == (
        "127.0.0.1",
        8998,
        2**62,
    )
    assert orjson.loads(inject_bootstrap(b"{}", "h", None, 1)) == {
        "bootstrap_host": "h",
        "bootstrap_port": None,
        "bootstrap_room": 1,
    }
    with pytest.raises(ValueError):
        inject_bootstrap(b"[1]", "h", 1, 1)


@pytest.mark.anyio
async def test_a_room_pairs_whichever_half_arrives_first() -> None:
    board = HandoverBoard()
    waiting = board.entry(7)  # decode asked first
    board.publish(7, {"prompt_tokens": 5})
    await asyncio.wait_for(waiting.ready.wait(), 1)
    assert waiting.info == {"prompt_tokens": 5}
    board.publish(8, {"prompt_tokens": 6})  # prefill first
    assert board.entry(8).ready.is_set()
    board.discard(7)
    board.discard(8)
    assert len(board) == 0
