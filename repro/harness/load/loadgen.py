"""The load generator: N agent sessions in flight, every turn judged and recorded as it ends.

One anyio task per session, created only when a slot frees up, so memory follows the sessions
in flight, not the sessions asked for; the first `concurrency` start over the ramp-up. A
session that ends hands its client, connection open, to the next one to start. The
watchdog (harness.load.watchdog) ends the run with a wedge verdict when no session has received a
token for `stall_after_s` while requests are open, counting only time repro was running.
"""

from __future__ import annotations

import contextlib
import gc
import json
import random
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import anyio
import orjson

from repro.checkers.verdict import AssistantOutput, Defect, ToolCall, Verdict
from repro.harness.load.client import ChatClient
from repro.harness.load.counts import LiveCounts
from repro.harness.load.loaded_log import LoadedLog
from repro.harness.load.loop_probe import ClientLoad, LoopProbe
from repro.harness.load.request_body import PLAIN, chat_body, twin_of
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.turn_checks import (
    TurnConsistency,
    asked_for,
    judge_consistency,
    twin_wanted,
    validity_kept,
)
from repro.harness.load.watchdog import Watchdog
from repro.records.turn import TurnOutcome, TurnRecord
from repro.results import FLUSH_EVERY_S, RunStore
from repro.scenarios import Scenario, Session
from repro.scenarios.scripted import assistant_message
from repro.shapes import Shape
from repro.spec import RunSpec
from repro.toolformats.prose import prose_before_calls

MAX_ABORT_RETRIES = 3  # an aborted request is re-sent, as an agent framework would
ABORT_MAX_CHUNK = 40


Judge = Callable[[AssistantOutput, Sequence[dict]], Verdict]


@dataclass(frozen=True, slots=True)
class Share:
    """The sessions one load generator runs (ids, in start order) and how many at once."""

    session_ids: range
    concurrency: int

    @classmethod
    def whole(cls, spec: RunSpec, first_session_id: int = 0) -> Share:
        ids = range(first_session_id, first_session_id + spec.sessions)
        return cls(ids, spec.effective_concurrency())


class LoadGenerator:
    def __init__(
        self,
        spec: RunSpec,
        scenario: Scenario,
        new_client: Callable[[], ChatClient],
        watchdog: Watchdog,
        store: RunStore,
        judge: Judge,
        model: str,
        share: Share,
        loaded_log: LoadedLog | None = None,
        window_tokens: int | None = None,
    ) -> None:
        self.spec = spec
        self.scenario = scenario
        self.tools = scenario.tools()
        self.new_client = new_client
        self.watchdog = watchdog
        self.clock = watchdog.clock
        self.store = store
        self.judge = judge
        self.model = model
        self.share = share
        self.loaded_log = loaded_log  # what the divergence oracle's replay needs, per turn
        self.counts = LiveCounts(sessions_total=len(share.session_ids))
        self.probe = LoopProbe(self.clock, on_window=store.add_client_load)
        self._corrupted_sessions: set[int] = set()
        self._scope: anyio.CancelScope | None = None
        # Clients of sessions that ended, their connections still open, for the next sessions.
        self._idle_clients: list[ChatClient] = []
        self._idle_twins: list[ChatClient] = []  # the stream oracle's second connections
        self.mix = spec.request_mix()
        self.window_tokens = window_tokens  # the model's context window, if the server said
        # Requests open now, by shape; and as they were when the first one failed for want of
        # an engine (or when the load was stopped): what an engine that died was serving.
        self.in_flight: Counter[str] = Counter()
        self.in_flight_at_failure: dict[str, int] | None = None

    @classmethod
    def for_endpoint(
        cls,
        spec: RunSpec,
        base_url: str,
        watchdog: Watchdog,
        store: RunStore,
        model: str,
        share: Share,
        loaded_log: LoadedLog | None = None,
        window_tokens: int | None = None,
    ) -> LoadGenerator:
        """The load against one endpoint, every turn judged by the checkers, in the format
        the model writes (the profile's [run] tool_format)."""
        from functools import partial

        from repro.checkers import check_turn
        from repro.harness.load.client import client_factory
        from repro.scenarios import get_scenario

        new_client = client_factory(
            base_url,
            watchdog,
            idle_timeout_s=spec.stall_after_s * 2,
            max_output_tokens=spec.max_output_tokens,
        )
        scenario = get_scenario(spec.scenario)
        return cls(
            spec,
            scenario,
            new_client,
            watchdog,
            store,
            partial(check_turn, format=spec.tool_format or "dsml-v32"),
            model,
            share,
            loaded_log,
            window_tokens,
        )

    @property
    def wedge(self) -> str | None:
        return self.watchdog.wedge

    @property
    def pauses(self) -> int:
        return self.watchdog.pauses

    @property
    def paused_s(self) -> float:
        return self.watchdog.paused_s

    def client_load(self) -> ClientLoad:
        return self.probe.figures()

    async def run(self) -> None:
        """Run every session; returns early (self.wedge set) if the engine stops making progress;
        raises StoreError if the run folder cannot be written."""
        # The first verdict compiles the tools' schemas and loads the checkers: done here, not
        # inside the first turn, where it would hold the loop (and every timing) for a while.
        self.judge(AssistantOutput(finish_reason="stop"), self.tools)
        # What is alive now (modules, scenario, checkers) lives as long as the run: set aside
        # from the cyclic collector, whose full passes over it held the loop 100-150 ms.
        gc.collect()
        gc.freeze()
        try:
            await self._run_sessions()
        finally:
            gc.unfreeze()
            for client in [*self._idle_clients, *self._idle_twins]:
                await client.aclose()
            self._idle_clients.clear()
            self._idle_twins.clear()
        self.probe.end_window()

    async def _run_sessions(self) -> None:
        slots = anyio.Semaphore(self.share.concurrency)
        async with anyio.create_task_group() as outer:
            self._scope = outer.cancel_scope
            outer.start_soon(self._watch, outer.cancel_scope)
            outer.start_soon(self._flush_every, FLUSH_EVERY_S)
            outer.start_soon(self.probe.run)
            async with anyio.create_task_group() as sessions:
                for i, session_id in enumerate(self.share.session_ids):
                    await slots.acquire()  # released when the session ends
                    # Due now (or after its ramp-up delay): a late start is the client's lag.
                    due_s = self.clock.now() + self._start_delay(i)
                    sessions.start_soon(self._session, session_id, due_s, slots)
            outer.cancel_scope.cancel()

    def stop(self, wedge: str | None = None) -> None:
        """End the load now (from outside: another process decided); with `wedge`, the turns
        in flight are recorded as stalled by it, else as cancelled."""
        if wedge is not None and self.watchdog.wedge is None:
            self.watchdog.wedge = wedge
        if self._scope is not None:
            self._scope.cancel()

    def _start_delay(self, index: int) -> float:
        concurrency = self.share.concurrency
        return self.spec.ramp_up_s * index / concurrency if index < concurrency else 0.0

    async def _watch(self, scope: anyio.CancelScope) -> None:
        await self.watchdog.run()  # returns on a wedge
        scope.cancel()

    async def _flush_every(self, period_s: float) -> None:
        while True:
            await anyio.sleep(period_s)
            await self.store.flush()

    async def _session(self, session_id: int, due_s: float, slot: anyio.Semaphore) -> None:
        try:
            await anyio.sleep(max(due_s - self.clock.now(), 0.0))
            self.counts.sessions_active += 1
            try:
                await self._converse(session_id, due_s)
            finally:
                self.counts.sessions_active -= 1
                self.counts.sessions_done += 1
        finally:
            slot.release()

    async def _converse(self, session_id: int, due_s: float) -> None:
        # A session goes on with the connection a finished session left open, as a client's
        # pool would (every peer load generator reuses its connections). A connection per
        # one-turn session cost the kernel a third more per streamed token (bench/RESULTS.md,
        # "a connection per session"); why, is not known.
        async with self._pooled(self._idle_clients) as client:
            await self._turns(session_id, client, due_s)

    @contextlib.asynccontextmanager
    async def _pooled(self, idle: list[ChatClient]) -> AsyncIterator[ChatClient]:
        """A client from `idle` (or a new one), back to `idle` when the block ends well;
        closed, shielded from cancellation, when it does not (its stream state is unknown)."""
        client = idle.pop() if idle else self.new_client()
        ended = False
        try:
            yield client
            ended = True
        finally:
            if ended:
                idle.append(client)
            else:
                with anyio.CancelScope(shield=True):
                    await client.aclose()

    async def _turns(self, session_id: int, client: ChatClient, due_s: float) -> None:
        """The session's turns, each due the moment the one before ended (an agent waits for
        nothing else): send lag is everything repro did, or waited for, in between."""
        spec = self.spec
        if spec.history == "scripted":  # the scenario's plan is the history, whatever comes back
            plan = self.scenario.scripted(
                session_id, spec.seed, spec.context_max_tokens, spec.thinking
            )
            session, messages = plan.session, plan.messages
        else:
            plan = None
            session = self.scenario.session(session_id, spec.seed, spec.context_max_tokens)
            messages = session.opening()
        aborts_in_a_row = 0
        for turn in range(self.spec.max_turns):
            tools = session.tools  # this request's (a recorded trace's change per session)
            shape = self.mix.draw(spec.seed, session_id, turn, tools) if self.mix else PLAIN
            request = self._request(messages, shape, tools)
            body = orjson.dumps(request)
            progress = StreamProgress(scheduled_at_s=due_s)
            abort_after = self._abort_point(session_id, turn, aborts_in_a_row)
            twin = None
            if abort_after is None and twin_wanted(spec, session_id, turn):
                twin = StreamProgress(scheduled_at_s=due_s)
                await self._send_twins(client, session_id, turn, body, progress, shape, twin)
            else:
                await self._send(client, session_id, turn, body, progress, abort_after, shape)
            verdict, defects = self._judge(session, progress, shape, tools)
            checks = self._consistency(progress, shape, twin, tools)
            defects += checks.defects
            record = self._record(
                session_id, turn, progress, len(body), verdict, defects, shape, checks.twin
            )
            if progress.outcome is TurnOutcome.PROTOCOL_ERROR:
                self.store.add_protocol_error(
                    session_id, turn, progress.error, progress.bad_event,
                    progress.bad_event_chars, progress.protocol_kind,
                )  # fmt: skip
            if record.corrupted:
                calls = _call_dicts(verdict.calls or progress.tool_calls())
                self.store.add_failure(
                    record, request, [_defect_dict(d) for d in defects], calls, checks.evidence
                )
            if self.loaded_log is not None and plan and progress.outcome is TurnOutcome.OK:
                self.loaded_log.add(
                    session_id, turn, plan.step, body, progress, flagged=record.corrupted
                )
            due_s = progress.ended_at_s
            if progress.outcome is TurnOutcome.ABORTED and aborts_in_a_row < MAX_ABORT_RETRIES:
                aborts_in_a_row += 1
                continue
            aborts_in_a_row = 0
            if progress.outcome is not TurnOutcome.OK:
                return
            if plan is not None:
                if not plan.advance():  # appends to `messages` (the same list)
                    return
                continue
            calls, ids = self._calls(session_id, turn, progress, verdict)
            messages.append(self._assistant_message(progress, calls, ids))
            prompt_tokens = progress.usage.prompt_tokens or 0
            if calls:
                messages += session.respond(
                    calls, ids, prompt_tokens, progress.usage.completion_tokens or 0
                )
            elif record.corrupted or _forbids_calls(shape, progress):
                # A shape that allowed no call (or cut it short) is not the agent's answer.
                messages.append(session.retry_notice())
            elif follow := session.follow_up():  # a recorded chat goes on with the user
                messages += follow
            else:
                return  # a clean reply without calls: the agent's final answer
            if session.finished(prompt_tokens):
                return

    def _request(self, messages: list[dict], shape: Shape, tools: list[dict]) -> dict:
        return chat_body(self.spec, self.model, tools, messages, shape)

    def _abort_point(self, session_id: int, turn: int, attempt: int) -> int | None:
        """Seeded: whether this request is cancelled mid-stream, and after how many chunks."""
        if self.spec.abort_rate <= 0:
            return None
        rng = random.Random(f"abort:{self.spec.seed}:{session_id}:{turn}:{attempt}")
        if rng.random() >= self.spec.abort_rate:
            return None
        return rng.randint(1, ABORT_MAX_CHUNK)

    async def _send(
        self,
        client: ChatClient,
        session_id: int,
        turn: int,
        body: bytes,
        progress: StreamProgress,
        abort_after: int | None,
        shape: Shape,
    ) -> None:
        label = shape.label
        self.counts.open_requests += 1
        self.in_flight[label] += 1
        try:
            await self._exchange(client, body, progress, abort_after, shape.streamed)
        except anyio.get_cancelled_exc_class():
            # The run is ending: keep what arrived, and say why it ended.
            if self.in_flight_at_failure is None:
                self.in_flight_at_failure = dict(self.in_flight)
            if self.wedge:
                progress.fail(TurnOutcome.STALLED, self.wedge)
            else:
                progress.fail(TurnOutcome.CANCELLED, "the run was interrupted")
            progress.ended_at_s = self.clock.now()
            self._record(session_id, turn, progress, len(body), Verdict(), [], shape)
            raise
        finally:
            if (
                progress.outcome is TurnOutcome.TRANSPORT_ERROR
                and self.in_flight_at_failure is None
            ):
                self.in_flight_at_failure = dict(self.in_flight)  # the engine went away
            self.in_flight[label] -= 1
            self.counts.open_requests -= 1

    async def _exchange(
        self,
        client: ChatClient,
        body: bytes,
        progress: StreamProgress,
        abort_after: int | None,
        streamed: bool,
    ) -> None:
        deadline_s = self.spec.turn_timeout_s
        if streamed:
            await client.stream_chat(
                body, progress, deadline_s=deadline_s, abort_after_chunks=abort_after
            )
        else:
            await client.complete_chat(body, progress, deadline_s=deadline_s)

    async def _send_twins(
        self,
        client: ChatClient,
        session_id: int,
        turn: int,
        body: bytes,
        progress: StreamProgress,
        shape: Shape,
        twin: StreamProgress,
    ) -> None:
        """The turn and its twin (the same request the other way), sent at the same time."""
        twin_body = orjson.dumps(twin_of(orjson.loads(body)))
        async with self._pooled(self._idle_twins) as other, anyio.create_task_group() as both:
            both.start_soon(self._send_twin, other, twin_body, twin, not shape.streamed)
            await self._send(client, session_id, turn, body, progress, None, shape)

    async def _send_twin(
        self, client: ChatClient, body: bytes, progress: StreamProgress, streamed: bool
    ) -> None:
        self.counts.open_requests += 1
        try:
            await self._exchange(client, body, progress, None, streamed)
        finally:
            self.counts.open_requests -= 1

    def _consistency(
        self, progress: StreamProgress, shape: Shape, twin: StreamProgress | None, tools: list[dict]
    ) -> TurnConsistency:
        asked = asked_for(shape, self.spec, self.window_tokens)
        twin_asked = None
        if twin is not None:
            twin_asked = asked_for(
                shape, self.spec, self.window_tokens, streamed=not shape.streamed
            )
        return judge_consistency(
            progress, asked, tools, twin, twin_asked, self.spec.numerical_margin_nats
        )

    def _judge(
        self, session: Session, progress: StreamProgress, shape: Shape, tools: list[dict]
    ) -> tuple[Verdict, list[Defect]]:
        if progress.outcome is not TurnOutcome.OK or not self.spec.judges_validity:
            return Verdict(), []
        output = AssistantOutput(
            content=progress.content_text(),
            reasoning=progress.reasoning_text(),
            tool_calls=progress.tool_calls(),
            finish_reason=progress.finish_reason,
        )
        verdict = self.judge(output, tools)
        calls = verdict.calls or output.tool_calls
        semantic = session.semantic_defects(calls, output.content)
        return verdict, validity_kept([*verdict.defects, *semantic], shape, output.finish_reason)

    def _calls(
        self, session_id: int, turn: int, progress: StreamProgress, verdict: Verdict
    ) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
        """Server-parsed calls with their ids, else the calls the checker read from the text."""
        if progress.calls:
            return progress.tool_calls(), progress.call_ids()
        calls = verdict.calls
        return calls, tuple(f"call_{session_id}_{turn}_{i}" for i in range(len(calls)))

    def _assistant_message(
        self, progress: StreamProgress, calls: Sequence[ToolCall], ids: Sequence[str]
    ) -> dict:
        content = progress.content_text()
        if calls and not progress.calls:
            # the calls travel as tool_calls instead
            content = prose_before_calls(content, self.spec.tool_format)
        return assistant_message(content, progress.reasoning_text(), calls, ids)

    def _record(
        self,
        session_id: int,
        turn: int,
        progress: StreamProgress,
        request_bytes: int,
        verdict: Verdict,
        defects: list[Defect],
        shape: Shape = PLAIN,
        twin: str = "",
    ) -> TurnRecord:
        usage = progress.usage
        calls = verdict.calls or progress.tool_calls()
        first = defects[0] if defects else None
        gaps = progress.gap_stats()
        gap_buckets, gap_bucket_counts = gaps.bucket_columns()
        record = TurnRecord(
            session_id=session_id,
            turn=turn,
            outcome=str(progress.outcome),
            http_status=progress.http_status,
            error=progress.error,
            scheduled_at_s=progress.scheduled_at_s,
            sent_at_s=progress.sent_at_s or progress.scheduled_at_s,
            first_token_at_s=progress.first_token_at_s,
            last_token_at_s=progress.last_token_at_s,
            ended_at_s=progress.ended_at_s,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            finish_reason=progress.finish_reason,
            content=progress.content_text(),
            reasoning=progress.reasoning_text(),
            tool_calls=json.dumps(_call_dicts(calls), ensure_ascii=False),
            n_calls=len(calls),
            chunks=progress.chunks,
            gap_count=gaps.count,
            gap_mean_s=gaps.mean_s,
            gap_max_s=gaps.max_s if gaps.count else None,
            gap_buckets=gap_buckets,
            gap_bucket_counts=gap_bucket_counts,
            request_bytes=request_bytes,
            corrupted=bool(defects),
            defect_kinds=sorted({d.kind for d in defects}),
            first_defect=f"{first.kind}@{first.field}:{first.offset}: {first.message}"
            if first
            else "",
            judged=self.spec.judges_every_turn,
            shape=shape.label,
            twin=twin,
        )
        self.store.append(record)
        self._count(record)
        return record

    def _count(self, record: TurnRecord) -> None:
        counts = self.counts
        if record.outcome == TurnOutcome.OK:
            counts.turns += 1
            counts.turns_corrupted += record.corrupted
            if record.corrupted and record.session_id not in self._corrupted_sessions:
                self._corrupted_sessions.add(record.session_id)
                counts.sessions_corrupted += 1
        elif record.outcome == TurnOutcome.ABORTED:
            counts.aborted += 1
        elif record.outcome != TurnOutcome.CANCELLED:
            counts.errors += 1
        counts.completion_tokens += record.completion_tokens or 0
        counts.max_prompt_tokens = max(counts.max_prompt_tokens, record.prompt_tokens or 0)


def _forbids_calls(shape: Shape, progress: StreamProgress) -> bool:
    """Whether the turn's shape kept it from calling (tool_choice none, a JSON answer) or cut
    it short (finish_reason length under a tight max_tokens, a stop string)."""
    if shape["tool_choice"] == "none" or shape["response_format"] != "text":
        return True
    cut = progress.finish_reason == "length" and shape["max_tokens"] == "tight"
    return cut or shape["stop"] == "strings"


def _call_dicts(calls: Sequence[ToolCall]) -> list[dict[str, str]]:
    return [{"name": c.name, "arguments": c.arguments} for c in calls]


def _defect_dict(defect: Defect) -> dict:
    return {
        "kind": defect.kind,
        "field": defect.field,
        "offset": defect.offset,
        "message": defect.message,
    }
