"""Matrix mode: one SPRT trial per cell of a factorial design, and a table of rates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.bisect.design import full_factorial, resolution_iv
from repro.bisect.together import Request, measure_together
from repro.bisect.trial import SpentOnTrials, Trial, TrialRunner
from repro.errors import UsageError
from repro.knobs import describe


@dataclass(frozen=True, slots=True)
class Cell:
    levels: dict[str, str]  # factor -> value in this cell
    trial: Trial


@dataclass(frozen=True, slots=True)
class MatrixReport(SpentOnTrials):
    factors: dict[str, tuple[str, ...]]
    design: str  # "full factorial" or "resolution-IV fraction"
    cells: tuple[Cell, ...]
    trials: tuple[Trial, ...]

    def rows(self) -> list[dict[str, object]]:
        """One flat row per cell: the factors' values, then the decision (the SPRT's; `outcome`
        says "stopped: settled" where the search no longer needed one) and the rate."""
        rows = []
        for cell in self.cells:
            rate, result = cell.trial.rate, cell.trial.result
            rows.append(
                {
                    **cell.levels,
                    "decision": result.decision.value,
                    "outcome": cell.trial.outcome,
                    "sessions_corrupted": rate.k,
                    "sessions": rate.n,
                    "rate": rate.value,
                    "rate_low": rate.low,
                    "rate_high": rate.high,
                    "llr": result.llr,
                    "decided_after_sessions": result.sessions,
                    "sessions_run": cell.trial.sessions_run,
                    "wall_s": cell.trial.evidence.wall_s,
                    "config": describe(cell.trial.config),
                }
            )
        return rows

    def write_parquet(self, path: Path) -> Path:
        import pandas as pd

        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(self.rows()).to_parquet(path, index=False)
        return path


def design_cells(factors: Mapping[str, Sequence[str]], fraction: bool) -> list[dict[str, str]]:
    if not factors:
        raise UsageError("Give at least one --factor K=V1,V2.")
    for name, values in factors.items():
        if len(set(values)) != len(values) or len(values) < 2:
            raise UsageError(f"--factor {name} needs two or more distinct values.")
    return resolution_iv(factors) if fraction else full_factorial(factors)


def check_design_size(
    factors: Mapping[str, Sequence[str]], fraction: bool, max_cells: int, sessions: int
) -> None:
    """Refuse, before anything starts, a design larger than the user allowed."""
    cells = len(design_cells(factors, fraction))
    if cells <= max_cells:
        return
    fewer = len(resolution_iv(factors))
    hint = f"; --fraction needs {fewer}" if fewer < cells else ""
    raise UsageError(
        f"The design has {cells} cells, each at least one wave of {sessions} sessions, and "
        f"--max-cells is {max_cells}: raise it if that is meant{hint}."
    )


async def run_matrix(
    runner: TrialRunner,
    base: Mapping[str, str],
    factors: Mapping[str, Sequence[str]],
    *,
    fraction: bool = False,
) -> MatrixReport:
    """Measure every cell (up to the runner's K at once), reported in design order; cells
    shared with earlier campaigns come from cache."""
    for name, values in factors.items():
        for value in values:
            runner.oracle.resolve({**base, name: value})  # an unknown knob fails before any run
    design = design_cells(factors, fraction)
    asked = [Request(describe(levels), {**base, **levels}) for levels in design]
    trials = await measure_together(runner, asked)
    cells = [Cell(levels, trial) for levels, trial in zip(design, trials, strict=True)]
    return MatrixReport(
        factors={k: tuple(v) for k, v in factors.items()},
        design="resolution-IV fraction" if fraction else "full factorial",
        cells=tuple(cells),
        trials=tuple(runner.trials.values()),
    )
