"""What a victim stream holds of an unfinished event always reaches the client: past the line
cap (the stream is then passed on untouched, with one note) and when the upstream fails."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from repro.harness.load.sse_connection import MAX_EVENT_BYTES as CLIENT_CAP
from repro.proxy import sse
from repro.proxy.injector import (
    MAX_EVENT_BYTES,
    Injection,
    InjectionRule,
    Injector,
    RuleKind,
    Target,
)
from tests.unit.proxy.test_injector import DONE, event

# Every stream a victim; any answer text a target: without the cap, a drop always fires.
EVERY_STREAM = InjectionRule(RuleKind.DROP, min_streams=1, rate=1.0, target=Target.ANY)
TARGETS = [event(f"part {n} of the answer. ") for n in range(6)] + [event(finish="stop"), DONE]


def long_line(size: int) -> bytes:
    return b"data: " + b"x" * size + sse.SEPARATOR


async def pieces(data: bytes, then_wait: bool = False) -> AsyncIterator[bytes]:
    """`data` in 64 KiB reads, as a socket gives a fast sender's bytes; then, if asked, the
    upstream goes silent with the stream still open."""
    for start in range(0, len(data), 64 * 1024):
        yield data[start : start + 64 * 1024]
        await anyio.sleep(0)
    if then_wait:
        await anyio.sleep_forever()


def test_the_proxy_holds_no_longer_a_line_than_the_client_accepts() -> None:
    assert MAX_EVENT_BYTES == CLIENT_CAP


@pytest.mark.anyio
async def test_a_line_past_the_cap_flows_on_while_the_upstream_is_still_sending_it() -> None:
    notes: list[str] = []
    injector = Injector(EVERY_STREAM, lambda i: None, notes.append)
    unended = long_line(2 * MAX_EVENT_BYTES)[: -len(sse.SEPARATOR)]
    received = bytearray()
    # Without the cap the proxy would hold all of it, waiting for an end that never comes.
    with anyio.fail_after(5):
        async for chunk in injector.tap(pieces(unended, then_wait=True), b"{}", "request 7"):
            received += chunk
            if len(received) == len(unended):
                break
    assert received == unended
    (note,) = notes
    assert note.startswith("request 7, stream 0: an event passed 1,048,576 bytes without ending")


@pytest.mark.anyio
async def test_after_the_cap_the_stream_passes_untouched_and_nothing_is_injected() -> None:
    made: list[Injection] = []
    notes: list[str] = []
    injector = Injector(EVERY_STREAM, made.append, notes.append)
    stream = b"".join([long_line(2 * MAX_EVENT_BYTES), *TARGETS])
    out = b"".join([c async for c in injector.tap(pieces(stream), b"{}")])
    assert out == stream and made == [] and len(notes) == 1


@pytest.mark.anyio
async def test_a_long_line_under_the_cap_is_still_inspected() -> None:
    """The control of the test above: the same stream, its line shorter, is corrupted."""
    made: list[Injection] = []
    notes: list[str] = []
    injector = Injector(EVERY_STREAM, made.append, notes.append)
    stream = b"".join([long_line(MAX_EVENT_BYTES - 100), *TARGETS])
    out = b"".join([c async for c in injector.tap(pieces(stream), b"{}")])
    assert out != stream and len(made) == 1 and notes == []


@pytest.mark.anyio
async def test_an_upstream_failure_passes_on_the_unfinished_event_then_itself() -> None:
    sent = event(reasoning="thinking") + b'data: {"choices": [{"delta": {"content": "hal'

    async def failing() -> AsyncIterator[bytes]:
        yield sent
        raise httpx.ReadError("reset")

    injector = Injector(EVERY_STREAM, lambda i: None, lambda line: None)
    received = bytearray()
    with pytest.raises(httpx.ReadError):
        async for chunk in injector.tap(failing(), b"{}"):
            received += chunk
    assert received == sent  # the held half event out, and nothing the upstream did not send
