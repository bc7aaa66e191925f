"""Two runs against each other: their rates, intervals, and Fisher's exact test."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from repro.knobs import describe
from repro.results.stats import Rate, fisher_two_sided, wilson
from repro.results.summary import RunSummary


@dataclass(frozen=True, slots=True)
class RateComparison:
    what: str
    a: Rate
    b: Rate
    p_value: float


def compare_rates(a: RunSummary, b: RunSummary) -> list[RateComparison]:
    """Session and turn corruption of A and B, each with a two-sided Fisher exact p-value."""
    rows = []
    for what, ka, na, kb, nb in (
        ("sessions corrupted", a.sessions_corrupted, a.sessions, b.sessions_corrupted, b.sessions),
        ("turns corrupted", a.turns_corrupted, a.turns, b.turns_corrupted, b.turns),
    ):
        rows.append(
            RateComparison(what, wilson(ka, na), wilson(kb, nb), fisher_two_sided(ka, na, kb, nb))
        )
    return rows


# What a run asked of the engine besides its knobs: the same knobs under another load (a
# context too short to spill, fewer sessions, another oracle) can differ for that alone.
# spec.json's field -> the option that sets it, as the user knows it.
LOAD_FIELDS = {"sessions": "sessions", "concurrency": "concurrency",
               "context_max_tokens": "context-max", "max_turns": "max-turns",
               "max_output_tokens": "max-tokens", "thinking": "thinking",
               "scenario": "scenario", "seed": "seed", "oracle": "oracle",
               "abort_rate": "abort-rate"}  # fmt: skip


def load_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The load options two runs' spec.json differ in, by option name (a field either run
    lacks is skipped)."""
    return {
        option: (a[field], b[field])
        for field, option in LOAD_FIELDS.items()
        if field in a and field in b and a[field] != b[field]
    }


def comparison_document(
    a: RunSummary,
    b: RunSummary,
    rows: list[RateComparison],
    load: Mapping[str, tuple[Any, Any]] | None = None,
) -> dict[str, object]:
    """The `--json` document: both runs, the knobs and the load that differ, and each rate
    compared."""
    changed = sorted(
        k for k in a.config.keys() | b.config.keys() if a.config.get(k) != b.config.get(k)
    )
    return {
        "a": {"run_dir": a.run_dir, "config": a.config},
        "b": {"run_dir": b.run_dir, "config": b.config},
        "differs_in": changed,
        "load_differs_in": {name: {"a": x, "b": y} for name, (x, y) in (load or {}).items()},
        "rates": [
            {
                "what": row.what,
                "a": _rate(row.a),
                "b": _rate(row.b),
                "fisher_p": row.p_value if row.a.n and row.b.n else None,
            }
            for row in rows
        ],
    }


def _rate(rate: Rate) -> dict[str, float | int]:
    return {
        "corrupted": rate.k,
        "of": rate.n,
        "rate": rate.value,
        "low": rate.low,
        "high": rate.high,
    }


def comparison_table(
    a: RunSummary,
    b: RunSummary,
    rows: list[RateComparison],
    load: Mapping[str, tuple[Any, Any]] | None = None,
) -> Table:
    """Folds rather than cuts: run folders and long knob lists stay whole at 80 columns."""
    table = Table(title="repro compare", title_justify="left")
    for column in ("", "A", "B", "Fisher p (two-sided)"):
        table.add_column(column, overflow="fold")
    table.add_row("run", a.run_dir, b.run_dir, "")
    changed = {k for k in a.config.keys() | b.config.keys() if a.config.get(k) != b.config.get(k)}
    table.add_row(
        "configuration differs in",
        describe({k: a.config.get(k, "-") for k in sorted(changed)}, ", ") or "(same)",
        describe({k: b.config.get(k, "-") for k in sorted(changed)}, ", ") or "(same)",
        "",
    )
    if load:
        table.add_row(
            "load differs in",
            ", ".join(f"{name} {x}" for name, (x, _) in load.items()),
            ", ".join(f"{name} {y}" for name, (_, y) in load.items()),
            "compare with care: the load alone can move the rates",
        )
    for row in rows:
        if not row.a.n or not row.b.n:  # nothing measured on one side: nothing to test
            table.add_row(
                row.what, row.a.stacked(), row.b.stacked(), "n/a (a run measured nothing)"
            )
            continue
        verdict = "differ" if row.p_value < 0.05 else "no significant difference"
        table.add_row(row.what, row.a.stacked(), row.b.stacked(), f"{row.p_value:.3g} ({verdict})")
    return table
