"""The replay: which sessions it takes, bodies rebuilt byte for byte, a verdict per turn."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import orjson
import pytest

from repro.errors import ReproError
from repro.harness.lifecycle.replay import Replay, _Item
from repro.harness.load.chunk import Usage
from repro.harness.load.loaded_log import LoadedTurn
from repro.harness.load.request_body import body_sha256, chat_body
from repro.harness.load.stream_progress import StreamProgress
from repro.records.replayed import ReplayWriter
from repro.scenarios import get_scenario
from repro.scenarios.scripted import ScriptedHistory
from repro.spec import RunSpec
from tests.unit.results.test_store import record

SCENARIO = get_scenario("agentic-coding")
SPEC = RunSpec.build(
    oracle="divergence", history="scripted", context_max_tokens=8000, top_logprobs=0
)


def loaded_turns(session_id: int, spec: RunSpec = SPEC) -> list[LoadedTurn]:
    """What the load would have logged for every request of one session."""
    history = ScriptedHistory(SCENARIO, session_id, spec.seed, spec.context_max_tokens, True)
    turns = []
    while True:
        body = orjson.dumps(chat_body(spec, "m", SCENARIO.tools(), history.messages))
        turns.append(
            LoadedTurn(session_id, history.step, history.step, body_sha256(body), "[]", ())
        )
        if not history.advance():
            return turns


class FakeReference:
    """Answers every request with `text`, except the requests whose step is in `other`."""

    def __init__(self, other: set[int]) -> None:
        self.other = other
        self.bodies: list[dict] = []

    async def stream_chat(
        self, body: bytes, progress: StreamProgress, *, deadline_s: float
    ) -> None:
        request = orjson.loads(body)
        self.bodies.append(request)
        step = sum(m["role"] == "assistant" for m in request["messages"])
        progress.content.append("changed" if step in self.other else "the answer")
        progress.ended_at_s = progress.scheduled_at_s + 0.5


def replay_one(tmp_path: Path, turns: list[LoadedTurn], reference: FakeReference) -> Replay:
    records = [record(t.session_id, t.turn, content="the answer", reasoning="") for t in turns]
    replay = Replay(SPEC, SCENARIO, "m", tmp_path, lambda: records)
    replay._writer = ReplayWriter(tmp_path)

    async def in_order() -> None:
        for turn in turns:
            await replay.replay_one(reference, "http://ref", _Item(turn))  # type: ignore[arg-type]

    try:
        anyio.run(in_order)
    finally:
        replay._writer.close()
    return replay


def test_every_turn_is_rebuilt_identically_and_judged(tmp_path: Path) -> None:
    turns = loaded_turns(4)
    reference = FakeReference(other={2})
    replay = replay_one(tmp_path, turns, reference)
    assert len(reference.bodies) == len(turns) >= 3
    kinds = {turn: v.divergence.kind for (_, turn), v in replay.turns.items()}
    assert kinds == {t.turn: ("diverged" if t.step == 2 else "identical") for t in turns}
    assert replay.counts.by_kind == {"identical": len(turns) - 1, "diverged": 1}
    (failure,) = [
        json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()
    ]
    assert failure["turn"] == 2 and failure["output"]["content"] == "the answer"
    assert (
        failure["reference"]["content"] == "changed" and failure["reference"]["url"] == "http://ref"
    )
    assert failure["request"] == reference.bodies[2]


def test_a_body_that_hashes_differently_is_refused(tmp_path: Path) -> None:
    turns = loaded_turns(4)
    tampered = [*turns[:1], LoadedTurn(4, 1, 1, "0" * 64, "[]", ())]
    with pytest.raises(ReproError, match="session 4 turn 1 differs from the one the load sent"):
        replay_one(tmp_path, tampered, FakeReference(other=set()))


def test_the_sample_is_seeded_and_takes_whole_sessions_in_request_order() -> None:
    turns = [t for sid in range(10) for t in reversed(loaded_turns(sid))]
    whole = Replay(SPEC, SCENARIO, "m", Path("."), list).plan(turns)
    assert sorted(whole) == list(range(10)) and list(whole) != list(range(10))
    assert all([t.step for t in ts] == sorted(t.step for t in ts) for ts in whole.values())
    three = RunSpec.build(**(SPEC.model_dump() | {"replay_sample": "3"}))
    assert list(Replay(three, SCENARIO, "m", Path("."), list).plan(turns)) == list(whole)[:3]
    other_seed = RunSpec.build(**(SPEC.model_dump() | {"seed": 1}))
    assert list(Replay(other_seed, SCENARIO, "m", Path("."), list).plan(turns)) != list(whole)


def test_auto_takes_the_next_session_only_if_it_would_end_within_the_budget() -> None:
    import time

    replay = Replay(SPEC, SCENARIO, "m", Path("."), list)
    assert replay._fits(1000)  # no budget: --replay-sample all or N
    replay.counts.budget_s, replay.counts.started_at_s = 10.0, time.monotonic() - 4.0
    assert replay._fits(1000)  # no pace yet: the first session is always taken
    replay.counts.turns_done = 4  # one second a turn so far
    assert replay._fits(5) and not replay._fits(7)  # 4 s gone: 5 more end by 9 s, 7 by 11 s
    replay._in_flight = 2  # turns still being replayed count too
    assert not replay._fits(5)


class RacyReference(FakeReference):
    """Answers wrong while another request is in flight (a concurrency bug of its own), and
    remembers the most requests it held at once per session."""

    def __init__(self) -> None:
        super().__init__(other=set())
        self.open: list[int] = []
        self.same_session_at_once = 0

    async def stream_chat(
        self, body: bytes, progress: StreamProgress, *, deadline_s: float
    ) -> None:
        request = orjson.loads(body)
        self.bodies.append(request)
        session = request["messages"][1]["content"]  # the task names the session's test
        self.same_session_at_once = max(
            self.same_session_at_once, self.open.count(hash(session)) + 1
        )
        self.open.append(hash(session))
        try:
            crowded = len(self.open) > 1
            await anyio.sleep(0.01)
            progress.content.append("garbled" if crowded else "the answer")
            progress.usage, progress.usage_events = Usage(10, 2, 12), 1
            progress.finish_reason = "stop"
            progress.ended_at_s = progress.scheduled_at_s + 0.01
        finally:
            self.open.remove(hash(session))


def test_several_at_once_never_replays_two_turns_of_a_session_together_and_confirms_alone(
    tmp_path: Path,
) -> None:
    turns = [t for sid in range(6) for t in loaded_turns(sid)]
    records = [record(t.session_id, t.turn, content="the answer", reasoning="") for t in turns]
    spec = RunSpec.build(
        **(SPEC.model_dump() | {"replay_sample": "all", "replay_concurrency": "4"})
    )
    replay = Replay(spec, SCENARIO, "m", tmp_path, lambda: records)
    for session_id, ts in replay.plan(turns).items():
        replay._sessions.append((session_id, [_Item(t) for t in ts]))
    replay._load_ended = True
    reference = RacyReference()

    async def serve() -> None:
        replay.concurrency = 4
        replay._writer = ReplayWriter(tmp_path)
        async with anyio.create_task_group() as workers:
            for _ in range(4):
                workers.start_soon(worker)
        held_back[:] = [item for item, _ in replay._alone]
        while replay._alone:  # with nothing else in flight, as Replay._confirm_alone does
            item, request = replay._alone.pop(0)
            progress = StreamProgress(scheduled_at_s=0.0)
            await reference.stream_chat(orjson.dumps(request), progress, deadline_s=5)
            replay.judge(item, "http://ref", progress, request, alone=True)
        replay._writer.close()

    async def worker() -> None:
        while (item := await replay._next()) is not None:
            await replay.replay_one(reference, "http://ref", item)  # type: ignore[arg-type]

    held_back: list = []
    anyio.run(serve)
    assert reference.same_session_at_once == 1  # a session's turns one at a time
    assert len(replay.turns) == len(turns) and replay.counts.turns_done == len(turns)
    # Every garbled answer at four at once was a divergence, replayed alone: none counted;
    # the clean ones were judged where they came.
    assert len(held_back) == replay.overturned > 0 and replay.confirmed == 0
    assert len(held_back) < len(turns)
    assert {v.divergence.kind for v in replay.turns.values()} == {"identical"}


def test_a_request_held_back_for_the_alone_answer_is_still_the_one_the_load_sent(
    tmp_path: Path,
) -> None:
    # A turn held for the alone answer at the end is sent after its session's later turns
    # were rebuilt, from the same growing history: it must not have grown with it (it did,
    # and the alone answer then came from a longer prompt: false `corrupt` verdicts).
    turns = loaded_turns(4)
    replay = Replay(SPEC, SCENARIO, "m", tmp_path, lambda: [])
    held = [replay.rebuild(turn)[0] for turn in turns]
    assert len(held) >= 3
    assert [body_sha256(orjson.dumps(r)) for r in held] == [t.body_sha256 for t in turns]
