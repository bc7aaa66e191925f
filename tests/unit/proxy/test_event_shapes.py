"""A victim's events may hold anything an upstream sends: no shape makes the injector raise,
and an event it cannot use passes as it came."""

from __future__ import annotations

import anyio
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.proxy import sse
from repro.proxy.injector import InjectionRule, Injector, RuleKind, Target
from tests.unit.proxy.test_injector import DONE, chunks_of

_SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "<｜DSML｜"])
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["function", "arguments", "content", "index"]), inner)
    ),
    max_leaves=10,
)
_DELTAS = st.fixed_dictionaries(
    {}, optional={"content": _JSON, "tool_calls": _JSON, "reasoning_content": _JSON}
)
_PAYLOADS = st.fixed_dictionaries(
    {"choices": st.lists(st.fixed_dictionaries({"delta": _DELTAS}) | _JSON, max_size=2)},
    optional={"usage": _JSON},
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PAYLOADS, min_size=1, max_size=6))
def test_no_event_shape_breaks_a_victim_stream(payloads: list[dict]) -> None:
    events = [sse.serialize(p) for p in payloads] + [DONE]
    # Every stream a victim, every text a target: each event is read as far as it can be.
    rule = InjectionRule(RuleKind.DROP, min_streams=1, rate=1.0, target=Target.ANY)
    injector = Injector(rule, lambda i: None, lambda line: None)

    async def through() -> bytes:
        return b"".join([c async for c in injector.tap(chunks_of(events), b"{}")])

    out = anyio.run(through)
    if injector.counts()["injected"] == 0:
        assert out == b"".join(events)
    for event in sse.split_events(bytearray(out)):
        if (payload := sse.parse(event)) is not None:
            sse.any_text(payload)
            assert sse.drop_later_text(orjson.loads(orjson.dumps(payload))) in (True, False)
