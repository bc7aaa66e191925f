"""Request shapes: how one turn's request is asked (tool_choice, response_format, max_tokens,
reasoning, stream, n, logprobs, stop, parallel_tool_calls), chosen per run or mixed by share.

    axes.py    every axis, its values and what each sends
    shape.py   Shape: one turn's values, its label (turns.parquet's `shape`), its body fields
    mix.py     Mix: `--mix axis=value:share,...` parsed, and the seeded draw per turn
"""

from __future__ import annotations

from repro.shapes.axes import AXES, Axis
from repro.shapes.mix import FULL_MIX, Mix, parse_mix
from repro.shapes.shape import ANSWER_SCHEMA, BUDGET_TOKENS, STOP_STRINGS, TIGHT_TOKENS, Shape

__all__ = [
    "ANSWER_SCHEMA",
    "AXES",
    "BUDGET_TOKENS",
    "FULL_MIX",
    "STOP_STRINGS",
    "TIGHT_TOKENS",
    "Axis",
    "Mix",
    "Shape",
    "parse_mix",
]
