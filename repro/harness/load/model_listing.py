"""The engine's answer to GET /v1/models, read for the name of its first model.

A server may answer anything: an error status, HTML, JSON of another shape, an id that is a
number. Each is one sentence that says what came instead of a model list, never a traceback
and never a guess that would send every request to a model the server does not have.
"""

from __future__ import annotations

import orjson

from repro.errors import EngineError

_SHOWN_CHARS = 120  # of an unexpected answer, quoted in the sentence


def first_model(url: str, status: int, body: bytes) -> str:
    """The `id` of the first entry of an OpenAI model list: {"data": [{"id": "..."}, ...]}."""
    fix = "give --model NAME"
    if status != 200:
        raise EngineError(f"{url} answered HTTP {status}, not a model list; {fix}.")
    try:
        listing = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise EngineError(f"{url} answered {_quoted(body)}, which is not JSON; {fix}.") from None
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        raise EngineError(f"{url} answered JSON without a 'data' list of models; {fix}.")
    if not data:
        raise EngineError(f"{url} lists no model; {fix}.")
    first = data[0]
    model = first.get("id") if isinstance(first, dict) else None
    if not isinstance(model, str) or not model.strip():
        raise EngineError(
            f"{url} lists a first model without a text 'id' ({_quoted(orjson.dumps(first))}); "
            f"{fix}."
        )
    return model


def _quoted(body: bytes) -> str:
    text = " ".join(body[: _SHOWN_CHARS * 4].decode("utf-8", "replace").split())
    if not text:
        return "an empty body"
    return repr(text[:_SHOWN_CHARS] + ("…" if len(text) > _SHOWN_CHARS else ""))


def model_window(body: bytes) -> int | None:
    """The first model's context window (`max_model_len`, as vLLM, SGLang and the embedded
    engine list it), or None when the listing does not say."""
    try:
        listing = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    data = listing.get("data") if isinstance(listing, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    window = first.get("max_model_len") if isinstance(first, dict) else None
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window
    return None
