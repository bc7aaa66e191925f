"""Rates split by request shape, and the consistency checks' own figures.

Every `axis=value` a turn's shape label holds is a row: the judged turns that carried it,
how many were corrupted (with the Wilson interval), and the turns of that shape that failed
outright (errors). A bug confined to one shape shows as one row far above the others.
The consistency block counts what the invariants found over every turn that ended ok
(they judge each one, whatever the run's oracle) and what the stream oracle's twins said.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from repro.checkers.consistency import KINDS, Broken
from repro.records import ERROR_OUTCOMES, TurnOutcome
from repro.results.stats import wilson

if TYPE_CHECKING:
    import pandas as pd

TWIN_KINDS = ("agree", "numerical", "disagree", "unanswered")


def rate_dict(k: int, n: int) -> dict[str, Any]:
    rate = wilson(k, n)
    return {"n": n, "corrupted": k, "rate": rate.value, "ci": [rate.low, rate.high]}


def by_shape(turns: pd.DataFrame, judged: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """{"tool_choice=required": {"n", "corrupted", "rate", "ci", "errors", "kinds"}, ...}."""
    if "shape" not in turns or not turns["shape"].astype(bool).any():
        return {}
    errors = turns[turns["outcome"].isin([str(o) for o in ERROR_OUTCOMES])]
    failed = Counter(t for label in errors["shape"] for t in label.split())
    rows: dict[str, dict[str, Any]] = {}
    counts: Counter[str] = Counter()
    corrupt: Counter[str] = Counter()
    kinds: dict[str, Counter[str]] = {}
    for label, corrupted, defect_kinds in zip(
        judged["shape"], judged["corrupted"], judged["defect_kinds"], strict=True
    ):
        for token in label.split():
            counts[token] += 1
            if corrupted:
                corrupt[token] += 1
                kinds.setdefault(token, Counter()).update(defect_kinds)
    for token in sorted(set(counts) | set(failed), key=_axis_order):
        rows[token] = rate_dict(corrupt[token], counts[token]) | {
            "errors": failed[token],
            "kinds": dict(kinds.get(token, Counter()).most_common(3)),
        }
    return rows


def _axis_order(token: str) -> tuple[int, str]:
    from repro.shapes import AXES

    axis, _, value = token.partition("=")
    names = list(AXES)
    position = names.index(axis) if axis in names else len(names)
    values = AXES[axis].values if axis in AXES else ()
    return position, f"{values.index(value):03d}" if value in values else value


def consistency(turns: pd.DataFrame) -> dict[str, Any]:
    """What the invariants and the stream oracle found, over the turns that ended ok."""
    ok = turns[turns["outcome"] == TurnOutcome.OK]
    if ok.empty:
        return {}
    found: Counter[str] = Counter()
    broken = 0
    for defect_kinds in ok["defect_kinds"]:
        mine = [k for k in defect_kinds if k in KINDS and k != Broken.STREAM_DISAGREES]
        found.update(mine)
        broken += bool(mine)
    block: dict[str, Any] = {
        "invariants": rate_dict(broken, len(ok)) | {"kinds": dict(found.most_common())},
    }
    twins = Counter(t for t in ok["twin"] if t) if "twin" in ok else Counter()
    if twins:
        compared = twins["agree"] + twins["numerical"] + twins["disagree"]
        block["stream"] = rate_dict(twins["disagree"], compared) | {k: twins[k] for k in TWIN_KINDS}
    return block


def in_flight_by_axis(labels: Mapping[str, int]) -> dict[str, int]:
    """Open requests by `axis=value` (and `requests`: all of them), from counts per label."""
    tally: Counter[str] = Counter()
    for label, count in labels.items():
        if count <= 0:
            continue
        tally["requests"] += count
        for token in label.split():
            tally[token] += count
    return dict(sorted(tally.items(), key=lambda kv: (kv[0] != "requests", _axis_order(kv[0]))))


def describe_in_flight(tally: Mapping[str, int]) -> str:
    """`14 requests (stream=off 6, tool_choice=required 4)`."""
    shapes = ", ".join(f"{k} {v}" for k, v in tally.items() if k != "requests")
    total = tally.get("requests", 0)
    return f"{total} request{'s' if total != 1 else ''}" + (f" ({shapes})" if shapes else "")


def shape_tokens(labels: Iterable[str]) -> list[str]:
    return sorted({t for label in labels for t in label.split()}, key=_axis_order)
