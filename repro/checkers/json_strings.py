"""The strings inside a decoded JSON value, and where one of their characters sits in the
JSON text: markup can hide behind escapes (`\\"`, `\\uff5c`) that a scan of the text misses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a decoded JSON value, object keys included, in document order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


def offset_in_json(raw: str, s: str, k: int) -> int:
    """Where character `k` of string `s` sits in the JSON text `raw` (first copy); 0 if unknown."""
    for ascii_only in (False, True):
        at = raw.find(json.dumps(s, ensure_ascii=ascii_only))
        if at != -1:
            return at + len(json.dumps(s[:k], ensure_ascii=ascii_only)) - 1
    return 0
