"""Mix: the shares of each axis's values in a run, from `--mix`, and the seeded draw per turn.

    --mix tool_choice=required:0.3,auto:0.7     two values of one axis by share
    --mix stream=off                            one value for every turn (share 1)
    --mix tool_choice=required:0.3,auto         the value without a share takes the rest
    --mix full                                  every axis, each value by the shares below

Axes are drawn independently, each from its own seeded generator keyed by (seed, session,
turn, axis), so a turn's shape is a pure function of those: the divergence replay rebuilds
the very request the load sent, and adding an axis never reshuffles the others.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from repro.shapes.axes import AXES
from repro.shapes.shape import Shape

# `--mix full`: every request shape at once, each axis's default kept at about half.
FULL_MIX: dict[str, tuple[tuple[str, float], ...]] = {
    "tool_choice": (("auto", 0.4), ("required", 0.25), ("named", 0.2), ("none", 0.15)),
    "response_format": (("text", 0.7), ("json_object", 0.15), ("json_schema", 0.15)),
    "max_tokens": (("run", 0.8), ("tight", 0.2)),
    # No thinking budget: an engine without one may refuse it (vLLM 0.32 without a reasoning
    # parser answers an error); ask for it with --mix reasoning=budget:... where there is one.
    "reasoning": (("run", 0.4), ("on", 0.3), ("off", 0.3)),
    "stream": (("on", 0.6), ("off", 0.4)),
    # No n: repro asks at temperature 0, and vLLM refuses n > 1 with greedy sampling ("n must
    # be 1 when using greedy sampling", HTTP 400: 182 failed turns in a full mix on vLLM 0.32);
    # ask for it with --mix n=2:0.2,1 where the engine takes it.
    "logprobs": (("off", 0.6), ("on", 0.4)),
    "stop": (("none", 0.8), ("strings", 0.2)),
    "parallel_tool_calls": (("default", 0.7), ("false", 0.3)),
    # Requests that keep special tokens beside ones that skip them: a batched detokenizer
    # that applies one request's setting to all strips or leaks markers.
    "special_tokens": (("skipped", 0.8), ("kept", 0.2)),
}
SHARE_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class Mix:
    """Per axis the run varies, its values and their shares (which add up to 1)."""

    axes: dict[str, tuple[tuple[str, float], ...]]

    def __bool__(self) -> bool:
        return bool(self.axes)

    def draw(self, seed: int, session_id: int, turn: int, tools: Sequence[dict[str, Any]]) -> Shape:
        """This turn's shape: one value per mixed axis, seeded by (seed, session, turn, axis)."""
        values: dict[str, str] = {}
        for axis, shares in self.axes.items():
            rng = random.Random(f"shape:{seed}:{session_id}:{turn}:{axis}")
            values[axis] = _pick(shares, rng.random())
        named = ""
        if values.get("tool_choice") == "named":
            names = [t.get("function", {}).get("name", "") for t in tools]
            rng = random.Random(f"shape:{seed}:{session_id}:{turn}:named_tool")
            named = names[rng.randrange(len(names))] if names else ""
        if values.get("response_format", "text") != "text" and "tool_choice" in values:
            values["tool_choice"], named = "none", ""  # a structured answer makes no call
        return Shape(values, named)

    def shares(self) -> dict[str, dict[str, float]]:
        """As spec.json and the summary show it."""
        return {a: dict(s) for a, s in self.axes.items()}

    def without(self, axis: str) -> Mix:
        return Mix({a: s for a, s in self.axes.items() if a != axis})


def _pick(shares: tuple[tuple[str, float], ...], u: float) -> str:
    total = 0.0
    for value, share in shares:
        total += share
        if u < total:
            return value
    return shares[-1][0]


def parse_mix(items: Iterable[str]) -> Mix:
    """`--mix` entries into a Mix; raises ValueError with one sentence on any bad entry."""
    axes: dict[str, tuple[tuple[str, float], ...]] = {}
    for item in items:
        text = item.strip()
        if text == "full":
            for axis, shares in FULL_MIX.items():
                axes.setdefault(axis, shares)
            continue
        axis, sep, spread = text.partition("=")
        axis = axis.strip()
        if not sep or not axis or not spread.strip():
            raise ValueError(
                f"'{item}' is not AXIS=VALUE[:SHARE],...; e.g. tool_choice=required:0.3,auto:0.7, "
                f"or full (axes: {', '.join(AXES)})"
            )
        if axis not in AXES:
            raise ValueError(f"'{axis}' is not a request axis; the axes are {', '.join(AXES)}")
        if axis in axes:
            raise ValueError(f"{axis} is mixed twice; give its values in one --mix")
        axes[axis] = _shares(axis, spread)
    return Mix(axes)


def _shares(axis: str, spread: str) -> tuple[tuple[str, float], ...]:
    known = AXES[axis].values
    given: list[tuple[str, float | None]] = []
    for part in spread.split(","):
        value, colon, share_text = part.strip().partition(":")
        value = value.strip()
        if value not in known:
            raise ValueError(f"{axis} has no value '{value}'; its values are {', '.join(known)}")
        if any(v == value for v, _ in given):
            raise ValueError(f"{axis}={value} is given twice")
        share = None
        if colon:
            try:
                share = float(share_text)
            except ValueError:
                raise ValueError(f"the share of {axis}={value} is not a number") from None
            if not math.isfinite(share) or not 0 < share <= 1:
                raise ValueError(f"the share of {axis}={value} must be above 0 and at most 1")
        given.append((value, share))
    open_values = [v for v, s in given if s is None]
    stated = sum(s for _, s in given if s is not None)
    if len(open_values) > 1 or (open_values and len(given) > 1 and stated >= 1 - SHARE_TOLERANCE):
        raise ValueError(
            f"{axis}: give a share to every value but at most one, which takes the rest"
        )
    if open_values:
        rest = 1.0 - stated
        return tuple((v, rest if s is None else s) for v, s in given)
    if abs(stated - 1.0) > SHARE_TOLERANCE:
        raise ValueError(f"the shares of {axis} add up to {stated:g}, not 1")
    return tuple((v, float(s)) for v, s in given if s is not None)
