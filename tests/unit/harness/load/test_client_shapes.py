"""The client for every request shape: whole answers (`stream: false`), `n` > 1 streams, and
what a stream notes when it breaks its own order, all from raw HTTP answers on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from repro.harness.load.client import ChatClient
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog
from repro.records.turn import TurnOutcome
from tests.unit.harness.load.test_client_answers import SSE, Answer, event, head, raw, raw_server

pytestmark = pytest.mark.anyio

JSON = "content-type: application/json"
WHOLE = {
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "",
                "reasoning": "look first",
                "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
                ],
            },
            "finish_reason": "tool_calls",
            "logprobs": {"content": [{"token": "a", "logprob": -0.1, "top_logprobs": []}]},
        },
        {"index": 1, "message": {"content": "Done."}, "finish_reason": "stop"},
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
}  # fmt: skip


def sse(*events: object) -> bytes:
    return b"".join(event(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def delta(index: int = 0, finish: str | None = None, **fields: object) -> dict:
    return {"choices": [{"index": index, "delta": fields, "finish_reason": finish}]}


async def call(answer: Answer, *, whole: bool = False) -> StreamProgress:
    async with raw_server(answer) as url, running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, 5)
        progress = StreamProgress(scheduled_at_s=watchdog.clock.now())
        try:
            if whole:
                await client.complete_chat(b"{}", progress, deadline_s=5)
            else:
                await client.stream_chat(b"{}", progress, deadline_s=5)
        finally:
            await client.aclose()
    return progress


async def test_a_whole_answer_is_read_into_every_choice_with_its_usage() -> None:
    body = json.dumps(WHOLE).encode()
    progress = await call(
        raw(head("200 OK", JSON, f"content-length: {len(body)}") + body), whole=True
    )
    assert progress.outcome is TurnOutcome.OK and not progress.streamed
    first, second = progress.served().choices
    assert first.reasoning == "look first" and first.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.calls] == [
        ("c1", "read_file", '{"path": "a.py"}')
    ]
    assert len(first.logprobs) == 1
    assert second.content == "Done." and second.finish_reason == "stop"
    assert progress.usage.completion_tokens == 9 and progress.served().usage_events == 1


async def test_a_whole_answer_without_a_length_is_read_to_the_connection_s_end() -> None:
    progress = await call(raw(head("200 OK", JSON) + json.dumps(WHOLE).encode()), whole=True)
    assert progress.outcome is TurnOutcome.OK and progress.served().choices[1].content == "Done."


@pytest.mark.parametrize(
    ("fields", "body", "kind"),
    [
        ([SSE], sse(delta(content="hi")), "streamed_whole"),
        ([JSON], b"{not json", "bad_json"),
        ([JSON], b'{"choices": "many"}', "schema"),
        (["content-type: text/html"], b"<html></html>", "not_json"),
    ],
)
async def test_a_whole_answer_that_is_not_a_completion_is_a_protocol_error(
    fields: list[str], body: bytes, kind: str
) -> None:
    progress = await call(raw(head("200 OK", *fields) + body), whole=True)
    assert progress.outcome is TurnOutcome.PROTOCOL_ERROR and progress.protocol_kind == kind


async def test_n_choices_stream_interleaved_and_each_is_kept_apart() -> None:
    stream = sse(
        delta(0, role="assistant", content=""),
        delta(1, role="assistant", content=""),
        delta(0, content="one "),
        delta(1, content="two "),
        delta(1, tool_calls=[{"index": 0, "id": "x", "function": {"name": "f", "arguments": "{}"}}]),
        delta(0, finish="stop"),
        delta(1, finish="tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}},
    )  # fmt: skip
    progress = await call(raw(head("200 OK", SSE) + stream))
    first, second = progress.served().choices
    assert (first.content, first.finish_reason) == ("one ", "stop")
    assert (second.content, second.finish_reason, second.calls[0].name) == (
        "two ",
        "tool_calls",
        "f",
    )
    assert progress.anomalies == []


@pytest.mark.parametrize(
    ("events", "rule"),
    [
        ([delta(finish="stop"), delta(content="late")], "after_finish"),
        ([delta(content="a"), delta(finish="stop"), delta(finish="stop")], "after_finish"),
        ([{"choices": [], "usage": {"completion_tokens": 1}}, delta(content="late")], "after_usage"),
        ([delta(tool_calls=[{"index": 0, "id": "x", "function": {"name": "f"}}]),
          delta(tool_calls=[{"index": 0, "function": {"name": "f", "arguments": "{}"}}])],
         "call_header_repeated"),
        ([delta(tool_calls=[{"index": 1, "id": "x", "function": {"name": "f"}}])], "call_index"),
        ([delta(tool_calls=[{"id": "x", "function": {"name": "f"}}])], "call_index"),
    ],
)  # fmt: skip
async def test_a_stream_that_breaks_its_own_order_is_noted(events: list, rule: str) -> None:
    progress = await call(raw(head("200 OK", SSE) + sse(*events)))
    assert progress.outcome is TurnOutcome.OK
    assert [r for r, _ in progress.anomalies][:1] == [rule]


async def test_an_event_after_done_is_noted_and_a_clean_stream_notes_nothing() -> None:
    late = sse(delta(content="a"), delta(finish="stop")) + event(delta(content="b")) + b"\n\n"
    progress = await call(raw(head("200 OK", SSE) + late))
    assert [r for r, _ in progress.anomalies] == ["after_done"]
    assert progress.content_text() == "a"
    clean = await call(raw(head("200 OK", SSE) + sse(delta(content="a"), delta(finish="stop"))))
    assert clean.anomalies == [] and clean.content_text() == "a"


async def test_vllm_s_reasoning_field_is_read_as_reasoning() -> None:
    progress = await call(
        raw(head("200 OK", SSE) + sse(delta(reasoning="hm"), delta(finish="stop")))
    )
    assert progress.reasoning_text() == "hm"
