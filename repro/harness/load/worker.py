"""One client worker process of `repro run --workers N` (started by harness.load.workers, never by hand).

    python -m repro.harness.load.worker      its job: one JSON line on stdin

It runs its share of the sessions in its own event loop, writes its own turns.parquet parts,
and sends everything else to its parent as frames on the stdout it was started with (print
output goes to stderr instead). It stops when the parent says so (a wedge, Ctrl-C, another
worker's error) or when its stdin closes (the parent is gone). It runs in a session of its
own, so a terminal's Ctrl-C reaches only the parent, which decides.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from repro.errors import ReproError, StoreError
from repro.harness.load.clock import RunClock
from repro.harness.load.loadgen import LoadGenerator, Share
from repro.harness.load.watchdog import Watchdog
from repro.harness.load.workers import DONE, REPORT, REPORT_EVERY_S, frame, relay_to
from repro.results import RunStore
from repro.spec import RunSpec


class _Pipe:
    """The frames' way to the parent: blocking writes of whole frames (the parent reads all
    the time, so they never wait long), never interleaved with anything else."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except BrokenPipeError:
            pass  # the parent is gone; stdin's end stops this worker too


def _state(generator: LoadGenerator) -> dict[str, Any]:
    counts = generator.counts
    return {
        "counts": {name: getattr(counts, name) for name in counts.__dataclass_fields__},
        "latest_event_s": generator.watchdog.latest_event_s(),
        "open_requests": generator.watchdog.open_requests,
    }


async def _report_every(generator: LoadGenerator, pipe: _Pipe) -> None:
    while True:
        pipe.write(frame(REPORT, json.dumps(_state(generator)).encode()))
        await anyio.sleep(REPORT_EVERY_S)


async def _listen(generator: LoadGenerator, early: bytes) -> None:
    """The parent's word: a stop (with the wedge that caused it, if any), or EOF."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    reader.feed_data(early)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    line = await reader.readline()
    message = json.loads(line) if line.strip() else {}
    generator.stop(message.get("wedge"))


async def _work(job: dict[str, Any], early: bytes, pipe: _Pipe) -> None:
    spec = RunSpec.model_validate(job["spec"])
    clock = RunClock(job["t0"])
    # No wedge limit here: the parent judges a wedge over every worker at once.
    watchdog = Watchdog(clock)
    store = RunStore(Path(job["run_dir"]), worker=job["index"], relay=relay_to(pipe.write))
    share = Share(range(*job["ids"]), job["concurrency"])
    generator = LoadGenerator.for_endpoint(
        spec, job["base_url"], watchdog, store, job["model"], share,
        window_tokens=job.get("window_tokens"),
    )  # fmt: skip
    error: ReproError | None = None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_report_every, generator, pipe)
            group.start_soon(_listen, generator, early)
            await generator.run()
            group.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        matched, rest = group.split(ReproError)
        if matched is None or rest is not None:
            raise
        error = _first(matched)
    finally:
        write_error = store.close()
    error = error or write_error
    done = {
        **_state(generator),
        "pauses": watchdog.pauses,
        "paused_s": watchdog.paused_s,
        "client_load": generator.client_load().to_dict(),
        "rows_written": store.rows_written,
        "rows_lost": store.rows_lost,
        "store_error": str(error) if isinstance(error, StoreError) else None,
    }
    pipe.write(frame(DONE, json.dumps(done).encode()))
    if error is not None and not isinstance(error, StoreError):
        raise error


def _first(group: BaseExceptionGroup) -> ReproError:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first  # type: ignore[return-value]


def main() -> None:
    pipe = _Pipe(os.dup(1))
    os.dup2(2, 1)  # anything printed goes to stderr, never into the frames
    job, early = _first_line()
    anyio.run(_work, job, early, pipe, backend_options={"use_uvloop": True})


def _first_line() -> tuple[dict[str, Any], bytes]:
    """The job (stdin's first line), read unbuffered: what follows it is the listener's."""
    data = b""
    while b"\n" not in data:
        chunk = os.read(0, 65536)
        if not chunk:
            raise SystemExit("no job on stdin: this process is started by repro run --workers")
        data += chunk
    line, _, rest = data.partition(b"\n")
    return json.loads(line), rest


if __name__ == "__main__":
    main()
