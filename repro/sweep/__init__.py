"""`repro sweep`: one run per point of a grid of session counts and prompt ceilings, resumable,
with a table of rates (Wilson intervals), a parquet file and an HTML page with the curves.

SweepPlan.build(run=..., sessions=..., contexts_tokens=..., out_dir=...)   validated once
run_sweep(plan, console) -> SweepResult                                    the one call
"""

from repro.sweep.plan import DEFAULT_SESSIONS, SweepPlan, SweepPoint, parse_counts
from repro.sweep.runner import SweepResult, run_sweep
from repro.sweep.table import SweepRow, render_table

__all__ = [
    "DEFAULT_SESSIONS",
    "SweepPlan",
    "SweepPoint",
    "SweepResult",
    "SweepRow",
    "parse_counts",
    "render_table",
    "run_sweep",
]
