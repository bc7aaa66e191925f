"""Whatever GET /v1/models answers, the run either names the model or says in one sentence
why it cannot (never a traceback, never a guessed name)."""

from __future__ import annotations

import pytest

from repro.errors import EngineError
from repro.harness.load.model_listing import first_model

URL = "http://127.0.0.1:1/v1/models"


def test_the_first_listed_model_is_used() -> None:
    body = b'{"object": "list", "data": [{"id": "deepseek-v3.2"}, {"id": "other"}]}'
    assert first_model(URL, 200, body) == "deepseek-v3.2"


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (404, b"not found", "answered HTTP 404, not a model list"),
        (200, b"<html>hello</html>", "'<html>hello</html>', which is not JSON"),
        (200, b"", "an empty body, which is not JSON"),
        (200, b"[]", "without a 'data' list"),
        (200, b'"models"', "without a 'data' list"),
        (200, b'{"data": {"id": "x"}}', "without a 'data' list"),
        (200, b'{"data": []}', "lists no model"),
        (200, b'{"data": ["x"]}', "without a text 'id' ('\"x\"')"),
        (200, b'{"data": [{"id": 7}]}', "without a text 'id'"),
        (200, b'{"data": [{"id": "  "}]}', "without a text 'id'"),
        (200, b'{"data": [{"name": "x"}]}', "without a text 'id'"),
        (200, b'{"data": [null]}', "without a text 'id' ('null')"),
        (200, b"[" * 5000 + b"]" * 5000, "which is not JSON"),
        (200, b"\xff\xfe garbage", "which is not JSON"),
    ],
)
def test_an_unreadable_listing_is_one_sentence_that_says_what_came(
    status: int, body: bytes, said: str
) -> None:
    with pytest.raises(EngineError) as refused:
        first_model(URL, status, body)
    sentence = str(refused.value)
    assert said in sentence and sentence.endswith("give --model NAME.")
    assert "\n" not in sentence and len(sentence) < 400
