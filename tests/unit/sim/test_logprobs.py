"""Modelled logprobs and the near-tie switch: shapes, margins, and what batching may flip."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from repro.dsml.markers import EOS, THINK_CLOSE
from repro.scenarios.agentic_coding import TOOLS
from repro.sim.config import EngineConfig
from repro.sim.engine import Engine
from repro.sim.logprobs import NEAR_TIE_NATS, WIDE_NATS, LogprobModel, runner_up
from repro.sim.tokens import split_tokens

TEXT = "The search points at src/a.py line 12. I'll read the code around it."
PLANNED = [*split_tokens(TEXT), THINK_CLOSE, *split_tokens('{"path": "src/a.py"}'), EOS]


def _margin(entry: dict) -> float:
    top = entry["top_logprobs"]
    return top[0]["logprob"] - top[1]["logprob"]


def test_each_planned_token_is_the_top_choice_with_k_alternatives() -> None:
    model = LogprobModel(key=7, planned=PLANNED, top_k=5)
    entries = model.entries(0, PLANNED)
    assert [e["token"] for e in entries] == PLANNED[:-1]  # EOS is never text
    for entry in entries:
        top = entry["top_logprobs"]
        assert len(top) == 5 and len({t["token"] for t in top}) == 5
        assert top[0]["token"] == entry["token"] and top[0]["logprob"] == entry["logprob"]
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert entry["logprob"] < 0


def test_near_ties_are_rare_narrow_and_only_in_the_reasoning() -> None:
    end = PLANNED.index(THINK_CLOSE)
    ties = total = 0
    for key in range(3000):
        model = LogprobModel(key, PLANNED, top_k=2)
        for position in range(len(PLANNED) - 1):
            margin = model.margin_nats(position)
            if model.near_tie(position):
                ties += 1
                assert position < end and NEAR_TIE_NATS[0] <= margin <= NEAR_TIE_NATS[1]
            else:
                assert WIDE_NATS[0] <= margin <= WIDE_NATS[1]
            total += position < end
    assert 0.02 < ties / total < 0.06


def test_a_flipped_near_tie_leads_by_a_hair_and_a_spliced_token_is_confident() -> None:
    key = next(k for k in range(10_000) if LogprobModel(k, PLANNED, 2).near_tie(0))
    model = LogprobModel(key, PLANNED, top_k=3)
    planned = model.entry(0, PLANNED[0])
    flipped = model.entry(0, runner_up(PLANNED[0]))
    assert planned["top_logprobs"][1]["token"] == runner_up(PLANNED[0])
    assert 0 < _margin(flipped) < _margin(planned) <= NEAR_TIE_NATS[1]
    assert flipped["top_logprobs"][1]["token"] == PLANNED[0]
    spliced = model.entry(3, "｜DSML｜")
    assert spliced["token"] == "｜DSML｜" and spliced["logprob"] > -0.1 and _margin(spliced) > 5


def _body(variant: int, top_logprobs: int = 5) -> bytes:
    task = (
        f"The test tests/test_x.py::test_y{variant} fails in the repository of package `p` "
        "with ValueError raised from `f`."
    )
    return orjson.dumps(
        {
            "messages": [
                {"role": "system", "content": "Fix it."},
                {"role": "user", "content": task},
            ],
            "tools": TOOLS,
            "chat_template_kwargs": {"thinking": True},
            "logprobs": True,
            "top_logprobs": top_logprobs,
        }
    )


async def _answers(config: EngineConfig, bodies: list[bytes]) -> list[dict]:
    engine = Engine(config)
    await engine.start()
    try:
        responses = await asyncio.gather(*(engine.chat(b) for b in bodies))
    finally:
        await engine.stop()
    return [orjson.loads(r.body)["choices"][0] for r in responses]


@pytest.mark.anyio
async def test_batching_flips_only_near_ties_and_alone_nothing_moves() -> None:
    config = EngineConfig(time_scale=0.0005, near_tie_flip=True, reasoning_parser="deepseek-v3")
    bodies = [_body(v) for v in range(40)]
    batched = await _answers(config, bodies)
    alone = [(await _answers(config, [b]))[0] for b in bodies]
    healthy = await _answers(
        EngineConfig(time_scale=0.0005, reasoning_parser="deepseek-v3"), bodies
    )
    assert alone == healthy  # one at a time the switch changes nothing
    flipped = 0
    for loaded, reference in zip(batched, alone, strict=True):
        tokens = [e["token"] for e in loaded["logprobs"]["content"]]
        expected = [e["token"] for e in reference["logprobs"]["content"]]
        message = loaded["message"]
        assert "".join(tokens) == f"{message['reasoning_content']}{THINK_CLOSE}{message['content']}"
        assert len(tokens) == len(expected)
        for i, (got, want) in enumerate(zip(tokens, expected, strict=True)):
            if got != want:
                flipped += 1
                assert got == runner_up(want)
                ref_top = {
                    t["token"]: t["logprob"]
                    for t in reference["logprobs"]["content"][i]["top_logprobs"]
                }
                assert ref_top[want] - ref_top[got] < NEAR_TIE_NATS[1]
    assert flipped >= 1


def test_a_bad_logprobs_request_is_a_400() -> None:
    from repro.sim.request import BadRequest, ChatRequest

    base = {"messages": [{"role": "user", "content": "x"}]}
    assert (
        ChatRequest.from_body(
            orjson.dumps(base | {"logprobs": True, "top_logprobs": 3})
        ).top_logprobs
        == 3
    )
    for bad in ({"top_logprobs": 2}, {"logprobs": "yes"}, {"logprobs": True, "top_logprobs": 21}):
        with pytest.raises(BadRequest):
            ChatRequest.from_body(orjson.dumps(base | bad))
