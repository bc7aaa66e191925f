"""The request body: what each oracle sends, built the same way every time."""

from __future__ import annotations

import orjson

from repro.harness.load.request_body import body_sha256, chat_body
from repro.spec import RunSpec

MESSAGES = [{"role": "user", "content": "fix it"}]


def test_validity_sends_no_logprobs_and_divergence_asks_for_them_with_the_seed() -> None:
    plain = chat_body(RunSpec.build(), "m", [], MESSAGES)
    assert "logprobs" not in plain and "seed" not in plain and plain["temperature"] == 0
    replayed = chat_body(
        RunSpec.build(oracle="divergence", seed=7, top_logprobs=3), "m", [], MESSAGES
    )
    assert replayed == plain | {"seed": 7, "logprobs": True, "top_logprobs": 3}
    quiet = chat_body(RunSpec.build(oracle="both", top_logprobs=0), "m", [], MESSAGES)
    assert "logprobs" not in quiet and quiet["seed"] == 0


def test_the_same_inputs_give_the_same_bytes_and_hash() -> None:
    spec = RunSpec.build(oracle="divergence")
    first = orjson.dumps(chat_body(spec, "m", [], MESSAGES))
    again = orjson.dumps(chat_body(spec, "m", [], [dict(m) for m in MESSAGES]))
    assert first == again and body_sha256(first) == body_sha256(again)
    assert len(body_sha256(first)) == 64
    assert body_sha256(orjson.dumps(chat_body(spec, "n", [], MESSAGES))) != body_sha256(first)
