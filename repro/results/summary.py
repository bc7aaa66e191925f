"""RunSummary: the figures of one run, computed from its turn records or from turns.parquet.

Rates are over judged turns (outcome `ok` and judged by the run's oracle: see
oracle_view.py) and over sessions with at least one judged turn;
each comes with its 95% Wilson interval, so 0 of n still says how high the rate could be.
The figures are computed column-wise (pandas), so a finished run's summary is read back from
its parts with only the columns it needs: no turn record is held in memory for it.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.records import ERROR_OUTCOMES, TurnOutcome, TurnRecord
from repro.results.stats import wilson

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# repro itself was the bottleneck when either passes its bound: the p99 delay between a turn
# being due and being sent, or the p99 lateness of its event loop (harness.load.loop_probe), which
# every timing it takes then includes.
SLOW_CLIENT_LAG_S = 0.25
SATURATED_LOOP_LAG_S = 0.05
# The columns the figures need; the rest of a turn (its text) is never read for a summary.
SUMMARY_COLUMNS = (
    "session_id",
    "outcome",
    "corrupted",
    "prompt_tokens",
    "completion_tokens",
    "scheduled_at_s",
    "sent_at_s",
    "first_token_at_s",
    "ended_at_s",
    "gap_max_s",
    "gap_buckets",
    "gap_bucket_counts",
    "defect_kinds",
    "judged",
    "shape",
    "twin",
)
# Sessions whose prompt got this far are counted apart: the story's corruption shows past
# about 60k tokens of context (docs/sim.md), so a run that got few there says little.
LONG_CONTEXT_TOKENS = 60_000
# Why a run ended, as summary.json says in `ended_because`.
ENDED = ("completed", "interrupted", "wedged", "engine_failed", "write_failed", "error")
# What `repro report` says of a folder with no summary.json (the run is going, or was killed).
UNFINISHED = "unfinished"


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
    sessions_reaching_long_context: int = 0  # prompt at or past long_context_tokens
    long_context_tokens: int = LONG_CONTEXT_TOKENS
    aborted: int = 0
    cancelled: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    defects: dict[str, int] = field(default_factory=dict)
    latency_s: dict[str, dict[str, float]] = field(default_factory=dict)
    completion_tokens: int = 0
    output_tokens_per_s: float = 0.0
    send_lag_p99_s: float = 0.0
    client_was_slow: bool = False
    client_loop_lag_s: dict[str, float] = field(default_factory=dict)  # p50, p99, max
    client_cpu_share: float = 0.0  # CPU seconds per wall second, summed over worker processes
    client_workers: int = 1
    engine_pace: dict[str, float] = field(default_factory=dict)  # embedded engine: engine_pace.py
    wedge: str | None = None
    error: str | None = None
    ended_because: str = "completed"  # one of ENDED; `error` or `wedge` says more
    client_pauses: int = 0  # times repro itself stopped running (SIGSTOP, VM pause, starvation)
    client_paused_s: float = 0.0  # their total: set aside by the stall watcher, never a wedge
    engine: str = ""
    url: str = ""
    started_at: str = ""
    run_dir: str = ""
    oracle: str = "validity"
    divergence: dict[str, Any] = field(default_factory=dict)  # the replay: oracle_view.py
    # The rates split by request shape, and the consistency checks' figures (shape_view.py).
    by_shape: dict[str, dict[str, Any]] = field(default_factory=dict)
    consistency: dict[str, Any] = field(default_factory=dict)
    mix: dict[str, dict[str, float]] = field(default_factory=dict)  # the shares asked for
    # When an engine failed mid-run: the requests open then, by `axis=value` (shape_view.py).
    in_flight_at_failure: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_file(cls, path: Path) -> RunSummary:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        """Raises TypeError when `data` is not what summary.json holds (e.g. a list)."""
        if not isinstance(data, dict):
            raise TypeError(f"a summary is a JSON object, not {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        if "sessions_reaching_60k" in data:  # summary.json from before the threshold was named
            data.setdefault("sessions_reaching_long_context", data["sessions_reaching_60k"])
            data.setdefault("long_context_tokens", 60_000)
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


def judged_turns(turns: pd.DataFrame) -> pd.DataFrame:
    """The turns the rates count: outcome `ok` and judged by the run's oracle."""
    ok = turns[turns["outcome"] == TurnOutcome.OK]
    return ok[ok["judged"].astype(bool)]


def corrupted_by_session(judged: pd.DataFrame) -> pd.Series:
    """Per session with a judged turn, whether any of its judged turns is corrupted: how
    sessions are counted, by RunSummary and by bisection's trials alike."""
    return judged.groupby("session_id")["corrupted"].any()


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


def summarize(records: Sequence[TurnRecord], **context: Any) -> RunSummary:
    """The figures of these turn records; `context` as for summarize_frame."""
    import pandas as pd

    columns = {c: [getattr(r, c) for r in records] for c in SUMMARY_COLUMNS}
    return summarize_frame(pd.DataFrame(columns), **context)


def summarize_table(table: pa.Table, **context: Any) -> RunSummary:
    """The figures of a turns table (as read from turns.parquet); only its needed columns."""
    return summarize_frame(table.select(list(SUMMARY_COLUMNS)).to_pandas(), **context)


def summarize_frame(
    turns: pd.DataFrame,
    *,
    config: dict[str, str],
    wall_s: float,
    interrupted: bool = False,
    wedge: str | None = None,
    error: str | None = None,
    ended_because: str | None = None,
    client_pauses: int = 0,
    client_paused_s: float = 0.0,
    client_loop_lag_s: dict[str, float] | None = None,
    client_cpu_share: float = 0.0,
    client_workers: int = 1,
    engine: str = "",
    engine_pace: dict[str, float] | None = None,
    url: str = "",
    started_at: str = "",
    run_dir: str = "",
    oracle: str | None = None,
    divergence: dict[str, Any] | None = None,
    long_context_tokens: int = LONG_CONTEXT_TOKENS,
    mix: dict[str, dict[str, float]] | None = None,
    in_flight_at_failure: dict[str, int] | None = None,
) -> RunSummary:
    """The figures of one DataFrame of SUMMARY_COLUMNS, one row per turn."""
    from repro.results.shape_view import by_shape, consistency

    numbers = ("prompt_tokens", "completion_tokens", "scheduled_at_s", "sent_at_s")
    numbers += ("first_token_at_s", "ended_at_s")
    # None (no value) becomes NaN whatever the source; an empty run has object columns.
    turns = turns.astype({c: "float64" for c in numbers} | {"corrupted": bool, "judged": bool})
    for column in ("shape", "twin"):  # a frame from before these columns existed
        if column not in turns:
            turns[column] = ""
    ok = turns[turns["outcome"] == TurnOutcome.OK]
    judged = judged_turns(turns)  # with the divergence oracle, only what the replay judged
    by_session = corrupted_by_session(judged)
    sessions, sessions_corrupted = len(by_session), int(by_session.sum())
    turns_judged, turns_corrupted = len(judged), int(judged["corrupted"].sum())
    outcomes = Counter({str(k): int(v) for k, v in turns["outcome"].value_counts().items()})
    prompt = turns["prompt_tokens"]
    peak = prompt[prompt > 0].groupby(turns["session_id"][prompt > 0]).max()
    session_rate = wilson(sessions_corrupted, sessions)
    turn_rate = wilson(turns_corrupted, turns_judged)
    completion = int(turns["completion_tokens"].fillna(0).sum())
    load_s = (divergence or {}).get("load_wall_s") or wall_s  # the replay produces no load
    lags = turns["sent_at_s"] - turns["scheduled_at_s"]
    lag_p99 = percentiles(lags).get("p99", 0.0)
    loop_lag = dict(client_loop_lag_s or {})
    itl = _pooled_gaps(ok)
    return RunSummary(
        sessions=sessions,
        sessions_corrupted=sessions_corrupted,
        session_corruption_rate=session_rate.value,
        turns=turns_judged,
        turns_corrupted=turns_corrupted,
        turn_corruption_rate=turn_rate.value,
        errors=sum(outcomes[o] for o in ERROR_OUTCOMES),
        stalls=1 if wedge else 0,
        interrupted=interrupted,
        config=dict(config),
        wall_s=round(wall_s, 3),
        max_prompt_tokens=int(peak.max()) if len(peak) else 0,
        session_corruption_ci=(session_rate.low, session_rate.high),
        turn_corruption_ci=(turn_rate.low, turn_rate.high),
        sessions_started=int(turns["session_id"].nunique()),
        sessions_reaching_long_context=int((peak >= long_context_tokens).sum()),
        long_context_tokens=long_context_tokens,
        aborted=outcomes[TurnOutcome.ABORTED],
        cancelled=outcomes[TurnOutcome.CANCELLED],
        outcomes=dict(sorted(outcomes.items())),
        defects=dict(Counter(k for kinds in judged["defect_kinds"] for k in kinds).most_common()),
        latency_s={
            "ttft": percentiles(ok["first_token_at_s"] - ok["sent_at_s"]),
            "e2e": percentiles(ok["ended_at_s"] - ok["sent_at_s"]),
            "itl": itl,
        },
        completion_tokens=completion,
        output_tokens_per_s=round(completion / load_s, 1) if load_s > 0 else 0.0,
        send_lag_p99_s=round(lag_p99, 4),
        client_was_slow=lag_p99 > SLOW_CLIENT_LAG_S
        or loop_lag.get("p99", 0.0) > SATURATED_LOOP_LAG_S,
        client_loop_lag_s=loop_lag,
        client_cpu_share=round(client_cpu_share, 3),
        client_workers=client_workers,
        wedge=wedge,
        error=error,
        ended_because=ended_because or _ended_because(interrupted, wedge, error),
        client_pauses=client_pauses,
        client_paused_s=round(client_paused_s, 3),
        engine=engine,
        engine_pace=engine_pace or {},
        url=url,
        started_at=started_at,
        run_dir=run_dir,
        oracle=oracle or "validity",
        divergence=divergence or {},
        by_shape=by_shape(turns, judged),
        consistency=consistency(turns),
        mix=dict(mix or {}),
        in_flight_at_failure=dict(in_flight_at_failure or {}),
    )


def _pooled_gaps(judged: pd.DataFrame) -> dict[str, float]:
    """Inter-token gap percentiles over every judged turn, from the turns' histograms."""
    import numpy as np

    from repro.records import percentiles_of

    if judged.empty:
        return {}
    buckets = np.concatenate([np.asarray(b, dtype="int64") for b in judged["gap_buckets"]])
    counts = np.concatenate([np.asarray(c, dtype="int64") for c in judged["gap_bucket_counts"]])
    return percentiles_of(buckets, counts, float(judged["gap_max_s"].astype("float64").max()))


def _ended_because(interrupted: bool, wedge: str | None, error: str | None) -> str:
    if wedge:
        return "wedged"
    if error:
        return "error"
    return "interrupted" if interrupted else "completed"
