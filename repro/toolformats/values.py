"""How templates write a value: `tojson` as Hugging Face's chat templates define it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

Call = tuple[str, Mapping[str, Any]]
Calls = Sequence[Call]


def tojson(value: Any) -> str:
    """transformers' `tojson` filter: json.dumps with ensure_ascii off, default separators."""
    return json.dumps(value, ensure_ascii=False)


def untyped(value: Any) -> str:
    """An XML-carried value (Qwen3 XML, GLM, MiniMax): strings raw, anything else `tojson`."""
    return value if isinstance(value, str) else tojson(value)
