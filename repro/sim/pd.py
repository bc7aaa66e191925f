"""PD hand-over: the prefill side publishes a computed prompt by bootstrap room; decode fetches it.

SGLang pairs the two halves of a disaggregated request by `bootstrap_room` (the router
adds `bootstrap_host/port/room` to the body it sends to both; research/sglang.md §2 and
sglang_router_cpu.md). Here the prefill process serves a tiny HTTP protocol on its
bootstrap port:

    GET  /kv/{room}?timeout_s=T   wait until the room's prefill is done, "transfer" the
                                  KV (sleep the modelled transfer time), answer its facts
    POST /abort/{room}            the decode side dropped this room (client went away)

The prefill's own HTTP response completes only once decode has fetched the KV (as in
SGLang, where a prefill request ends when its transfer ends), so a router that waits for
the prefill body before streaming decode sees the same ordering as the real one.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from repro.sim.upstream import Upstream, UpstreamError


class TransferError(RuntimeError):
    """The KV hand-over did not happen (timeout, prefill unreachable, room aborted)."""


@dataclass(slots=True, eq=False)
class Handover:
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    fetched: asyncio.Event = field(default_factory=asyncio.Event)
    info: dict[str, Any] | None = None
    aborted: bool = False


class HandoverBoard:
    """Rooms on the prefill side; either half may arrive first."""

    def __init__(self) -> None:
        self._rooms: dict[int, Handover] = {}

    def __len__(self) -> int:
        return len(self._rooms)

    def entry(self, room: int) -> Handover:
        handover = self._rooms.get(room)
        if handover is None:
            handover = self._rooms[room] = Handover()
        return handover

    def publish(self, room: int, info: dict[str, Any]) -> None:
        handover = self.entry(room)
        handover.info = info
        handover.ready.set()

    def discard(self, room: int) -> None:
        self._rooms.pop(room, None)


def _error_message(body: bytes) -> str | None:
    """The `message` of an SGLang-shaped error body, if it is one."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    message = data.get("message") if isinstance(data, dict) else None
    return message if isinstance(message, str) else None


class KvReceiver:
    """Decode side: fetch a room's KV from the prefill's bootstrap server."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._upstreams: dict[tuple[str, int], Upstream] = {}

    def _upstream(self, host: str, port: int) -> Upstream:
        upstream = self._upstreams.get((host, port))
        if upstream is None:
            upstream = self._upstreams[(host, port)] = Upstream(f"http://{host}:{port}")
        return upstream

    async def fetch(self, host: str, port: int, room: int) -> dict[str, Any]:
        upstream = self._upstream(host, port)

        async def exchange() -> tuple[int, bytes]:
            response = await upstream.request("GET", f"/kv/{room}?timeout_s={self._timeout_s}")
            return response.status, await response.read()

        try:
            status, body = await asyncio.wait_for(exchange(), self._timeout_s + 5.0)
        except (UpstreamError, TimeoutError) as exc:
            raise TransferError(f"KV transfer for room {room} failed: {exc!r}") from None
        if status != 200:
            raise TransferError(
                _error_message(body) or f"KV transfer for room {room} failed: HTTP {status}"
            )
        return orjson.loads(body)

    async def notify_abort(self, host: str, port: int, room: int) -> None:
        with contextlib.suppress(UpstreamError, TimeoutError):  # best effort, like a lost notice
            response = await asyncio.wait_for(
                self._upstream(host, port).request("POST", f"/abort/{room}"), 5.0
            )
            await response.read()

    async def aclose(self) -> None:
        for upstream in self._upstreams.values():
            upstream.close()
