"""RunSummary: the figures of one run, computed from its turn records (or turns.parquet).

Rates are over judged turns (outcome `ok` and judged by the run's oracle: see
oracle_view.py) and over sessions with at least one judged turn;
each comes with its 95% Wilson interval, so 0 of n still says how high the rate could be.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.harness.turn import ERROR_OUTCOMES, TurnOutcome, TurnRecord
from repro.results.stats import wilson

SLOW_CLIENT_LAG_S = 0.25  # p99 send lag above this means repro itself was the bottleneck


@dataclass(frozen=True)
class RunSummary:
    """summary.json: the contract keys first (scripts rely on their names), then the detail."""

    sessions: int
    sessions_corrupted: int
    session_corruption_rate: float
    turns: int
    turns_corrupted: int
    turn_corruption_rate: float
    errors: int
    stalls: int
    interrupted: bool
    config: dict[str, str]
    wall_s: float
    max_prompt_tokens: int
    session_corruption_ci: tuple[float, float] = (0.0, 1.0)
    turn_corruption_ci: tuple[float, float] = (0.0, 1.0)
    sessions_started: int = 0
    sessions_reaching_60k: int = 0
    aborted: int = 0
    cancelled: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    defects: dict[str, int] = field(default_factory=dict)
    latency_s: dict[str, dict[str, float]] = field(default_factory=dict)
    completion_tokens: int = 0
    output_tokens_per_s: float = 0.0
    send_lag_p99_s: float = 0.0
    client_was_slow: bool = False
    wedge: str | None = None
    error: str | None = None
    engine: str = ""
    url: str = ""
    started_at: str = ""
    run_dir: str = ""
    oracle: str = "validity"
    divergence: dict[str, Any] = field(default_factory=dict)  # the replay: oracle_view.py

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_file(cls, path: Path) -> RunSummary:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        known = {f.name for f in dataclasses.fields(cls)}
        for key in ("session_corruption_ci", "turn_corruption_ci"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def failed(self) -> bool:
        """The run could not vouch for the engine: an error, a wedge or an interruption."""
        return bool(self.error or self.stalls or self.errors or self.interrupted)

    @property
    def error_outcomes(self) -> str:
        """The failed turns by outcome, e.g. "http_error 2, timeout 1": what `errors` counts."""
        return ", ".join(f"{k} {v}" for k, v in self.outcomes.items() if k in ERROR_OUTCOMES)


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and max (pandas' linear interpolation); {} when there is no value."""
    import pandas as pd

    series = pd.Series(values, dtype="float64").dropna()
    if series.empty:
        return {}
    q = series.quantile([0.5, 0.9, 0.99])
    return {
        "p50": float(q[0.5]),
        "p90": float(q[0.9]),
        "p99": float(q[0.99]),
        "max": float(series.max()),
    }


def summarize(
    records: Sequence[TurnRecord],
    *,
    config: dict[str, str],
    wall_s: float,
    interrupted: bool = False,
    wedge: str | None = None,
    error: str | None = None,
    engine: str = "",
    url: str = "",
    started_at: str = "",
    run_dir: str = "",
    oracle: str | None = None,
    divergence: dict[str, Any] | None = None,
) -> RunSummary:
    ok = [r for r in records if r.outcome == TurnOutcome.OK]
    judged = [r for r in ok if r.judged]
    by_session: dict[int, bool] = {}
    for r in judged:
        by_session[r.session_id] = by_session.get(r.session_id, False) or r.corrupted
    sessions, sessions_corrupted = len(by_session), sum(by_session.values())
    turns, turns_corrupted = len(judged), sum(r.corrupted for r in judged)
    outcomes = Counter(r.outcome for r in records)
    peak: dict[int, int] = {}
    for r in records:
        if r.prompt_tokens:
            peak[r.session_id] = max(peak.get(r.session_id, 0), r.prompt_tokens)
    session_rate, turn_rate = wilson(sessions_corrupted, sessions), wilson(turns_corrupted, turns)
    completion = sum(r.completion_tokens or 0 for r in records)
    load_s = (divergence or {}).get("load_wall_s") or wall_s  # the replay produces no load
    lags = [r.send_lag_s for r in records]
    lag_p99 = percentiles(lags).get("p99", 0.0)
    return RunSummary(
        sessions=sessions,
        sessions_corrupted=sessions_corrupted,
        session_corruption_rate=session_rate.value,
        turns=turns,
        turns_corrupted=turns_corrupted,
        turn_corruption_rate=turn_rate.value,
        errors=sum(outcomes[o] for o in ERROR_OUTCOMES),
        stalls=1 if wedge else 0,
        interrupted=interrupted,
        config=dict(config),
        wall_s=round(wall_s, 3),
        max_prompt_tokens=max(peak.values(), default=0),
        session_corruption_ci=(session_rate.low, session_rate.high),
        turn_corruption_ci=(turn_rate.low, turn_rate.high),
        sessions_started=len({r.session_id for r in records}),
        sessions_reaching_60k=sum(v >= 60_000 for v in peak.values()),
        aborted=outcomes[TurnOutcome.ABORTED],
        cancelled=outcomes[TurnOutcome.CANCELLED],
        outcomes=dict(sorted(outcomes.items())),
        defects=dict(Counter(k for r in judged for k in r.defect_kinds).most_common()),
        latency_s={
            "ttft": percentiles([r.ttft_s for r in ok if r.ttft_s is not None]),
            "e2e": percentiles([r.e2e_s for r in ok]),
            "itl": percentiles([g for r in ok for g in r.gaps_s]),
        },
        completion_tokens=completion,
        output_tokens_per_s=round(completion / load_s, 1) if load_s > 0 else 0.0,
        send_lag_p99_s=round(lag_p99, 4),
        client_was_slow=lag_p99 > SLOW_CLIENT_LAG_S,
        wedge=wedge,
        error=error,
        engine=engine,
        url=url,
        started_at=started_at,
        run_dir=run_dir,
        oracle=oracle or "validity",
        divergence=divergence or {},
    )
