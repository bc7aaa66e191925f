"""The divergence oracle's replay: each judged turn's request again, and its verdict.

The replay runs where it costs least:

- alongside the load, on reference engines (--reference-url, or --reference-engines launched
  from the same profile, in the run's configuration or in a safe one, --reference-knob):
  each turn is replayed as soon as the load has it, at the load's own concurrency, so the
  replay ends about when the load does;
- after the load, on the run's own engine (nothing else in flight then), several requests
  at a time (`--replay-concurrency`): auto measures the pace of turns alone, takes as many
  at once as keep the replay within 1.5 times the load's time, and uses them only once the
  engine has answered turns at that concurrency as it answered them alone (shown
  batch-invariant there); otherwise one at a time.

Sessions are replayed whole, in a seeded random order, every turn of each; under auto a
session is taken only if, at the pace so far, it would end within the budget (the first
always; the order is never skipped ahead), so both rates stay unbiased over what was
replayed and the summary says which sessions were left out. Each request is rebuilt from the
scenario (scripted history: a pure function of the spec, the request shapes included) and
must hash to what the load sent, so the reference answers the very same bytes.
"""

from __future__ import annotations

import math
import random
import ssl
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import orjson

from repro.checkers import AssistantOutput, check_turn
from repro.checkers.consistency import check_answer
from repro.checkers.differential import canonical
from repro.checkers.divergence import Answer, compare, scored_tokens
from repro.errors import ReproError
from repro.harness.lifecycle.replay_probe import settle_concurrency
from repro.harness.lifecycle.replay_references import references
from repro.harness.load.client import ChatClient
from repro.harness.load.clock import RunClock
from repro.harness.load.counts import ReplayCounts
from repro.harness.load.loaded_log import LoadedTurn, read_loaded, server_calls_json
from repro.harness.load.request_body import body_sha256, chat_body
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.turn_checks import asked_for
from repro.harness.load.watchdog import Watchdog, running_watchdog
from repro.records.replayed import ReplayedTurn, ReplayWriter
from repro.records.turn import TurnOutcome, TurnRecord
from repro.scenarios import Plan, Scenario
from repro.spec import RunSpec

if TYPE_CHECKING:
    from repro.harness.lifecycle.progress import Progress

AUTO_BUDGET_LOAD_TIMES = 1.5  # --replay-sample auto: the replay after the load takes at most this
ALONE_HEADROOM = 1.5  # an alone replay at the end against the probe's early pace alone


@dataclass(frozen=True, slots=True)
class _Item:
    """One turn to replay, and the load's answer to judge it against (None: read it from
    turns.parquet, once the load has written it)."""

    loaded: LoadedTurn
    mine: Answer | None = None
    flagged: bool | None = None  # the validity oracle called the load's answer corrupt


class Replay:
    """Replays a load's turns and keeps every verdict (also on disk, as it goes)."""

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
        self.left_out: list[int] = []  # sessions the budget left out
        self.wall_s = 0.0
        self.load_wall_s = 0.0
        self.concurrency = 1  # requests at once per reference
        self.invariance = ""  # what the batch-invariance probe showed, in words
        # Alongside the load: on reference engines, while the load runs.
        self.alongside = bool(spec.reference_urls or spec.reference_engines)
        self._mix = spec.request_mix()  # each turn's shape, drawn as the load drew it
        self._sessions: deque[tuple[int, list[_Item]]] = deque()  # not yet admitted
        self._pending: deque[_Item] = deque()  # admitted, in request order per session
        self._sampled: set[int] | None = None  # alongside: the sessions to replay
        self._histories: dict[int, Plan] = {}
        self._records: dict[tuple[int, int], TurnRecord] | None = None
        self._more = anyio.Event()  # set when an item is offered or the load ends
        self._load_ended = False
        self._in_flight = 0
        self._busy: set[int] = set()  # sessions with a turn being replayed (one at a time)
        # Turns to replay alone at the end: divergences counted with others in flight on the
        # reference, and answers of a reference that may carry the load's own fault.
        self._alone: list[tuple[_Item, dict[str, Any]]] = []
        self.confirmed = 0  # turns replayed alone at the end whose divergence counts
        self.overturned = 0  # ... and whose divergence does not (the reference was wrong)
        self._started_s = 0.0
        self._clock = RunClock()
        self._writer: ReplayWriter | None = None
        # The pace the budget reckons with: turns done since (time, count) at the settled
        # concurrency; before any, the pace alone over the concurrency.
        self.pace_from: tuple[float, int] = (0.0, 0)
        self.alone_pace_s = 0.0

    # --- what is replayed ------------------------------------------------------------

    def plan(self, loaded: Sequence[LoadedTurn]) -> dict[int, list[LoadedTurn]]:
        """The sessions to replay, in replay order, each with its turns in request order."""
        by_session: dict[int, list[LoadedTurn]] = {}
        for turn in loaded:
            by_session.setdefault(turn.session_id, []).append(turn)
        order = self._order(by_session)
        return {sid: sorted(by_session[sid], key=lambda t: (t.step, t.turn)) for sid in order}

    def _order(self, session_ids: Sequence[int] | dict[int, Any]) -> list[int]:
        order = sorted(session_ids)
        random.Random(f"replay:{self.spec.seed}").shuffle(order)
        if self.spec.replay_sample.isdigit():
            order = order[: int(self.spec.replay_sample)]
        return order

    # --- alongside the load ------------------------------------------------------------

    async def run_alongside(
        self,
        run_url: str,
        session_ids: range,
        progress: Progress | None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The replay on reference engines while the load runs: started before it (the
        references launched), it replays each turn the load offers, and ends once the load
        has ended (`after_load`) and every offered turn is judged, or the budget ran out."""
        self._sampled = set(self._order(list(session_ids)))
        self.counts.sessions_planned = len(self._sampled)
        async with references(self.spec, run_url, self.run_dir / "logs") as (urls, what):
            self.reference = f"{what}, alongside the load"
            self.concurrency = self._alongside_concurrency(len(urls))
            if progress is not None:
                progress.replay = self.counts
            task_status.started()
            await self._serve(urls)

    def _alongside_concurrency(self, references: int) -> int:
        if self.spec.replay_concurrency != "auto":
            return int(self.spec.replay_concurrency)
        return max(1, math.ceil(self.spec.effective_concurrency() / references))

    def offer(self, loaded: LoadedTurn, reasoning: str, content: str, flagged: bool) -> None:
        """A turn the load has just judged ok (from the load's LoadedLog), alongside only."""
        if self._sampled is None or loaded.session_id not in self._sampled:
            return
        mine = Answer(reasoning, content, loaded.tool_calls, loaded.tokens)
        self._pending.append(_Item(loaded, mine, flagged=flagged))
        self.counts.turns_planned += 1
        self._more.set()

    # --- after the load ----------------------------------------------------------------

    async def after_load(
        self, wedge: str | None, run_url: str, progress: Progress | None, load_wall_s: float
    ) -> None:
        """After the load: alongside, let the replay finish what was offered; otherwise the
        replay on the run's own engine (unless the load wedged it)."""
        self.load_wall_s = load_wall_s
        if self.spec.replay_sample == "auto":
            self.counts.budget_s = AUTO_BUDGET_LOAD_TIMES * load_wall_s
        if self.alongside:
            self._load_ended = True
            self._more.set()
            return
        if wedge:
            self.stopped = "not replayed: the engine wedged during the load"  # it would hang too
            return
        if progress is not None:
            progress.replay = self.counts
        async with references(self.spec, run_url, self.run_dir / "logs") as (urls, what):
            if progress is not None:
                progress.status(
                    f"judging by divergence: replaying turns on {what} "
                    f"(--replay-sample {self.spec.replay_sample})"
                )
            await self.run(urls, what, load_wall_s)

    async def run(self, urls: Sequence[str], reference: str, load_wall_s: float) -> None:
        """Replay the finished load on `urls` until done, the budget, or a cancel."""
        self.reference, self.load_wall_s = reference, load_wall_s
        sessions = self.plan(list(read_loaded(self.run_dir)))
        for session_id, turns in sessions.items():
            self._sessions.append((session_id, [_Item(t) for t in turns]))
        self.counts.sessions_planned = len(sessions)
        self.counts.turns_planned = sum(len(t) for t in sessions.values())
        self._load_ended = True
        self._more.set()
        await self._serve(urls, after_load=True)

    # --- the workers -------------------------------------------------------------------

    async def _serve(self, urls: Sequence[str], after_load: bool = False) -> None:
        self.counts.started_at_s = self._started_s = time.monotonic()
        self.pace_from = (self._started_s, 0)
        self._writer = ReplayWriter(self.run_dir)
        tls = ssl.create_default_context()
        try:
            # The watchdog enforces each request's deadline and idle limit, in repro's awake time.
            async with running_watchdog(self._clock) as watchdog:
                if after_load:
                    await self._settle_concurrency(urls[0], watchdog, tls)
                async with anyio.create_task_group() as workers:
                    for url in urls:
                        for _ in range(self.concurrency):
                            workers.start_soon(self._worker, url, watchdog, tls)
                await self._confirm_alone(urls[0], watchdog, tls)
        finally:
            self._writer.close()
            self.wall_s = time.monotonic() - self._started_s
            unfinished = {i.loaded.session_id for i in self._pending}
            self.counts.sessions_done = len({k[0] for k in self.turns} - unfinished)
            left = self._pending or self._alone or (self._sessions and not self.left_out)
            if (left or not self._load_ended) and not self.stopped:
                self.stopped = "interrupted"

    async def _worker(self, url: str, watchdog: Watchdog, tls: ssl.SSLContext) -> None:
        client = ChatClient(url, watchdog, self.spec.stall_after_s * 2, tls=tls)
        try:
            while (item := await self._next()) is not None:
                await self.replay_one(client, url, item)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def _next(self) -> _Item | None:
        """The next turn to replay, of a session with none in flight (so a concurrency bug
        in the reference never takes another turn of the same session as its donor); None
        when there is none left to take."""
        while True:
            if (item := self._take_ready()) is not None:
                return item
            active = self._busy | {i.loaded.session_id for i in self._pending}
            if self._sessions and len(active) < self.concurrency and self._admit():
                continue
            if self._load_ended and not self._pending and (not self._sessions or self.stopped):
                return None  # all taken, or the next session would not fit (self.stopped)
            if self._more.is_set():  # one event for every waiting worker: each wakes
                self._more = anyio.Event()
            await self._more.wait()

    def _take_ready(self) -> _Item | None:
        for i, item in enumerate(self._pending):
            if item.loaded.session_id not in self._busy:
                del self._pending[i]
                return item
        return None

    def _admit(self) -> bool:
        """Queue the next session's turns if it would end within the budget."""
        items = self._sessions[0][1]
        if not self._fits(len(items)):
            budget = self.counts.budget_s
            self.left_out = [sid for sid, _ in self._sessions]
            self.stopped = (
                f"the auto budget ({budget:.0f} s, {AUTO_BUDGET_LOAD_TIMES:g} times the load) "
                f"ran out with {len(self.left_out)} session(s) left"
            )
            return False
        self._sessions.popleft()
        self._pending.extend(items)
        return True

    def _fits(self, turns: int) -> bool:
        """Auto: would `turns` more (after those queued) end within the budget, at the pace
        so far (turns done per second of replay, at its concurrency)? The first session is
        always taken; sessions are never skipped for a shorter one (that would bias it)."""
        counts = self.counts
        if counts.budget_s is None or not counts.turns_done:
            return True
        now = time.monotonic()
        since_s, done_then = self.pace_from
        since_s = since_s or counts.started_at_s
        done = counts.turns_done - done_then
        if done > 0:
            per_turn_s = (now - since_s) / done  # at the concurrency settled on
        elif self.alone_pace_s:
            per_turn_s = self.alone_pace_s / self.concurrency
        else:
            per_turn_s = (now - counts.started_at_s) / counts.turns_done
        waiting = len(self._pending) + self._in_flight
        # Each divergence counted at concurrency > 1 is replayed alone at the end, at about
        # the pace alone the probe measured (later turns are longer: some headroom).
        doubt = len(self._alone) / counts.turns_done * (counts.turns_done + waiting + turns)
        confirm_s = doubt * self.alone_pace_s * ALONE_HEADROOM
        elapsed_s = now - counts.started_at_s
        return elapsed_s + per_turn_s * (waiting + turns) + confirm_s <= counts.budget_s

    async def replay_one(self, client: ChatClient, url: str, item: _Item) -> None:
        loaded = item.loaded
        request, body, streamed = self.rebuild(loaded)  # synchronous: request order holds
        self._in_flight += 1
        self._busy.add(loaded.session_id)
        try:
            progress = await self.ask(client, body, streamed)
        finally:
            self._in_flight -= 1
            self._busy.discard(loaded.session_id)
            self._more.set()
        self.judge(item, url, progress, request)

    def rebuild(self, loaded: LoadedTurn) -> tuple[dict[str, Any], bytes, bool]:
        """The request the load sent for this turn, rebuilt from the scenario; refused if
        it does not hash to what the load sent."""
        spec = self.spec
        history = self._histories.get(loaded.session_id)
        if history is None or history.step > loaded.step:
            history = self.scenario.scripted(
                loaded.session_id, spec.seed, spec.context_max_tokens, spec.thinking
            )
            self._histories[loaded.session_id] = history
        while history.step < loaded.step:
            if not history.advance():
                self._refuse(
                    f"Cannot rebuild session {loaded.session_id}: its plan ends before "
                    f"step {loaded.step}, which the load sent; the replay cannot vouch for it."
                )
        tools = history.session.tools  # the session's own (a recorded trace's)
        shape = self._mix.draw(spec.seed, loaded.session_id, loaded.turn, tools)
        request = chat_body(spec, self.model, tools, history.messages, shape)
        body = orjson.dumps(request)
        if body_sha256(body) != loaded.body_sha256:
            self._refuse(
                f"The rebuilt request for session {loaded.session_id} turn {loaded.turn} "
                f"differs from the one the load sent (sha256 {body_sha256(body)[:12]} vs "
                f"{loaded.body_sha256[:12]}); the replay cannot vouch for it."
            )
        return request, body, shape.streamed

    async def ask(self, client: ChatClient, body: bytes, streamed: bool) -> StreamProgress:
        progress = StreamProgress(scheduled_at_s=self._clock.now())
        if streamed:
            await client.stream_chat(body, progress, deadline_s=self.spec.turn_timeout_s)
        else:
            await client.complete_chat(body, progress, deadline_s=self.spec.turn_timeout_s)
        return progress

    def _record(self, item: _Item) -> TurnRecord:
        if self._records is None:
            self._records = {(r.session_id, r.turn): r for r in self.read_records()}
        return self._records[(item.loaded.session_id, item.loaded.turn)]

    def _mine(self, item: _Item) -> Answer:
        if item.mine is not None:
            return item.mine
        loaded, record = item.loaded, self._record(item)
        return Answer(record.reasoning, record.content, loaded.tool_calls, loaded.tokens)

    def _suspect(self, item: _Item, progress: StreamProgress) -> bool:
        """Whether a reference's answer, given with others in flight, may carry the load's
        own fault: the validity oracle flagged the load's answer (a concurrency bug of the
        reference may write the same bytes), or the reference's answer itself breaks an
        invariant or, where the run judges validity, the model's grammar."""
        flagged = item.flagged if item.flagged is not None else self._record(item).corrupted
        if flagged:
            return True
        spec = self.spec
        shape = self._mix.draw(spec.seed, item.loaded.session_id, item.loaded.turn, self.tools)
        if check_answer(progress.served(), asked_for(shape, spec, None), self.tools):
            return True
        if not spec.judges_validity:
            return False
        output = AssistantOutput(
            progress.content_text(), progress.reasoning_text(), progress.tool_calls(),
            progress.finish_reason,
        )  # fmt: skip
        return not check_turn(output, self.tools, spec.tool_format or "dsml-v32").clean

    def judge(
        self,
        item: _Item,
        url: str,
        progress: StreamProgress,
        request: dict[str, Any],
        alone: bool = False,
    ) -> None:
        """The verdict of one replayed turn. A divergence that counts, found with others in
        flight on the reference, is held back and replayed alone at the end (`alone`), with
        nothing else in flight: that answer decides. So a reference that a concurrency bug
        corrupted too never makes a clean turn look corrupt (a second answer under
        concurrency would prove nothing against a fault that repeats itself, and, replaying
        cold prefixes all at once, costs more than the alone one)."""
        loaded = item.loaded
        key = (loaded.session_id, loaded.turn)
        replay_s = progress.ended_at_s - progress.scheduled_at_s
        if progress.outcome is not TurnOutcome.OK:
            turn = ReplayedTurn(*key, None, f"{progress.outcome}: {progress.error}", url, replay_s)
            self.counts.errors += 1
        else:
            mine, theirs = self._mine(item), answer_of(progress)
            if self.spec.reference_knobs.get("tool_parser") == "off":
                # The parser differential: the run's parsed calls against repro's own parse
                # of the reference's raw text (repro.checkers.differential).
                fmt = self.spec.tool_format or "dsml-v32"
                mine, theirs = canonical(mine, self.tools, fmt), canonical(theirs, self.tools, fmt)
            verdict = compare(mine, theirs, self.spec.numerical_margin_nats)
            if (
                self.concurrency > 1
                and not alone
                and (verdict.counts or self._suspect(item, progress))
            ):  # a reference with others in flight may be wrong too: only an answer alone tells
                self._alone.append((item, request))
                self.counts.turns_done += 1
                return
            if alone:
                self.confirmed += verdict.counts
                self.overturned += not verdict.counts
            turn = ReplayedTurn(*key, verdict, "", url, replay_s)
            kind = str(verdict.kind)
            self.counts.by_kind[kind] = self.counts.by_kind.get(kind, 0) + 1
            if verdict.counts and self._writer is not None:
                self._writer.add_failure(turn, mine, theirs, request)
        if self._writer is not None:
            self._writer.add(turn)
        self.turns[key] = turn
        self.counts.turns_done += not alone
        self.counts.sessions_done = len({k[0] for k in self.turns})

    async def _confirm_alone(self, url: str, watchdog: Watchdog, tls: ssl.SSLContext) -> None:
        """The turns whose two references disagreed as well, replayed alone (nothing else is
        in flight on the reference now): its verdict is this one's."""
        if not self._alone:
            return
        client = ChatClient(url, watchdog, self.spec.stall_after_s * 2, tls=tls)
        try:
            while self._alone:
                item, request = self._alone.pop(0)
                body = orjson.dumps(request)
                progress = await self.ask(client, body, bool(request.get("stream", True)))
                self.judge(item, url, progress, request, alone=True)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    # --- concurrency on the run's own engine -----------------------------------------

    async def _settle_concurrency(self, url: str, watchdog: Watchdog, tls: ssl.SSLContext) -> None:
        await settle_concurrency(self, url, watchdog, tls)

    @staticmethod
    def answer_of(progress: StreamProgress) -> Answer:
        return answer_of(progress)

    def next_now(self) -> _Item | None:
        """The next turn, its session admitted whatever the budget (the probe's turns)."""
        while not self._pending and self._sessions:
            self._pending.extend(self._sessions.popleft()[1])
        return self._pending.popleft() if self._pending else None

    def _refuse(self, message: str) -> NoReturn:
        """Stop the replay: the reference would not answer the request the load sent."""
        self.stopped = message
        raise ReproError(message)

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
            "left_out": self.left_out,
            "concurrency": self.concurrency,
            "invariance": self.invariance,
            # Turns replayed alone at the end, and how many of them still counted.
            "alone": {"replayed": self.confirmed + self.overturned, "counted": self.confirmed},
            "wall_s": round(self.wall_s, 1),
            "load_wall_s": round(self.load_wall_s, 1),
            "numerical_margin_nats": self.spec.numerical_margin_nats,
            "top_logprobs": self.spec.top_logprobs,
        }


def answer_of(progress: StreamProgress) -> Answer:
    return Answer(
        progress.reasoning_text(),
        progress.content_text(),
        server_calls_json(progress),
        scored_tokens(progress.logprobs),
    )
