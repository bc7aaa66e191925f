"""The recorder's process: the relay on a socket bound first (a taken port is one sentence),
the trace opened before it listens and closed after it stops, every turn that ended before
then written.

SIGTERM and Ctrl-C stop it as they stop the proxy: it stops accepting, gives answers still
streaming half a second, then cuts them (each recorded as far as it came) and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
import time

import uvloop

from repro.errors import UsageError
from repro.record.recorder import TraceRecorder
from repro.record.relay import Exchange, Relay, Upstream
from repro.record.spec import RecordSpec

# The embedded engine's way to bind a socket with a clear sentence when the port is taken.
from repro.sim.serving import serve as asgi
from repro.traces import Redaction, SessionGrouper, TraceWriter, TurnLines

GRACE_S = 0.5  # answers still streaming at a stop get this long to end


def say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"repro record: {line}", file=sys.stderr, flush=True)


def _public(url: str) -> str:
    """The URL without any user:password part (a header line is no place for secrets)."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}"


async def _relay(spec: RecordSpec, sock: object, recorder: TraceRecorder) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Exchange] = asyncio.Queue()
    relay = Relay(Upstream.of(spec.upstream), queue.put_nowait, say)
    server = await loop.create_server(relay.protocol, sock=sock, backlog=2048)  # type: ignore[arg-type]
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    async def write() -> None:
        while True:
            recorder.record(await queue.get())

    writing = loop.create_task(write())
    await stop.wait()
    server.close()
    deadline = loop.time() + GRACE_S
    while any(c.requests for c in relay.connections) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    for connection in list(relay.connections):
        if connection.transport is not None:
            connection.transport.close()  # its answer, cut, is recorded as far as it came
    await asyncio.sleep(0.05)  # the closed connections' last callbacks
    writing.cancel()
    while not queue.empty():
        recorder.record(queue.get_nowait())


def serve(spec: RecordSpec) -> int:
    """Relay and record until SIGTERM or Ctrl-C; the process exit code."""
    try:
        sock = asgi.bind(spec.host, spec.port)
    except asgi.PortInUse as exc:
        raise UsageError(f"repro record cannot listen: {exc}.") from None
    writer = TraceWriter(
        spec.out,
        {
            "recorded_by": "repro record",
            "upstream": _public(spec.upstream),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "redacted": len(spec.redact),
        },
    )
    # Session ids carry this recording's start and a random tag: appended recordings and
    # concatenated traces keep their sessions apart.
    prefix = f"{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(2)}-"
    lines = TurnLines(SessionGrouper(prefix), Redaction(spec.redact))
    recorder = TraceRecorder(lines, writer, say)
    rules = f" ({len(spec.redact)} redaction rules)" if spec.redact else ""
    say(
        f"http://{spec.host}:{spec.port} -> {spec.upstream}; chat turns to {spec.out}{rules};"
        " Ctrl-C stops it"
    )
    cpu_s = time.process_time()
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(_relay(spec, sock, recorder))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        writer.close()
        turns, sessions = lines.turns, lines.grouper.sessions
        say(
            f"{turns:,} turn{'' if turns == 1 else 's'} in {sessions:,} "
            f"session{'' if sessions == 1 else 's'} written to {spec.out}; "
            f"{time.process_time() - cpu_s:.1f} s of CPU"
        )
    return 0
