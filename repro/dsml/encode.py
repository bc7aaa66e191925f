"""Render tool calls as DSML byte for byte as DeepSeek's reference encoder does (dsml.md §1.2)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from repro.dsml.markers import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    DSML,
    EOS,
    INVOKE_CLOSE,
    PARAM_CLOSE,
    THINK_CLOSE,
)


def encode_parameter(key: str, value: Any) -> str:
    """Strings go raw with string="true"; everything else as JSON (ensure_ascii off)."""
    if isinstance(value, str):
        return f'<{DSML}parameter name="{key}" string="true">{value}{PARAM_CLOSE}'
    encoded = json.dumps(value, ensure_ascii=False)
    return f'<{DSML}parameter name="{key}" string="false">{encoded}{PARAM_CLOSE}'


def encode_invoke(name: str, arguments: Mapping[str, Any]) -> str:
    params = "\n".join(encode_parameter(k, v) for k, v in arguments.items())
    return f'<{DSML}invoke name="{name}">\n{params}\n{INVOKE_CLOSE}'


def encode_tool_calls(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """The whole block, including the two leading newlines that start it."""
    invokes = "\n".join(encode_invoke(name, args) for name, args in calls)
    return f"\n\n{BLOCK_OPEN}\n{invokes}\n{BLOCK_CLOSE}"


def encode_completion(
    calls: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    content: str = "",
    reasoning: str | None = None,
    eos: bool = True,
) -> str:
    """What the model emits after `<｜Assistant｜>`: `[reasoning</think>]content[block][EOS]`.

    In thinking mode the prompt already ends with `<think>`, so the completion starts
    with the reasoning text itself.
    """
    head = "" if reasoning is None else reasoning + THINK_CLOSE
    block = encode_tool_calls(calls) if calls else ""
    return head + content + block + (EOS if eos else "")
