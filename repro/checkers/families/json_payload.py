"""A call's JSON payload (Hermes, DeepSeek, Kimi, Harmony, Mistral): one object, nothing around it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_WHITESPACE = " \t\n\r"


class DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise DuplicateKey(f"the key {key!r} appears twice in one object")
    return found


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# JSON as a model writes it: no NaN or Infinity, and no key twice in an object (a repeated
# key is what a multi-token delta sent twice leaves; json.loads would keep the last one).
STRICT_JSON = json.JSONDecoder(
    object_pairs_hook=_no_duplicate_keys, parse_constant=_refuse_constant
)


@dataclass(frozen=True, slots=True)
class Payload:
    """`value` is the decoded JSON (None if none); `problem` says what is wrong and `offset`
    where, in the payload; `padded` is whitespace around an otherwise good value;
    `open_string` a text that ends inside a string (cut short, or a marker comes next that
    is then the string's text)."""

    value: Any
    problem: str = ""
    offset: int = 0
    padded: bool = False
    open_string: bool = False


def read_payload(raw: str) -> Payload:
    start = len(raw) - len(raw.lstrip(_WHITESPACE))
    if start == len(raw):
        return Payload(None, "empty: no JSON at all", 0)
    try:
        value, end = STRICT_JSON.raw_decode(raw, start)
    except json.JSONDecodeError as e:
        cut = e.msg.startswith("Unterminated string") and raw[start] in "{["
        return Payload(None, f"not JSON ({e.msg})", e.pos, open_string=cut)
    except DuplicateKey as e:
        return Payload(None, str(e), start)
    except (ValueError, RecursionError) as e:  # NaN/Infinity, or absurdly deep
        return Payload(None, f"not JSON ({e})", start)
    rest = raw[end:]
    if rest.strip(_WHITESPACE):
        at = end + len(rest) - len(rest.lstrip(_WHITESPACE))
        return Payload(value, "text after the JSON value", at)
    return Payload(value, "", 0, padded=start > 0 or bool(rest))


class PayloadCache:
    """The payload read for the segment a marker ends: whether the marker falls inside one
    of its strings is asked first, then the same reading serves the call."""

    __slots__ = ("_payload", "_seg")

    def __init__(self) -> None:
        self._seg: str | None = None
        self._payload = Payload(None)

    def read(self, seg: str) -> Payload:
        if seg is not self._seg:
            self._seg, self._payload = seg, read_payload(seg)
        return self._payload
