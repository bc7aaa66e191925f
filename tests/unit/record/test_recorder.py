"""The recorder's writing of an exchange: a compressed answer is read, an error answer keeps
its status and the engine's message, a body that is no chat request is skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson

from repro.record.recorder import TraceRecorder
from repro.record.relay import Exchange
from repro.traces import SessionGrouper, TraceWriter, TurnLines, read_trace

BODY = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "user": "x"})
SSE = b'data: {"choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'


def exchange(
    answer: bytes, status: int = 200, encoding: bytes = b"", body: bytes = BODY, at_s: float = 10.0
) -> Exchange:
    return Exchange(body, answer, status, True, encoding, None, 1796000000.0, at_s, 0.01, 0.5)


def written(tmp_path: Path, *exchanges: Exchange) -> tuple[list[dict], TraceRecorder]:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path, {})
    notes: list[str] = []
    recorder = TraceRecorder(TurnLines(SessionGrouper("s")), writer, notes.append)
    for one in exchanges:
        recorder.record(one)
    writer.close()
    if recorder.lines.turns:
        read_trace(path)  # what the recorder writes is always a valid trace
    return [json.loads(line) for line in path.read_text().splitlines()[1:]], recorder


def test_a_compressed_answer_is_read_and_an_error_keeps_its_status(tmp_path: Path) -> None:
    error = b'{"error": {"message": "context too long", "code": 400}}'
    lines, _ = written(tmp_path, exchange(gzip.compress(SSE), encoding=b"gzip"),
                       exchange(error, status=400, at_s=11.0))  # fmt: skip
    assert lines[0]["response"] == {"role": "assistant", "content": "hello"}
    assert lines[0]["finish_reason"] == "stop" and lines[0]["ttft_s"] == 0.01
    assert lines[1]["status"] == 400 and lines[1]["error"] == "context too long"
    assert lines[1]["response"] is None and lines[1]["turn"] == 1 and lines[1]["messages"] == []
    assert "user" not in lines[0].get("params", {})


def test_a_body_that_is_no_chat_request_is_skipped(tmp_path: Path) -> None:
    lines, recorder = written(tmp_path, exchange(SSE, body=b"not json"),
                              exchange(SSE, body=b'{"prompt": "x"}'))  # fmt: skip
    assert lines == [] and recorder.skipped == 2
