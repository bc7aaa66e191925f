"""The positive control's rules for the consistency checks, on hand-made streams: duplicate
sends a call's first argument fragment twice, finish rewrites the finish_reason into a lie the
answer belies, flip changes one letter and nothing else."""

from __future__ import annotations

import pytest

from repro.checkers.json_codec import read_json
from repro.proxy import sse
from repro.proxy.injector import Injection, InjectionRule, Injector, RuleKind, Target
from tests.unit.proxy.test_injector import DONE, collect, event

pytestmark = pytest.mark.anyio


def call_stream(*fragments: str, finish: str = "tool_calls") -> list[bytes]:
    head = sse.serialize({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function",
         "function": {"name": "read_file", "arguments": ""}}]}}]})  # fmt: skip
    return [head, *(event(arguments=f) for f in fragments), event(finish=finish),
            event(usage=True), DONE]  # fmt: skip


def arguments_of(stream: bytes) -> str:
    parts = []
    for raw in sse.split_events(bytearray(stream)):
        payload = sse.parse(raw)
        for call in ((payload or {}).get("choices") or [{}])[0].get("delta", {}).get(
            "tool_calls"
        ) or []:
            parts.append(call.get("function", {}).get("arguments") or "")
    return "".join(parts)


def finish_of(stream: bytes) -> str | None:
    reasons = [sse.finish_reason(p) for e in sse.split_events(bytearray(stream))
               if (p := sse.parse(e)) is not None]  # fmt: skip
    return next((r for r in reasons if r), None)


def injector(kind: RuleKind, made: list[Injection], target: Target = Target.CALLS) -> Injector:
    return Injector(InjectionRule(kind, min_streams=1, rate=1.0, target=target), made.append)


@pytest.mark.parametrize(
    "fragments", [['{"path": "src/a.py"}'], ['{"pa', 'th": "x", "start', '_line": 3}'], ["{", "}"]]
)
async def test_duplicate_sends_the_first_argument_fragment_twice_and_breaks_the_json(
    fragments: list[str],
) -> None:
    made: list[Injection] = []
    out = await collect(injector(RuleKind.DUPLICATE, made), call_stream(*fragments))
    assert arguments_of(out) == fragments[0] + "".join(fragments)
    with pytest.raises(ValueError):
        read_json(arguments_of(out))
    (injection,) = made
    assert injection.field == "tool_calls[0].arguments" and injection.text == fragments[0]


@pytest.mark.parametrize(
    ("calls", "was", "lie"), [(True, "tool_calls", "length"), (False, "stop", "tool_calls")]
)
async def test_finish_says_what_the_answer_belies(calls: bool, was: str, lie: str) -> None:
    made: list[Injection] = []
    events = (
        call_stream('{"path": "a"}', finish=was)
        if calls
        else [event("Done."), event(finish=was), DONE]
    )
    out = await collect(injector(RuleKind.FINISH, made), events)
    assert finish_of(out) == lie and made[0].text == f"{was} -> {lie}"
    assert arguments_of(out) == ('{"path": "a"}' if calls else "")


async def test_flip_changes_one_letter_inside_a_string_and_keeps_the_json() -> None:
    made: list[Injection] = []
    out = await collect(injector(RuleKind.FLIP, made), call_stream('{"path": "src/a.py"}'))
    assert arguments_of(out) == '{"Path": "src/a.py"}'
    assert read_json(arguments_of(out)) == {"Path": "src/a.py"}
    content = await collect(injector(RuleKind.FLIP, [], Target.ANY), [event("42 apples"), DONE])
    assert b"42 Apples" in content


async def test_the_rules_leave_streams_they_cannot_use_untouched() -> None:
    made: list[Injection] = []
    plain = [event("no call here"), event(finish="length"), DONE]
    assert await collect(injector(RuleKind.DUPLICATE, made, Target.ANY), plain) == b"".join(plain)
    no_letters = [event(arguments="{}"), event(finish="stop"), DONE]
    assert await collect(injector(RuleKind.FLIP, made), no_letters) == b"".join(no_letters)
    assert made == []
    same = [event("x"), event(finish="tool_calls"), DONE]  # already what the rule would say
    assert await collect(injector(RuleKind.FINISH, made), same) == b"".join(same)
    assert made == []
