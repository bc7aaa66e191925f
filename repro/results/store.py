"""The run folder, written as the run goes so that nothing measured is lost.

spec.json             everything needed to rerun (written first)
turns.parquet/        one row per turn, as a dataset folder: every few seconds the turns since
                      the last flush become one new part-NNNNNN.parquet (written aside, then
                      renamed); a part on disk is never rewritten, and the folder reads as one
                      table at any moment (pyarrow, pandas, repro.results.reading)
failures.jsonl        each corrupted turn's full request and raw output, flushed per line
protocol_errors.jsonl each event that broke the chat-completion protocol, as received
client_load.jsonl     every 5 s, repro's own event-loop lag and CPU share (per worker process)
logs/                 engine logs per role (the launcher writes them)
summary.json          written at the end, on every way out, with `ended_because`

Every write is retried; one that keeps failing (a full disk, an I/O error) raises StoreError,
a sentence that says what was kept. A small reserve file, freed just before summary.json is
written, keeps room for it when the disk fills up during the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from repro.errors import StoreError, UsageError
from repro.records import TurnRecord

FLUSH_EVERY_S = 5.0
TURNS = "turns.parquet"
FAILURES = "failures.jsonl"
PROTOCOL_ERRORS = "protocol_errors.jsonl"
CLIENT_LOAD = "client_load.jsonl"
WRITE_TRIES = 3
RETRY_AFTER_S = (0.5, 1.0)  # waits between the tries: a disk that frees up soon is waited for
RESERVE_BYTES = 64 * 1024  # room kept for summary.json; a summary is a few kB
RESERVE = ".summary-reserve"

_ARROW_TYPES = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "int | None": pa.int64(),
    "float | None": pa.float64(),
    "str | None": pa.string(),
    "list[int]": pa.list_(pa.int32()),
    "list[str]": pa.list_(pa.string()),
}
# Built from TurnRecord's annotations (strings under postponed evaluation), so the two cannot drift.
TURN_SCHEMA = pa.schema([(f.name, _ARROW_TYPES[f.type]) for f in dataclasses.fields(TurnRecord)])

T = TypeVar("T")


def check_output_file(option: str, path: Path, suffixes: tuple[str, ...] = ()) -> None:
    """Refuse a file path given to `option` (--junit, --html) that could not be written, or
    whose writing would destroy a run's own file, in one sentence, before any work is spent
    on what would go in it. `suffixes`: what a file this option wrote earlier ends with.
    A missing folder is created, as pytest's --junitxml does (CI writes to reports/...)."""
    _refuse_a_runs_own_file(option, path, suffixes)
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; give the path of the file to write.")
    if path.is_fifo() or path.is_socket():  # a write would wait for a reader, maybe forever
        raise UsageError(f"{option} {path} is a pipe or a socket; give the path of a file.")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {path}: {folder} is a file, not a folder.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create {folder}: {exc.strerror}.") from None
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable.")


RUN_FILES = ("spec.json", TURNS, "summary.json")  # a folder holding any of these holds a run
# Every file name a run writes at its top level (divergence.jsonl and loaded.jsonl: the replay).
_WRITTEN_BY_A_RUN = {*RUN_FILES, FAILURES, PROTOCOL_ERRORS, CLIENT_LOAD, "divergence.jsonl",
                     "loaded.jsonl"}  # fmt: skip


def _refuse_a_runs_own_file(option: str, path: Path, suffixes: tuple[str, ...]) -> None:
    try:
        real = path.resolve()  # a symlink writes where it points
    except (OSError, RuntimeError) as exc:  # Python 3.11 says a loop of links as RuntimeError
        reason = getattr(exc, "strerror", None) or "a loop of symbolic links"
        raise UsageError(f"{option} {path} cannot be used: {reason}.") from None
    in_a_run = any(any((d / name).exists() for name in RUN_FILES) for d in real.parents)
    measured = (
        real.name in _WRITTEN_BY_A_RUN
        or TURNS in real.parts[:-1]  # a part of the turns table
        or (in_a_run and real.exists() and real.suffix.lower() not in suffixes)
    )
    if measured:
        shown = path if real == path.absolute() else f"{path} (that is {real})"
        raise UsageError(f"{option} {shown} would write over a run's own file; name a new file.")


def create_run_folder(run_dir: Path, *, refuse: str) -> None:
    """Create the folder a run writes to, unless that would overwrite something (UsageError).

    `refuse`: "anything" for a run's own --out (it must be new or empty), "a run" for a
    folder others may share (a bisect wave's), "nothing" for a worker's (its parent made it).
    """
    try:
        info = run_dir.stat()
    except (FileNotFoundError, NotADirectoryError):
        info = None  # created below (or said below why it cannot be)
    except OSError as exc:
        raise UsageError(f"Cannot use the run folder {run_dir}: {exc.strerror}.") from None
    if info is not None and not stat.S_ISDIR(info.st_mode):
        what = "a file" if stat.S_ISREG(info.st_mode) else "a device, a pipe or a socket"
        raise UsageError(f"The run folder {run_dir} is {what}, not a folder; give a new --out.")
    in_the_way = info is not None and any(run_dir.iterdir())
    if refuse == "anything" and in_the_way:
        raise UsageError(
            f"{run_dir} already exists and is not empty; choose a new --out so no "
            "earlier run is overwritten."
        )
    if refuse == "a run" and any((run_dir / name).exists() for name in RUN_FILES):
        raise UsageError(
            f"{run_dir} already holds a run; choose a new --out so it is not overwritten."
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"Cannot create the run folder {run_dir}: {exc.strerror}.") from None


def _reason(exc: OSError) -> str:
    """The system's words for a failed write; pyarrow wraps them ("... Detail: [errno 28] ...")."""
    code = exc.errno or next((int(m) for m in re.findall(r"\[errno (\d+)\]", str(exc))), None)
    return os.strerror(code) if code else exc.strerror or str(exc)


def _write_failed(path: Path, exc: OSError, tries: int) -> StoreError:
    reason = _reason(exc)
    return StoreError(f"Cannot write {path}: {reason} ({tries} tries)", path=path, reason=reason)


def retried(path: Path, write: Callable[[], T]) -> T:
    """`write()`, tried WRITE_TRIES times (blocking waits between); StoreError if it never works."""
    for attempt in range(WRITE_TRIES):
        try:
            return write()
        except OSError as exc:
            if attempt == WRITE_TRIES - 1:
                raise _write_failed(path, exc, WRITE_TRIES) from None
            time.sleep(RETRY_AFTER_S[attempt])
    raise AssertionError("unreachable")


class JsonLines:
    """An append-only JSON Lines file: a line is on disk whole or not at all."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self.lines = 0
        self._fd: int | None = None
        if create:
            self._open()

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def _write(self, line: bytes) -> None:
        fd = self._open()
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.ftruncate(fd, start)  # no half line for a reader to trip on; the retry rewrites it
            raise

    def append(self, item: dict[str, Any]) -> None:
        self.append_raw(orjson.dumps(item))

    def append_raw(self, line: bytes) -> None:
        """One line already in JSON (a worker process's, relayed), without its newline."""
        retried(self.path, lambda: self._write(line + b"\n"))
        self.lines += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class RelayedLines:
    """JsonLines' interface in a worker process: each line goes to the process that owns the
    run folder's files (harness.load.workers), which appends it; parts alone are the worker's."""

    def __init__(self, name: str, relay: Callable[[str, bytes], None]) -> None:
        self.name, self.relay, self.lines = name, relay, 0

    def append(self, item: dict[str, Any]) -> None:
        self.relay(self.name, orjson.dumps(item))
        self.lines += 1

    def close(self) -> None:
        pass


class RunStore:
    """Appends turns and failures to one run folder; the folder must be new or empty.

    In a worker process (`worker` = its index, `relay` = the way to its parent), it writes
    its own parts, named part-wNN-…, into the shared turns.parquet/, and relays every JSON
    line to the parent, the one writer of the run folder's other files.
    """

    def __init__(
        self,
        run_dir: Path,
        *,
        worker: int | None = None,
        relay: Callable[[str, bytes], None] | None = None,
    ) -> None:
        create_run_folder(run_dir, refuse="a run" if worker is None else "nothing")
        self.run_dir = run_dir
        self.turns_dir = run_dir / TURNS
        retried(self.turns_dir, lambda: self.turns_dir.mkdir(exist_ok=True))
        self.rows_written = 0
        self.rows_lost = 0
        self.write_error: StoreError | None = None
        self._parts = 0
        self._worker = worker
        self._part_prefix = "" if worker is None else f"w{worker:02d}-"
        self._pending: list[TurnRecord] = []
        # Load now what the first part's write needs: pyarrow imports pandas on its first array
        # (about 0.3 s, mostly under the GIL), which would otherwise happen in the writer thread
        # at the first flush, seconds into the load, and after the load's gc.freeze().
        pa.Table.from_pylist([], schema=TURN_SCHEMA)
        self._failures: JsonLines | RelayedLines
        self._protocol_errors: JsonLines | RelayedLines
        self._client_load: JsonLines | RelayedLines
        if relay is not None:
            self._failures = RelayedLines(FAILURES, relay)
            self._protocol_errors = RelayedLines(PROTOCOL_ERRORS, relay)
            self._client_load = RelayedLines(CLIENT_LOAD, relay)
            return
        self._failures = retried(run_dir / FAILURES, lambda: JsonLines(self.failures_path))
        self._protocol_errors = JsonLines(run_dir / PROTOCOL_ERRORS, create=False)
        self._client_load = JsonLines(run_dir / CLIENT_LOAD, create=False)
        self._reserve()

    @property
    def failures_path(self) -> Path:
        return self.run_dir / FAILURES

    def append_relayed(self, name: str, line: bytes) -> None:
        """A JSON line a worker process relayed, appended to the named file of this folder."""
        files = {
            FAILURES: self._failures,
            PROTOCOL_ERRORS: self._protocol_errors,
            CLIENT_LOAD: self._client_load,
        }
        target = files[name]
        assert isinstance(target, JsonLines)
        target.append_raw(line)

    @property
    def logs_dir(self) -> Path:
        return self.run_dir / "logs"

    @staticmethod
    def write_json(path: Path, data: Any) -> None:
        """Indented JSON, replaced atomically (a reader never sees half a file); StoreError if
        it cannot be written after WRITE_TRIES tries."""
        tmp = path.with_suffix(path.suffix + ".tmp")

        def write() -> None:
            try:
                tmp.write_bytes(
                    orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
                )
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    tmp.unlink()  # a partial file takes the space the retry needs
                raise

        retried(path, write)

    def write_spec(self, spec: dict[str, Any]) -> None:
        self.write_json(self.run_dir / "spec.json", spec)

    def write_summary(self, summary: dict[str, Any]) -> None:
        self.release_reserve()
        self.write_json(self.run_dir / "summary.json", summary)

    def append(self, record: TurnRecord) -> None:
        self._pending.append(record)

    def add_failure(
        self,
        record: TurnRecord,
        request: dict[str, Any],
        defects: list[dict[str, Any]],
        tool_calls: list[dict[str, str]],
        evidence: dict[str, Any] | None = None,
    ) -> None:
        """One line per corrupted turn: the full request, the raw output and every defect
        (`tool_calls` as the record holds them in JSON, given as objects: never parsed back);
        `evidence`, from the consistency checks: the whole answer (every choice, usage) and,
        for the stream oracle, its twin's, side by side."""
        line = {
            "session_id": record.session_id,
            "turn": record.turn,
            "shape": record.shape,
            "defects": defects,
            "output": {
                "content": record.content,
                "reasoning": record.reasoning,
                "tool_calls": tool_calls,
                "finish_reason": record.finish_reason,
            },
            "request": request,
        }
        if evidence:
            line |= evidence
        self._failures.append(line)

    def add_client_load(self, window: dict[str, Any]) -> None:
        """One window of the client's own loop lag and CPU share (harness.load.loop_probe)."""
        self._client_load.append(
            window if self._worker is None else {**window, "worker": self._worker}
        )

    def add_protocol_error(
        self, session_id: int, turn: int, error: str, event: str, event_chars: int, kind: str = ""
    ) -> None:
        """The event that broke the protocol, as received (its first chars when it is long),
        and its kind (harness.load.sse_connection: bad_json, schema, too_deep, not_event_stream,
        compressed, event_too_large, ...)."""
        self._protocol_errors.append(
            {
                "session_id": session_id,
                "turn": turn,
                "kind": kind or "protocol",
                "error": error,
                "event": event,
                "event_chars": event_chars,
                "truncated": len(event) < event_chars,
            }
        )

    async def flush(self) -> None:
        """The turns since the last flush become one new part, written in a worker thread so
        the event loop keeps streaming; raises StoreError when the write keeps failing."""
        rows = self._take_pending()
        if rows:
            # Shielded: the load may end (its task group cancelled) just as this wakes, and
            # a cancelled start would drop the rows already taken. A write is bounded.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._write_rows, rows)

    def close(self) -> StoreError | None:
        """Write the last turns and close the files; the write error that stopped the run, if any."""
        rows = self._take_pending()
        if rows:
            with contextlib.suppress(StoreError):  # kept in self.write_error
                self._write_rows(rows)
        self._failures.close()
        self._protocol_errors.close()
        self._client_load.close()
        return self.write_error

    def _take_pending(self) -> list[TurnRecord]:
        rows, self._pending = self._pending, []
        if self.write_error is not None:  # the run is stopping on it: these cannot be saved
            self.rows_lost += len(rows)
            return []
        return rows

    def _write_rows(self, rows: list[TurnRecord]) -> None:
        path = self.turns_dir / f"part-{self._part_prefix}{self._parts:06d}.parquet"
        try:
            retried(path, lambda: self._write_part(rows, path))
        except StoreError as exc:
            self.rows_lost += len(rows)
            self.write_error = StoreError(
                f"{exc}; the run stopped there, and the {self.rows_written} turns written "
                f"before are kept in {self.run_dir}",
                path=exc.path,
                reason=exc.reason,
            )
            raise self.write_error from None
        self._parts += 1
        self.rows_written += len(rows)

    @staticmethod
    def _write_part(rows: list[TurnRecord], path: Path) -> None:
        # Written under a dot-name that dataset readers skip, then renamed: never half a part.
        tmp = path.with_name(f".{path.name}.tmp")
        columns = {name: [getattr(r, name) for r in rows] for name in TURN_SCHEMA.names}
        try:
            pq.write_table(pa.Table.from_pydict(columns, schema=TURN_SCHEMA), tmp)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def _reserve(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # no room even now: nothing to keep
            fd = os.open(self.run_dir / RESERVE, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            finally:
                os.close(fd)

    def release_reserve(self) -> None:
        with contextlib.suppress(OSError):
            (self.run_dir / RESERVE).unlink()
