"""Generated hostile servers: whatever an HTTP server can answer, as raw bytes on 127.0.0.1.

A `ServerScript` says what the server answers to GET /v1/models and to each chat request:
a status line (1xx interim answers included), headers (any content type, a content encoding
nobody asked for, framing by length, chunks or the connection's close, a wrong length), a
body of SSE lines built from good chunks, comments, other fields, broken JSON, chunks of the
wrong shape, nesting past any decoder, bytes that are not UTF-8, whole JSON completions and
HTML pages, joined by any of the three line ends; and how it ends (cleanly, a reset, a stall).

`serving(script)` runs it in a thread for the length of a `with`; `server_scripts()` is the
hypothesis strategy. Used by tests/bad_inputs.py's `answers` family: `repro gate --url`
against each generated server must answer with the exit code the rule gives (never 1
without a corrupted turn in its run folder), in one sentence, never a traceback or a hang.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from hypothesis import strategies as st

from repro.dsml.encode import encode_completion

STALL_S = 30.0  # a stalled answer sleeps this long at most (the run's limits end it sooner)


@dataclass(frozen=True)
class Answer:
    head: bytes  # status line(s) and headers, interim answers included
    body: bytes
    framing: str  # "length", "chunked", "close", "short", "long"
    ending: str  # "clean", "reset", "stall"


@dataclass(frozen=True)
class ServerScript:
    models: Answer
    chats: tuple[Answer, ...]  # request n gets chats[n % len]


def _event(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode()


def _delta(**delta: object) -> bytes:
    return _event({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})


GOOD_TURN = encode_completion([("read_file", {"path": "src/app.py"})], content="Reading.")
GOOD_LINES = [
    _delta(role="assistant", reasoning_content="Let me look."),
    _delta(content="All done."),
    _delta(content=GOOD_TURN[:40]),
    _delta(content=GOOD_TURN[40:]),
    _delta(tool_calls=[{"index": 0, "id": "c1", "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]),
    _event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    _event({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 12}}),
]  # fmt: skip
HOSTILE_LINES = [
    b": keep-alive",
    b"",
    b"event: message",
    b"id: 7",
    b"retry: 10",
    b"data:",
    b"data: {'not': json}",
    b'data: {"choices": [{"delta": {"content": 7}}]}',
    b'data: {"choices": "none"}',
    b'data: {"choices": [{"index": -1}]}',
    b'data: {"usage": {"prompt_tokens": 1e400}}',
    b'data: {"choices": [{"delta": {"content": "\\ud800"}}]}',
    b'data: {"error": {"message": "overloaded"}}',
    b'data: {"object": "error", "message": "bad"}',
    b"data: \xff\xfe\x00 not utf-8",
    b"data: [DONE] trailing",
    b"\x00\x01\x02",
    b"<html><body>502 Bad Gateway</body></html>",
]
COMPLETION = json.dumps(
    {"object": "chat.completion", "choices": [{"message": {"content": "Done."}}]}
).encode()
CONTENT_TYPES = [
    "text/event-stream",
    "text/event-stream; charset=utf-8",
    "TEXT/EVENT-STREAM",
    "application/json",
    "text/html",
    "application/octet-stream",
    None,
]
STATUSES = ["200 OK"] * 6 + ["500 Internal Server Error", "429 Too Many", "404 Not Found",
                             "101 Switching Protocols", "204 No Content", "302 Found"]  # fmt: skip
INTERIMS = [None] * 4 + ["100 Continue", "103 Early Hints"]


@st.composite
def _sse_body(draw: st.DrawFn) -> bytes:
    lines: list[bytes] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["good"] * 5 + ["hostile"] * 3 + ["deep", "random", "long"]))
        if kind == "good":
            lines.append(draw(st.sampled_from(GOOD_LINES)))
        elif kind == "hostile":
            lines.append(draw(st.sampled_from(HOSTILE_LINES)))
        elif kind == "deep":
            depth = draw(st.integers(10, 40_000))
            lines.append(b'data: {"choices": [{"logprobs": ' + b"[" * depth + b"]" * depth + b"}]}")
        elif kind == "random":
            lines.append(draw(st.binary(max_size=80)))
        else:  # past the client's 1 MiB event cap, or just under it
            lines.append(b"data: " + b"x" * draw(st.sampled_from([1000, 1024 * 1024 + 10])))
        if draw(st.integers(0, 2)) == 0:
            lines.append(b"")
    if draw(st.booleans()):
        lines += [b"data: [DONE]", b""]
    end = draw(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]))
    return end.join(lines) + (end if draw(st.booleans()) else b"")


@st.composite
def _benign_answer(draw: st.DrawFn) -> Answer:
    """A whole, valid stream in any of the ways HTTP and SSE allow: the run must judge it."""
    pieces = [_delta(role="assistant", reasoning_content="Let me look.")]
    pieces += [_delta(content=p) for p in draw(st.sampled_from([["All done."], [GOOD_TURN]]))]
    pieces += [_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
               _event({"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 9}}),
               b"data: [DONE]"]  # fmt: skip
    lines: list[bytes] = []
    for piece in pieces:
        lines += [piece, b""] + ([b": keep-alive", b""] if draw(st.booleans()) else [])
    end = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    body = end.join(lines)
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    fields = ["content-type: text/event-stream"]
    fields += {"length": [f"content-length: {len(body)}"], "chunked": ["transfer-encoding: chunked",
               "connection: close"], "close": ["connection: close"]}[framing]  # fmt: skip
    interim = draw(st.sampled_from(INTERIMS))
    head = f"HTTP/1.1 {interim}\r\n\r\n".encode() if interim else b""
    head += ("\r\n".join(["HTTP/1.1 200 OK", *fields]) + "\r\n\r\n").encode()
    return Answer(head, body, framing, "clean")


@st.composite
def _answer(draw: st.DrawFn, *, chat: bool) -> Answer:
    status = draw(st.sampled_from(STATUSES))
    interim = draw(st.sampled_from(INTERIMS))
    content_type = draw(st.sampled_from(CONTENT_TYPES))
    if chat:
        body = draw(
            st.one_of(
                _sse_body(),
                st.just(COMPLETION),
                st.just(b"<html>hi</html>"),
                st.binary(max_size=200),
            )
        )
    else:
        body = draw(st.sampled_from([
            b'{"object": "list", "data": [{"id": "hostile"}]}',
            b'{"object": "list", "data": [{"id": "hostile"}]}',
            b'{"data": ["x"]}', b'{"data": [{"id": 7}]}', b'{"data": []}', b"[]",
            b"<html>models</html>", b"", b"[" * 3000 + b"]" * 3000,
        ]))  # fmt: skip
    encoding = draw(st.sampled_from([None] * 5 + ["gzip", "identity", "br"]))
    if encoding == "gzip":
        body = gzip.compress(body)
    fields = [f"content-type: {content_type}"] if content_type else []
    fields += [f"content-encoding: {encoding}"] if encoding else []
    framing = draw(st.sampled_from(["length", "length", "chunked", "close", "short", "long"]))
    if framing in ("length", "short", "long"):
        shift = {"length": 0, "short": -1, "long": 7}[framing]
        fields.append(f"content-length: {max(0, len(body) + shift)}")
    elif framing == "chunked":
        fields.append("transfer-encoding: chunked")
    if framing != "length":
        fields.append("connection: close")
    head = b""
    if interim:
        head += f"HTTP/1.1 {interim}\r\n\r\n".encode()
    head += ("\r\n".join([f"HTTP/1.1 {status}", *fields]) + "\r\n\r\n").encode()
    ending = draw(st.sampled_from(["clean"] * 8 + ["reset", "stall"])) if chat else "clean"
    return Answer(head, body, framing, ending)


@st.composite
def server_scripts(draw: st.DrawFn) -> ServerScript:
    good_models = draw(st.integers(0, 4)) > 0  # most runs get past discovery
    models = (
        Answer(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 29\r\n\r\n",
            b'{"data": [{"id": "hostile"}]}',
            "length",
            "clean",
        )
        if good_models
        else draw(_answer(chat=False))
    )
    answers = st.one_of(_benign_answer(), _answer(chat=True))
    chats = tuple(draw(st.lists(answers, min_size=1, max_size=3)))
    return ServerScript(models, chats)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(STALL_S)
        with contextlib.suppress(OSError):
            while True:  # keep-alive: one request after another
                request = _read_request(sock)
                if request is None:
                    return
                path, _ = request
                if path.endswith("/v1/models"):
                    answer = self.server.script.models
                else:
                    n = self.server.chats_answered
                    self.server.chats_answered += 1
                    answer = self.server.script.chats[n % len(self.server.script.chats)]
                if not _send(sock, answer, self.server.stopping) or answer.framing != "length":
                    return


def _read_request(sock: socket.socket) -> tuple[str, bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length")),
        0,
    )
    while len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            return None
        body += piece
    return lines[0].split(" ")[1], body


def _send(sock: socket.socket, answer: Answer, stopping: threading.Event) -> bool:
    """Write the answer; False when the connection must not be reused."""
    body = answer.body
    if answer.framing == "chunked":
        half = len(body) // 2
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:half], body[half:]) if p)
        body += b"0\r\n\r\n"
    sock.sendall(answer.head)
    if answer.ending == "clean":
        sock.sendall(body)
        return True
    sock.sendall(body[: len(body) // 2])
    if answer.ending == "reset":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False
    stopping.wait(STALL_S)  # a stall: the run's own limits must end the turn
    return False


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: ServerScript) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.chats_answered = 0
        self.stopping = threading.Event()


@contextlib.contextmanager
def serving(script: ServerScript) -> Iterator[str]:
    """The script served on 127.0.0.1 for the block; yields the base URL."""
    server = _Server(script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.stopping.set()  # wakes stalled answers
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        time.sleep(0)  # let daemon handlers see the closed sockets
