"""`repro proxy` in front of a hostile upstream, with clients that hang up: whatever either side
does, one line on the proxy's standard error at most and never a traceback; the client gets
a 502 with a JSON body if nothing was sent yet, else the stream closed where the upstream's
ended, with no byte added; one endless line flows through instead of wedging the stream."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from repro.proxy import read_injection_log
from repro.proxy.injector import MAX_EVENT_BYTES
from tests.e2e.hostile_server import FIRST
from tests.e2e.sim_server import free_port
from tests.e2e.test_hostile_servers import hostile

pytestmark = pytest.mark.e2e

CHAT = "/v1/chat/completions"
# Every stream a victim and every answer text a target: an inspected stream is corrupted.
EVERY_STREAM = ["--rule", "drop", "--rate", "1", "--min-streams", "1", "--target", "any"]
LONG_LINE_BYTES = 3 * MAX_EVENT_BYTES


@dataclass
class Proxied:
    url: str  # the proxy's
    upstream: str
    tmp_path: Path
    process: subprocess.Popen[bytes]

    def stderr(self) -> str:
        return (self.tmp_path / "proxy.err").read_text()

    def notes(self) -> list[str]:
        """The proxy's one-line notes (its first line says where it listens)."""
        return self.stderr().splitlines()[1:]


@contextmanager
def proxied(tmp_path: Path, *behaviours: str, rule: tuple[str, ...] = ()) -> Iterator[Proxied]:
    """The hostile server with these behaviours, `repro proxy` in front of it; on the way out,
    the proxy is stopped and its standard error must hold no traceback."""
    port = free_port()
    with hostile(tmp_path, *behaviours) as upstream, (tmp_path / "proxy.err").open("wb") as err:
        argv = [sys.executable, "-m", "repro", "proxy", "--upstream", upstream, "--port",
                str(port), "--log", str(tmp_path / "injections.jsonl"), *rule]  # fmt: skip
        process = subprocess.Popen(argv, stderr=err, start_new_session=True)
        proxy = Proxied(f"http://127.0.0.1:{port}", upstream, tmp_path, process)
        try:
            deadline = time.monotonic() + 20
            while True:  # the hostile server answers 404 to any other path
                assert process.poll() is None, proxy.stderr()
                try:
                    httpx.get(f"{proxy.url}/ready", timeout=1.0)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the proxy never listened"
                    time.sleep(0.05)
            yield proxy
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
    assert "Traceback" not in proxy.stderr() and "Exception" not in proxy.stderr(), proxy.stderr()


def stream(url: str) -> tuple[int, bytes, Exception | None]:
    """Status, body bytes as they came, and how the body ended (None: cleanly)."""
    received = bytearray()
    with httpx.stream("POST", url + CHAT, json={"stream": True}, timeout=20) as answer:
        try:
            for chunk in answer.iter_raw():
                received += chunk
        except httpx.HTTPError as exc:
            return answer.status_code, bytes(received), exc
    return answer.status_code, bytes(received), None


@pytest.mark.parametrize(
    ("behaviour", "what"),
    [
        ("reset-early", "reset the connection"),
        ("bad-http", "broke the HTTP protocol (illegal status line"),
    ],
)
def test_an_upstream_failing_before_its_answer_is_a_502_with_a_json_error(
    tmp_path: Path, behaviour: str, what: str
) -> None:
    with proxied(tmp_path, behaviour) as proxy:
        answer = httpx.post(proxy.url + CHAT, json={}, timeout=20)
        notes = proxy.notes()
    assert answer.status_code == 502 and answer.json()["error"]["type"] == "upstream_error"
    message = answer.json()["error"]["message"]
    said = message.removeprefix(f"repro proxy: the upstream {proxy.upstream} ").removesuffix(".")
    assert said.startswith(what) and said != message
    assert notes == [f"repro proxy: request 1 (POST {CHAT}): the upstream {said}; answered 502."]


def test_an_upstream_that_cannot_be_reached_is_a_502_with_a_json_error(tmp_path: Path) -> None:
    dead, port = free_port(), free_port()
    err = (tmp_path / "proxy.err").open("wb")
    argv = [sys.executable, "-m", "repro", "proxy", "--upstream", f"http://127.0.0.1:{dead}",
            "--port", str(port), "--log", str(tmp_path / "injections.jsonl")]  # fmt: skip
    process = subprocess.Popen(argv, stderr=err, start_new_session=True)
    try:
        for _ in range(200):
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2.0)
                break
            except httpx.TransportError:
                time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
        err.close()
    assert answer.status_code == 502 and answer.headers["content-type"] == "application/json"
    assert answer.json() == {"error": {
        "message": f"repro proxy: the upstream http://127.0.0.1:{dead} refused the connection.",
        "type": "upstream_error", "code": 502,
    }}  # fmt: skip
    stderr = (tmp_path / "proxy.err").read_text()
    assert stderr.splitlines()[1:] == [
        "repro proxy: request 0 (GET /v1/models): the upstream refused the connection;"
        " answered 502."
    ]


@pytest.mark.parametrize(
    ("behaviour", "what"),
    [
        ("reset", "reset the connection"),
        ("short-body", "ended its answer early (received 136 bytes, expected 1136)"),
    ],
)
def test_an_upstream_failing_mid_answer_closes_the_clients_stream_there(
    tmp_path: Path, behaviour: str, what: str
) -> None:
    with proxied(tmp_path, behaviour) as proxy:
        status, received, ended = stream(proxy.url)
        notes = proxy.notes()
    # What the upstream sent and nothing more; the client sees the stream was cut.
    assert status == 200 and received == FIRST
    assert isinstance(ended, httpx.RemoteProtocolError), ended
    assert notes == [
        f"repro proxy: request 1 (POST {CHAT}): the upstream {what} after {len(FIRST)} bytes"
        " of its answer; the client's stream was closed there."
    ]


def test_a_client_hanging_up_at_any_point_costs_no_line_and_no_traceback(
    tmp_path: Path,
) -> None:
    # /v1/models answers the hostile server's own readiness probe, then goes silent.
    with proxied(tmp_path, "stall", "good", "models-stall-after:1") as proxy:
        with httpx.stream("POST", proxy.url + CHAT, json={}, timeout=20) as answer:
            next(answer.iter_raw())  # mid-stream, the upstream still sending
        with pytest.raises(httpx.ReadTimeout):  # before the upstream's answer started
            httpx.get(proxy.url + "/v1/models", timeout=0.5)
        with socket.create_connection(("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))) as sock:
            sock.sendall(
                f"POST {CHAT} HTTP/1.1\r\nhost: x\r\ncontent-length: 99\r\n\r\n{{".encode()
            )
        status, received, ended = stream(proxy.url)  # the proxy still serves
        notes = proxy.notes()
    assert status == 200 and ended is None and received.endswith(b"data: [DONE]\n\n")
    assert notes == []


def test_an_endless_line_flows_through_while_the_upstream_is_still_sending_it(
    tmp_path: Path,
) -> None:
    with proxied(tmp_path, f"long-line-stall:{LONG_LINE_BYTES}", rule=tuple(EVERY_STREAM)) as proxy:
        received = bytearray()
        # Held by the proxy until the line ends, nothing past the first chunk would come.
        with httpx.stream("POST", proxy.url + CHAT, json={}, timeout=10) as answer:
            for chunk in answer.iter_raw():
                received += chunk
                if len(received) >= len(FIRST) + len(b"data: ") + LONG_LINE_BYTES:
                    break
        notes = proxy.notes()
    assert bytes(received) == FIRST + b"data: " + b"x" * LONG_LINE_BYTES
    assert notes == [
        f"repro proxy: request 1 (POST {CHAT}), stream 0: an event passed 1,048,576 bytes"
        " without ending; this stream is no longer inspected and passes through untouched."
    ]


def test_after_an_overlong_line_a_victim_stream_passes_byte_for_byte(tmp_path: Path) -> None:
    with proxied(tmp_path, f"long-line:{LONG_LINE_BYTES}", rule=tuple(EVERY_STREAM)) as proxy:
        direct = httpx.post(proxy.upstream + CHAT, json={}, timeout=20).content
        status, through, ended = stream(proxy.url)
    log = read_injection_log(tmp_path / "injections.jsonl")
    assert status == 200 and ended is None and through == direct
    assert len(through) > LONG_LINE_BYTES and through.endswith(b"data: [DONE]\n\n")
    assert log.summary is not None and log.summary["victims"] == 1
    assert log.injections == ()  # nothing injected after the proxy stopped inspecting


def test_stopping_the_proxy_with_a_stream_open_cuts_it_without_a_traceback(
    tmp_path: Path,
) -> None:
    with proxied(tmp_path, "stall") as proxy:
        with httpx.stream("POST", proxy.url + CHAT, json={}, timeout=20) as answer:
            chunks = answer.iter_raw()
            assert next(chunks) == FIRST
            os.killpg(proxy.process.pid, signal.SIGTERM)
            assert proxy.process.wait(timeout=10) == 0
            with pytest.raises(httpx.RemoteProtocolError):  # cut, not ended
                list(chunks)
        notes = proxy.notes()
    assert notes == ["ERROR:    Cancel 1 running task(s), timeout graceful shutdown exceeded"]
