"""The injector on hand-made SSE streams: untouched when no rule fires, and each rule's effect."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import anyio
import orjson
import pytest

from repro.proxy import sse
from repro.proxy.injector import Injection, InjectionRule, Injector, RuleKind, Target

DSML_OPEN = "<｜DSML｜function_calls>\n"


def event(content: str | None = None, *, reasoning: str | None = None, finish: str | None = None,
          arguments: str | None = None, usage: bool = False) -> bytes:  # fmt: skip
    delta: dict = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if arguments is not None:
        delta["tool_calls"] = [{"index": 0, "function": {"arguments": arguments}}]
    payload = {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage:
        payload = {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 5}}
    return sse.serialize(payload)


DONE = b"data: [DONE]\n\n"


def answer(*texts: str) -> list[bytes]:
    """A stream that thinks, opens a DSML call, writes `texts`, then ends with usage and [DONE]."""
    return [event(reasoning="thinking"), event(DSML_OPEN), *(event(t) for t in texts),
            event(finish="stop"), event(usage=True), DONE]  # fmt: skip


async def chunks_of(events: list[bytes], split_at: int = 7) -> AsyncIterator[bytes]:
    """The events as a byte stream cut into odd-sized chunks, as TCP delivers them."""
    data = b"".join(events)
    for start in range(0, len(data), split_at):
        yield data[start : start + split_at]
        await anyio.sleep(0)


def content_of(stream: bytes) -> str:
    payloads = [sse.parse(e) for e in sse.split_events(bytearray(stream))]
    texts = [sse.judged_text(p) for p in payloads if p is not None]
    return "".join(t.text for t in texts if t is not None)


async def collect(injector: Injector, events: list[bytes], body: bytes = b"{}") -> bytes:
    return b"".join([c async for c in injector.tap(chunks_of(events), body)])


@pytest.mark.anyio
async def test_a_stream_no_rule_draws_passes_byte_for_byte() -> None:
    events = answer('<｜DSML｜invoke name="read">', "</｜DSML｜invoke>")
    for rule in (InjectionRule(RuleKind.OFF, rate=1.0), InjectionRule(RuleKind.SPLICE, rate=0.0)):
        made: list[Injection] = []
        injector = Injector(rule, made.append)
        assert await collect(injector, events) == b"".join(events)
        assert made == [] and injector.counts()["streams"] == 1


@pytest.mark.anyio
async def test_drop_removes_bytes_from_call_text_and_logs_them() -> None:
    made: list[Injection] = []
    injector = Injector(
        InjectionRule(RuleKind.DROP, min_streams=1, rate=1.0, span_bytes=4), made.append
    )
    texts = ['<｜DSML｜invoke name="read_file">\n'] * 4
    out = await collect(injector, answer(*texts), body=b'{"a": 1}')
    (injection,) = made
    expected = DSML_OPEN + "".join(texts)
    assert len(content_of(out)) == len(expected) - len(injection.text) and injection.text
    assert injection.rule == "drop" and injection.field == "content" and injection.in_flight == 1
    assert injection.request_sha256 == hashlib.sha256(b'{"a": 1}').hexdigest()
    assert out.endswith(DONE) and b'"usage"' in out  # the stream still ends as it did


@pytest.mark.anyio
async def test_cut_withholds_all_later_text_but_keeps_the_ending() -> None:
    made: list[Injection] = []
    injector = Injector(InjectionRule(RuleKind.CUT, min_streams=1, rate=1.0), made.append)
    texts = ["<｜DSML｜invoke ", 'name="read">', "</｜DSML｜invoke>", "\n</｜DSML｜function_calls>"]
    out = await collect(injector, answer(*texts))
    (injection,) = made
    full = DSML_OPEN + "".join(texts)
    assert content_of(out) + injection.text == full[: len(content_of(out)) + len(injection.text)]
    assert len(content_of(out)) < len(full)
    assert b'"finish_reason":"stop"' in out and b'"usage"' in out and out.endswith(DONE)


@pytest.mark.anyio
async def test_only_call_text_is_a_target_unless_any() -> None:
    prose = [event(reasoning="r"), *(event("plain words ") for _ in range(6)), event(finish="stop"), DONE]  # fmt: skip
    calls = Injector(InjectionRule(RuleKind.DROP, min_streams=1, rate=1.0), lambda i: None)
    assert await collect(calls, prose) == b"".join(prose)
    assert calls.counts() == {
        "streams": 1, "victims": 1, "injected": 0, "streamed_bytes": len(b"".join(prose))
    }  # fmt: skip
    anywhere = Injector(
        InjectionRule(RuleKind.DROP, min_streams=1, rate=1.0, target=Target.ANY), lambda i: None
    )
    assert await collect(anywhere, prose) != b"".join(prose)
    assert anywhere.counts()["injected"] == 1


@pytest.mark.anyio
async def test_parsed_tool_call_arguments_are_a_target() -> None:
    made: list[Injection] = []
    injector = Injector(InjectionRule(RuleKind.DROP, min_streams=1, rate=1.0), made.append)
    events = [event(arguments='{"path": '), event(arguments='"src/a.py"}'), event(finish="tool_calls"), DONE]  # fmt: skip
    out = await collect(injector, events)
    assert made[0].field == "tool_calls[0].arguments"
    arguments = "".join(
        p["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for e in sse.split_events(bytearray(out))
        if (p := sse.parse(e)) and p["choices"] and p["choices"][0]["delta"].get("tool_calls")
    )
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(arguments)


@pytest.mark.anyio
async def test_splice_needs_enough_streams_and_takes_another_streams_answer() -> None:
    slow = [event(DSML_OPEN), *(event(f"<｜DSML｜donor{i}>") for i in range(6)), DONE]
    victim = answer(*(f"<｜DSML｜victim{i}>" for i in range(6)))

    async def run(min_streams: int) -> tuple[bytes, list[Injection]]:
        made: list[Injection] = []
        # Stream 0 is the donor (its draw never fires at rate 0.5 with seed 3); stream 1 fires.
        injector = Injector(
            InjectionRule(RuleKind.SPLICE, min_streams, rate=0.5, seed=3), made.append
        )
        donor_started, victim_done, victim_out = anyio.Event(), anyio.Event(), []

        async def donor() -> None:
            async for _ in injector.tap(chunks_of(slow, split_at=1000), b"d"):
                donor_started.set()
                await victim_done.wait()  # stays in flight while the victim streams

        async def victim_stream() -> None:
            await donor_started.wait()
            victim_out.append(await collect(injector, victim))
            victim_done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(donor)
            group.start_soon(victim_stream)
        return victim_out[0], made

    out, made = await run(min_streams=2)
    (injection,) = made
    assert injection.donor == 0 and injection.in_flight == 2 and "donor" in injection.text
    assert injection.text in content_of(out)
    out, made = await run(min_streams=3)  # only two streams ever: the rule never fires
    assert made == [] and out == b"".join(victim)


def test_draws_are_seeded_and_near_the_rate() -> None:
    async def victims(seed: int) -> int:
        injector = Injector(InjectionRule(RuleKind.CUT, rate=0.1, seed=seed), lambda i: None)
        for _ in range(2000):
            await collect(injector, [DONE])
        return injector.counts()["victims"]

    first, again = anyio.run(victims, 7), anyio.run(victims, 7)
    assert first == again and 160 <= first <= 240  # 200 expected; 4.5 sigma either side
