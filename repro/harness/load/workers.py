"""--workers N: the sessions shared over N worker processes, one event loop each, one run folder.

Worker w runs sessions w, w+N, w+2N, ... (harness.load.worker) with its share of the concurrency,
and writes its own turns.parquet parts; everything else crosses a pipe as frames: every
0.25 s its counts and when its engine last moved, each JSON line for the run folder's other
files (this process appends them), and at the end its figures. This process owns the
decisions: the progress shown is the sum of the workers', the wedge is judged on all of them
at once (no token anywhere for --stall-after while requests are open, in time repro was
running), and a stop (wedge, Ctrl-C, an error, a worker lost) reaches every worker. Workers
run in sessions of their own, so a terminal's Ctrl-C reaches only this process; a worker that
loses its parent stops by itself: its stdin closes.
"""

from __future__ import annotations

import contextlib
import json
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from repro.errors import ReproError, StoreError
from repro.harness.load.clock import RunClock
from repro.harness.load.counts import LiveCounts
from repro.harness.load.loop_probe import ClientLoad, pooled
from repro.harness.load.watchdog import Watchdog

if TYPE_CHECKING:
    from repro.results import RunStore
    from repro.spec import RunSpec

REPORT, LINE, DONE = 1, 2, 3
_HEAD = struct.Struct("!IB")  # payload length, kind
REPORT_EVERY_S = 0.25
STOP_GRACE_S = 15.0  # for a worker to record its turns in flight and write its last part


def frame(kind: int, payload: bytes) -> bytes:
    return _HEAD.pack(len(payload), kind) + payload


def line_frame(name: str, line: bytes) -> bytes:
    encoded = name.encode()
    return frame(LINE, bytes([len(encoded)]) + encoded + line)


def shares(sessions: range, concurrency: int, workers: int) -> list[tuple[range, int]]:
    """Each worker's session ids (every N-th, so starts interleave) and sessions in flight."""
    return [
        (sessions[w::workers], concurrency // workers + (w < concurrency % workers))
        for w in range(workers)
    ]


@dataclass
class _Worker:
    index: int
    ids: range
    concurrency: int
    process: Process | None = None
    counts: LiveCounts = field(default_factory=LiveCounts)
    latest_event_s: float = 0.0
    open_requests: int = 0
    done: dict[str, Any] | None = None


class FleetWatch(Watchdog):
    """The wedge verdict over every worker: their reports are its events and open requests
    (each worker enforces its own requests' deadlines and idle limits)."""

    def __init__(self, clock: RunClock, stall_after_s: float, workers: list[_Worker]) -> None:
        super().__init__(clock, stall_after_s)
        self.workers = workers

    @property
    def open_requests(self) -> int:
        return sum(w.open_requests for w in self.workers)

    def latest_event_s(self) -> float:
        return max([super().latest_event_s(), *(w.latest_event_s for w in self.workers)])


class WorkerFleet:
    """The load of one run over `workers` processes; used as drive() uses a LoadGenerator."""

    def __init__(
        self,
        spec: RunSpec,
        base_url: str,
        store: RunStore,
        clock: RunClock,
        model: str,
        sessions: range,
        workers: int,
        window_tokens: int | None = None,
    ) -> None:
        self.spec = spec
        self.base_url = base_url
        self.store = store
        self.clock = clock
        self.model = model
        self.window_tokens = window_tokens
        self.workers = [
            _Worker(i, ids, concurrency)
            for i, (ids, concurrency) in enumerate(
                shares(sessions, spec.effective_concurrency(), workers)
            )
        ]
        self.counts = LiveCounts(sessions_total=len(sessions))
        self.watch = FleetWatch(clock, spec.stall_after_s, self.workers)
        for worker in self.workers:
            worker.latest_event_s = clock.now()

    @property
    def wedge(self) -> str | None:
        return self.watch.wedge

    # A pause (SIGSTOP of the group, a VM suspend) is seen by every worker: the longest is it.
    @property
    def pauses(self) -> int:
        return max([self.watch.pauses, *(int(done["pauses"]) for done in self._finished())])

    @property
    def paused_s(self) -> float:
        return max([self.watch.paused_s, *(float(d["paused_s"]) for d in self._finished())])

    def client_load(self) -> ClientLoad:
        loads = [ClientLoad.from_dict(done["client_load"]) for done in self._finished()]
        return pooled(loads) if loads else ClientLoad(0.0, 0.0, 0.0, 0.0, 0.0, 0)

    def _finished(self) -> list[dict[str, Any]]:
        """What each worker that finished reported last."""
        return [w.done for w in self.workers if w.done is not None]

    async def run(self) -> None:
        """Every worker to its end; returns early on a wedge (every worker stopped by it).
        Raises the first worker's StoreError, or ReproError when a worker is lost."""
        async with anyio.create_task_group() as group:
            judging = anyio.CancelScope()
            group.start_soon(self._judge, judging)
            async with anyio.create_task_group() as drivers:
                for worker in self.workers:
                    drivers.start_soon(self._drive, worker)
            judging.cancel()

    async def _judge(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self.watch.run()  # returns on a wedge
            await self._stop_all(self.watch.wedge)

    async def _drive(self, worker: _Worker) -> None:
        argv = [sys.executable, "-m", "repro.harness.load.worker"]
        job = {
            "spec": self.spec.model_dump(mode="json"),
            "base_url": self.base_url,
            "model": self.model,
            "window_tokens": self.window_tokens,
            "run_dir": str(self.store.run_dir),
            "index": worker.index,
            "ids": [worker.ids.start, worker.ids.stop, worker.ids.step],
            "concurrency": worker.concurrency,
            "t0": self.clock.t0,
        }
        # A session of its own: a terminal's Ctrl-C reaches this process, which stops the
        # workers in order; one arriving while a worker still imports would kill it mid-way.
        async with await anyio.open_process(argv, stderr=None, start_new_session=True) as process:
            worker.process = process
            assert process.stdin is not None and process.stdout is not None
            try:
                await process.stdin.send(json.dumps(job).encode() + b"\n")
                await self._read(worker, BufferedByteReceiveStream(process.stdout))
                code = await process.wait()
            except BaseException:
                # Interrupted, or a sibling failed: this worker still stops cleanly.
                with anyio.CancelScope(shield=True):
                    await self._stop_one(worker, None)
                raise
        if worker.done is None:
            raise ReproError(
                f"Client worker {worker.index} ended without finishing (exit {code}); the "
                f"turns it wrote are kept in {self.store.run_dir}."
            )
        if worker.done.get("store_error"):
            raise StoreError(worker.done["store_error"])

    async def _read(self, worker: _Worker, stream: BufferedByteReceiveStream) -> None:
        while True:
            try:
                head = await stream.receive_exactly(_HEAD.size)
            except (anyio.EndOfStream, anyio.IncompleteRead):
                return
            length, kind = _HEAD.unpack(head)
            payload = await stream.receive_exactly(length)
            if kind == LINE:
                size = payload[0]
                self.store.append_relayed(payload[1 : 1 + size].decode(), payload[1 + size :])
            elif kind == REPORT:
                self._report(worker, json.loads(payload))
            elif kind == DONE:
                done = json.loads(payload)
                self._report(worker, done)
                worker.done = done

    def _report(self, worker: _Worker, report: dict[str, Any]) -> None:
        worker.counts = LiveCounts(**report["counts"])
        worker.latest_event_s = report["latest_event_s"]
        worker.open_requests = report["open_requests"]
        total = self.counts
        for f in fields(LiveCounts):
            if f.name == "sessions_total":
                continue
            values = [getattr(w.counts, f.name) for w in self.workers]
            setattr(total, f.name, max(values) if f.name == "max_prompt_tokens" else sum(values))

    async def _stop_all(self, wedge: str | None) -> None:
        async with anyio.create_task_group() as group:
            for worker in self.workers:
                group.start_soon(self._stop_one, worker, wedge)

    async def _stop_one(self, worker: _Worker, wedge: str | None) -> None:
        """Ask a worker to stop (its turns in flight stalled by `wedge`, else cancelled); kill
        it if it has not ended within the grace period."""
        process = worker.process
        if process is None or process.returncode is not None or worker.done is not None:
            return
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            assert process.stdin is not None
            await process.stdin.send(json.dumps({"stop": True, "wedge": wedge}).encode() + b"\n")
        with anyio.move_on_after(STOP_GRACE_S):
            await process.wait()
            return
        process.kill()


def relay_to(write: Callable[[bytes], object]) -> Callable[[str, bytes], None]:
    """A worker's RunStore relay: each JSON line as a frame on its pipe to the parent."""
    return lambda name, line: write(line_frame(name, line))
