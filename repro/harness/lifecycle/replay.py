"""The divergence oracle's replay: each judged turn's request again, alone, and its verdict.

After the load, sessions are replayed in a seeded random order, every turn of each, one
request at a time per reference engine: the run's own engine (default), the engines given
with --reference-url, or --reference-engines more launched like the run's. Each request is
rebuilt from the scenario (scripted history: a pure function of the spec) and must hash to
what the load sent, so the reference answers the very same bytes.

One stream at a time is slow (a batch of 80 decodes about as fast as one), so
`--replay-sample` bounds it: all, N sessions, or auto (sessions are taken while, at the pace
so far, they would end within twice the load's wall time). Sampling whole sessions keeps
both the session and the turn rate unbiased; the summary says what was sampled.
"""

from __future__ import annotations

import contextlib
import random
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import orjson

from repro.checkers.divergence import Answer, compare, scored_tokens
from repro.errors import ReproError
from repro.harness.load.client import ChatClient
from repro.harness.load.clock import RunClock
from repro.harness.load.counts import ReplayCounts
from repro.harness.load.loaded_log import LoadedTurn, read_loaded, server_calls_json
from repro.harness.load.request_body import body_sha256, chat_body
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import Watchdog, running_watchdog
from repro.records.replayed import ReplayedTurn, ReplayWriter
from repro.records.turn import TurnOutcome, TurnRecord
from repro.scenarios import Scenario
from repro.scenarios.scripted import ScriptedHistory
from repro.spec import RunSpec

if TYPE_CHECKING:
    from repro.harness.lifecycle.progress import Progress

AUTO_BUDGET_LOAD_TIMES = 2.0  # --replay-sample auto: take sessions while under 2x the load


class Replay:
    """Replays a finished load's turns and keeps every verdict (also on disk, as it goes)."""

    def __init__(
        self,
        spec: RunSpec,
        scenario: Scenario,
        model: str,
        run_dir: Path,
        read_records: Callable[[], Sequence[TurnRecord]],
    ) -> None:
        self.spec = spec
        self.scenario = scenario
        self.tools = scenario.tools()
        self.model = model
        self.run_dir = run_dir
        self.read_records = read_records  # the load's turns, read back once it has ended
        self.counts = ReplayCounts()
        self.turns: dict[tuple[int, int], ReplayedTurn] = {}
        self.reference = ""  # where the references came from, in words
        self.stopped = ""  # why sessions were left out, when some were
        self.wall_s = 0.0
        self.load_wall_s = 0.0
        self._queue: deque[int] = deque()
        self._turn_s = 0.0  # replay time of the turns done, for the auto budget's pace
        self._clock = RunClock()

    def plan(self, loaded: Sequence[LoadedTurn]) -> dict[int, list[LoadedTurn]]:
        """The sessions to replay, in replay order, each with its turns in request order."""
        by_session: dict[int, list[LoadedTurn]] = {}
        for turn in loaded:
            by_session.setdefault(turn.session_id, []).append(turn)
        order = sorted(by_session)
        random.Random(f"replay:{self.spec.seed}").shuffle(order)
        if self.spec.replay_sample.isdigit():
            order = order[: int(self.spec.replay_sample)]
        return {sid: sorted(by_session[sid], key=lambda t: (t.step, t.turn)) for sid in order}

    async def after_load(
        self, wedge: str | None, run_url: str, progress: Progress | None, load_wall_s: float
    ) -> None:
        """The replay, on the references the spec names, unless the load wedged the engine."""
        if wedge:
            self.stopped = "not replayed: the engine wedged during the load"  # it would hang too
            return
        if progress is not None:
            progress.replay = self.counts
        async with references(self.spec, run_url, self.run_dir / "logs") as (urls, what):
            if progress is not None:
                progress.status(
                    f"judging by divergence: replaying turns one at a time on {what} "
                    f"(--replay-sample {self.spec.replay_sample})"
                )
            await self.run(urls, what, load_wall_s)

    async def run(self, urls: Sequence[str], reference: str, load_wall_s: float) -> None:
        """Replay on `urls` (one request at a time each) until done, the budget, or a cancel."""
        self.reference, self.load_wall_s = reference, load_wall_s
        sessions = self.plan(list(read_loaded(self.run_dir)))
        self._queue.extend(sessions)
        counts = self.counts
        counts.sessions_planned = len(sessions)
        counts.turns_planned = sum(len(t) for t in sessions.values())
        counts.started_at_s = time.monotonic()
        if self.spec.replay_sample == "auto":
            counts.budget_s = AUTO_BUDGET_LOAD_TIMES * load_wall_s
        writer = ReplayWriter(self.run_dir)
        records = {(r.session_id, r.turn): r for r in self.read_records()}
        tls = ssl.create_default_context()
        try:
            # The watchdog enforces each request's deadline and idle limit, in repro's awake time.
            async with (
                running_watchdog(self._clock) as watchdog,
                anyio.create_task_group() as workers,
            ):
                for url in urls:
                    workers.start_soon(self._worker, url, sessions, records, writer, watchdog, tls)
        finally:
            writer.close()
            self.wall_s = time.monotonic() - counts.started_at_s
            if self._queue and not self.stopped:
                self.stopped = "interrupted"

    async def _worker(
        self,
        url: str,
        sessions: dict[int, list[LoadedTurn]],
        records: dict[tuple[int, int], TurnRecord],
        writer: ReplayWriter,
        watchdog: Watchdog,
        tls: ssl.SSLContext,
    ) -> None:
        client = ChatClient(url, watchdog, self.spec.stall_after_s * 2, tls=tls)
        try:
            while self._queue:
                if not self._fits(len(sessions[self._queue[0]])):
                    budget = self.counts.budget_s
                    self.stopped = f"the auto budget ({budget:.0f} s, twice the load) ran out"
                    return
                session_id = self._queue.popleft()
                await self._session(client, url, sessions[session_id], records, writer)
                self.counts.sessions_done += 1
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    def _fits(self, turns: int) -> bool:
        """Auto: would a session of `turns` end within the budget, at the pace so far?

        The first session is always taken; then sessions are taken in order until one would
        overrun (never skipped for a shorter one, which would bias the sample).
        """
        counts = self.counts
        if counts.budget_s is None or not counts.turns_done:
            return True
        elapsed_s = time.monotonic() - counts.started_at_s
        pace_s = self._turn_s / counts.turns_done
        return elapsed_s + pace_s * turns <= counts.budget_s

    async def _session(
        self,
        client: ChatClient,
        url: str,
        turns: list[LoadedTurn],
        records: dict[tuple[int, int], TurnRecord],
        writer: ReplayWriter,
    ) -> None:
        spec = self.spec
        history = ScriptedHistory(
            self.scenario, turns[0].session_id, spec.seed, spec.context_max_tokens, spec.thinking
        )
        for loaded in turns:
            while history.step < loaded.step:
                if not history.advance():
                    self._refuse(
                        f"Cannot rebuild session {loaded.session_id}: its plan ends before "
                        f"step {loaded.step}, which the load sent; the replay cannot vouch for it."
                    )
            request = chat_body(spec, self.model, self.tools, history.messages)
            body = orjson.dumps(request)
            if body_sha256(body) != loaded.body_sha256:
                self._refuse(
                    f"The rebuilt request for session {loaded.session_id} turn {loaded.turn} "
                    f"differs from the one the load sent (sha256 {body_sha256(body)[:12]} vs "
                    f"{loaded.body_sha256[:12]}); the replay cannot vouch for it."
                )
            await self._turn(client, url, loaded, records, writer, request, body)

    def _refuse(self, message: str) -> NoReturn:
        """Stop the replay: the reference would not answer the request the load sent."""
        self.stopped = message
        raise ReproError(message)

    async def _turn(
        self,
        client: ChatClient,
        url: str,
        loaded: LoadedTurn,
        records: dict[tuple[int, int], TurnRecord],
        writer: ReplayWriter,
        request: dict[str, Any],
        body: bytes,
    ) -> None:
        progress = StreamProgress(scheduled_at_s=self._clock.now())
        await client.stream_chat(body, progress, deadline_s=self.spec.turn_timeout_s)
        replay_s = progress.ended_at_s - progress.scheduled_at_s
        key = (loaded.session_id, loaded.turn)
        if progress.outcome is not TurnOutcome.OK:
            turn = ReplayedTurn(*key, None, f"{progress.outcome}: {progress.error}", url, replay_s)
            self.counts.errors += 1
        else:
            record = records[key]
            mine = Answer(record.reasoning, record.content, loaded.tool_calls, loaded.tokens)
            theirs = Answer(
                progress.reasoning_text(),
                progress.content_text(),
                server_calls_json(progress),
                scored_tokens(progress.logprobs),
            )
            verdict = compare(mine, theirs, self.spec.numerical_margin_nats)
            turn = ReplayedTurn(*key, verdict, "", url, replay_s)
            kind = str(verdict.kind)
            self.counts.by_kind[kind] = self.counts.by_kind.get(kind, 0) + 1
            if verdict.counts:
                writer.add_failure(turn, mine, theirs, request)
        writer.add(turn)
        self.turns[key] = turn
        self.counts.turns_done += 1
        self._turn_s += replay_s

    def info(self) -> dict[str, Any]:
        """How the replay went, for summary.json (the verdicts themselves are per turn)."""
        counts = self.counts
        return {
            "reference": self.reference,
            "sample": self.spec.replay_sample,
            "sessions_planned": counts.sessions_planned,
            "sessions_replayed": counts.sessions_done,
            "budget_s": counts.budget_s,
            "stopped": self.stopped,
            "wall_s": round(self.wall_s, 1),
            "load_wall_s": round(self.load_wall_s, 1),
            "numerical_margin_nats": self.spec.numerical_margin_nats,
            "top_logprobs": self.spec.top_logprobs,
        }


@contextlib.asynccontextmanager
async def references(
    spec: RunSpec, run_url: str, logs_dir: Path
) -> AsyncIterator[tuple[list[str], str]]:
    """The engines the replay sends to, and how to say where they came from."""
    if spec.reference_urls:
        yield list(spec.reference_urls), f"{len(spec.reference_urls)} given engine(s)"
        return
    if not spec.reference_engines:
        yield [run_url], "the run's engine, after the load"
        return
    urls: list[str] = []
    done = anyio.Event()
    async with anyio.create_task_group() as group:
        for i in range(spec.reference_engines):  # started together: each takes seconds
            group.start_soon(_hold_engine, spec, logs_dir / f"reference-{i}", urls, done)
        while len(urls) < spec.reference_engines:
            await anyio.sleep(0.1)  # a failed start cancels this wait with its error
        try:
            yield list(urls), f"{len(urls)} engine(s) launched like the run's"
        finally:
            done.set()


async def _hold_engine(spec: RunSpec, logs_dir: Path, urls: list[str], done: anyio.Event) -> None:
    """Launch one copy of the run's engine (fresh ports) and keep it until `done`."""
    from repro.harness.launch.endpoint import (
        engine,
    )  # the launcher path every run takes; late: no cycle

    async with engine(spec.model_copy(update={"port": None}), logs_dir) as endpoint:
        urls.append(endpoint.base_url)
        await done.wait()
