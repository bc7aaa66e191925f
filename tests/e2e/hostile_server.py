"""A hostile OpenAI-compatible server on 127.0.0.1, for fault-injection tests of repro's client.

    python -m tests.e2e.hostile_server PORT BEHAVIOUR [BEHAVIOUR ...]

Request n to /v1/chat/completions gets BEHAVIOUR[n % len]. Raw asyncio, not a framework, so
it can do what a well-behaved server never does: cut a stream, reset the connection, go
silent, send bytes that are not an event. Every answer is a one-turn final reply (text,
no tool call), so each session of `repro run --max-turns 1` is one request.

    good            a well-formed stream: reasoning, the text, finish_reason, usage, [DONE]
    event:JSON      one good chunk, then this event as is, then [DONE]
    raw:TEXT        one good chunk, then TEXT as is (\\n escapes allowed), then the end
    reset           one good chunk, then a TCP reset
    stall           one good chunk, then silence with the connection open
    http500         HTTP 500 with a JSON error body
    reset-early     a TCP reset once the request is read, before any answer
    bad-http        bytes that are not an HTTP answer, then the end
    short-body      a stream that declares more bytes than it sends: one good chunk, then the end
    long-line:N     one good chunk, a data line of N bytes (no newline until its end), then
                    CONTENT_EVENTS text events, finish_reason, usage, [DONE]
    long-line-stall:N   one good chunk, a data line of N bytes still unended, then silence

    models-stall-after:N   (not a chat behaviour) /v1/models answers N times, then goes silent
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import sys

ANSWER = "All done."


def _event(payload: object) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _chunk(**delta: object) -> bytes:
    return _event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})


FIRST = _chunk(role="assistant", reasoning_content="Checking.")  # every stream's first chunk
CONTENT_EVENTS = 6  # after a long line: more answer text events than a proxy's injection point


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _long_line(writer: asyncio.StreamWriter, size: int) -> None:
    """A data line of `size` bytes, written in pieces as a server streaming it would."""
    writer.write(b"data: ")
    for start in range(0, size, 64 * 1024):
        writer.write(b"x" * min(64 * 1024, size - start))
        await writer.drain()


def _good_tail(max_tokens: int) -> bytes:
    return (
        _chunk(content=f"{ANSWER} (max_tokens={max_tokens})")
        + _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        + _event({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 12}})
        + b"data: [DONE]\n\n"
    )


def _head(status: str, content_type: str) -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
    ).encode()


class Hostile:
    def __init__(self, behaviours: list[str]) -> None:
        stall = [b for b in behaviours if b.startswith("models-stall-after:")]
        self.models_answered = int(stall[0].split(":")[1]) if stall else None
        self.behaviours = [b for b in behaviours if b not in stall] or ["good"]
        self.requests = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *fields = head.decode("latin-1").split("\r\n")
            length = next(
                (int(f.split(":", 1)[1]) for f in fields if f.lower().startswith("content-length")),
                0,
            )
            body = await reader.readexactly(length)
            path = line.split(" ")[1]
            if path == "/v1/models":
                if self.models_answered == 0:
                    print("stalling a /v1/models request", flush=True)
                    await asyncio.sleep(3600)
                elif self.models_answered is not None:
                    self.models_answered -= 1
                writer.write(_head("200 OK", "application/json"))
                writer.write(json.dumps({"data": [{"id": "hostile"}]}).encode())
            elif path == "/v1/chat/completions":
                behaviour = self.behaviours[self.requests % len(self.behaviours)]
                self.requests += 1
                await self.chat(behaviour, json.loads(body), writer)
            else:
                writer.write(_head("404 Not Found", "text/plain") + b"no")
            await writer.drain()
            writer.close()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass

    async def chat(self, behaviour: str, request: dict, writer: asyncio.StreamWriter) -> None:
        kind, _, arg = behaviour.partition(":")
        if kind == "http500":
            writer.write(_head("500 Internal Server Error", "application/json"))
            writer.write(b'{"error": {"message": "the hostile server failed on purpose"}}')
            return
        if kind == "reset-early":
            _reset(writer)
            return
        if kind == "bad-http":
            writer.write(b"this is not HTTP\r\n\r\n")
            return
        if kind == "short-body":
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + f"content-length: {len(FIRST) + 1000}\r\n\r\n".encode()
                + FIRST
            )
            return
        writer.write(_head("200 OK", "text/event-stream"))
        writer.write(FIRST)
        await writer.drain()
        if kind == "good":
            writer.write(_good_tail(request.get("max_tokens", -1)))
        elif kind == "event":
            writer.write(f"data: {arg}\n\n".encode() + b"data: [DONE]\n\n")
        elif kind == "raw":
            writer.write(arg.replace("\\n", "\n").encode())
        elif kind == "reset":
            _reset(writer)
        elif kind == "stall":
            await asyncio.sleep(3600)
        elif kind == "long-line":
            await _long_line(writer, int(arg))
            writer.write(b"\n\n")
            for n in range(CONTENT_EVENTS):
                writer.write(_chunk(content=f"part {n} of the answer. "))
            writer.write(_good_tail(request.get("max_tokens", -1)))
        elif kind == "long-line-stall":
            await _long_line(writer, int(arg))
            await asyncio.sleep(3600)
        else:
            raise SystemExit(f"unknown behaviour {behaviour!r}")


async def main(port: int, behaviours: list[str]) -> None:
    server = await asyncio.start_server(Hostile(behaviours).serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2:]))
