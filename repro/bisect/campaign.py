"""Campaigns: what `repro bisect flags|matrix` asks for, validated once, and the one call each.

Results go under <out>/bisect/: cache/ (one evidence file per trial), trials/<key>/wave-NNN/
(each wave's run folder), and the campaign's report (JSON, and parquet for a matrix).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from repro.bisect.cache import TrialCache
from repro.bisect.flags import FlagReport, differing_knobs, search_flags
from repro.bisect.matrix import MatrixReport, design_cells, run_matrix
from repro.bisect.oracle import Oracle
from repro.bisect.parallel import OraclePool
from repro.bisect.progress import Progress
from repro.bisect.sprt import SprtSettings
from repro.bisect.trial import Trial, TrialRunner
from repro.spec import RUNS_DIR, RunSpec, usage_error

Report = TypeVar("Report")


class _Campaign(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run: RunSpec = Field(description="the load per wave: run.sessions is the wave size")
    sprt: SprtSettings = Field(default_factory=SprtSettings)
    out_dir: Path = Field(RUNS_DIR, description="output folder; the cache lives here")
    parallel: int = Field(
        1,
        ge=1,
        le=64,
        description="trials measured at once, each on its own deployment (with --launcher "
        "slurm, its own allocation)",
    )

    @model_validator(mode="after")
    def _launches(self) -> _Campaign:
        if self.run.url is not None:
            raise ValueError(
                "bisect launches the engine in each configuration it measures, so --url cannot be used"
            )
        if self.parallel > 1 and self.run.port is not None:
            raise ValueError(
                f"--port gives one entry port, but --parallel {self.parallel} runs "
                f"{self.parallel} deployments at once; leave --port out"
            )
        return self

    @classmethod
    def build(cls, **fields: object) -> Self:
        """Validate user input; a bad field becomes one UsageError sentence."""
        try:
            return cls(**{k: v for k, v in fields.items() if v is not None})
        except ValidationError as exc:
            raise usage_error(exc) from None

    @property
    def folder(self) -> Path:
        return self.out_dir / "bisect"

    def digest(self) -> str:
        # How many trials run at once changes the wall time, not the campaign or its report.
        text = json.dumps(self.model_dump(mode="json", exclude={"parallel"}), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


class FlagCampaign(_Campaign):
    bad: dict[str, str] = Field(description="knobs of the failing configuration")
    good: dict[str, str] = Field(description="knobs of the clean configuration")

    @model_validator(mode="after")
    def _endpoints_given(self) -> FlagCampaign:
        for side, knobs in (("bad", self.bad), ("good", self.good)):
            if not knobs:
                raise ValueError(f"--{side} needs at least one knob as K=V, e.g. index_k=bf16")
        return self


class MatrixCampaign(_Campaign):
    factors: dict[str, tuple[str, ...]] = Field(min_length=1, description="knob -> its values")
    fraction: bool = Field(False, description="resolution-IV fraction instead of all cells")


def bisect_flags(
    campaign: FlagCampaign,
    *,
    oracle: Oracle | Sequence[Oracle] | None = None,
    progress: Progress | None = None,
) -> FlagReport:
    """Find the conjunction of knobs that makes `good` corrupt like `bad`."""
    oracles = _oracles(campaign, oracle)
    engine = oracles[0]
    bad, good = campaign.run.knobs | campaign.bad, campaign.run.knobs | campaign.good
    # Every check that can fail is done now, before the cache folder or a wave.
    engine.resolve(campaign.run.knobs)  # a shared knob both sides override is still checked
    full_bad, full_good = engine.resolve(bad), engine.resolve(good)
    differing_knobs(full_bad, full_good)
    engine.check(launch_cover(full_bad, full_good))

    async def search(runner: TrialRunner) -> FlagReport:
        return await search_flags(runner, bad, good)

    report = _run(campaign, oracles, search, progress)
    _write_json(campaign.folder / f"flags-{campaign.digest()}.json", flag_report_json(report))
    return report


def bisect_matrix(
    campaign: MatrixCampaign,
    *,
    oracle: Oracle | Sequence[Oracle] | None = None,
    progress: Progress | None = None,
) -> tuple[MatrixReport, Path]:
    """Measure every cell of the design; returns the report and its parquet file."""
    oracles = _oracles(campaign, oracle)
    engine = oracles[0]
    factors = {k: list(v) for k, v in campaign.factors.items()}
    cells = design_cells(factors, campaign.fraction)
    engine.check([engine.resolve(campaign.run.knobs | levels) for levels in cells])

    async def measure(runner: TrialRunner) -> MatrixReport:
        return await run_matrix(runner, campaign.run.knobs, factors, fraction=campaign.fraction)

    report = _run(campaign, oracles, measure, progress)
    path = report.write_parquet(campaign.folder / f"matrix-{campaign.digest()}.parquet")
    return report, path


def launch_cover(bad: Mapping[str, str], good: Mapping[str, str]) -> list[dict[str, str]]:
    """Configurations whose launch checks cover any mix of bad's and good's values a search
    may measure: what a knob value adds is filled in per role, and the roles are the
    topology's, so each side's values are checked under each side's topology."""
    configs = [dict(bad), dict(good)]
    if bad.get("topology") != good.get("topology"):
        configs += [{**bad, "topology": good["topology"]}, {**good, "topology": bad["topology"]}]
    return configs


def flag_report_json(report: FlagReport) -> dict[str, object]:
    """The `--json` document: culprit, classes, and counts of trials and sessions first."""
    return {
        "culprit": report.culprit,
        "classes": {k: v.value for k, v in report.classes.items()},
        "trials": len(report.trials),
        "sessions": report.sessions,
        "wall_s": round(report.wall_s, 1),
        "method": report.method,
        "dispersion": round(report.phi, 3),
        "notes": list(report.notes),
        "table": [
            {"trial": t.label, "config": dict(t.config), **trial_figures(t)} for t in report.trials
        ],
    }


def trial_figures(t: Trial) -> dict[str, object]:
    """A trial's row in a campaign's JSON, after its label and what it tested."""
    return {
        "decision": t.result.decision.value,
        "decided_after_sessions": t.result.sessions,
        "outcome": t.outcome,
        "llr": round(t.result.llr, 3),
        "sessions_corrupted": t.rate.k,
        "sessions": t.rate.n,
        "sessions_run": t.sessions_run,
        "rate": t.rate.value,
        "rate_low": t.rate.low,
        "rate_high": t.rate.high,
        "wall_s": round(t.evidence.wall_s, 1),
        "from_cache_sessions": t.cached_sessions,
        "cache_key": t.digest,
    }


def matrix_report_json(report: MatrixReport, parquet: Path) -> dict[str, object]:
    """The `--json` document of a matrix: the design, one row per cell (as in the parquet
    file), and the counts of trials and sessions."""
    return {
        "design": report.design,
        "factors": {k: list(v) for k, v in report.factors.items()},
        "cells": report.rows(),
        "trials": len(report.trials),
        "sessions": report.sessions,
        "wall_s": round(report.wall_s, 1),
        "parquet": str(parquet),
    }


def _run(
    campaign: _Campaign,
    oracles: list[Oracle],
    body: Callable[[TrialRunner], Awaitable[Report]],
    progress: Progress | None,
) -> Report:
    """The campaign in an event loop. Ctrl-C, SIGTERM and SIGHUP are answered at once (a line
    on stderr); the first stops the waves and the engines, a second kills the engines, and
    the command then ends as interrupted (KeyboardInterrupt: the caller says how to resume)."""
    import anyio

    from repro.harness import Stopping, listen_for_stops

    async def campaign_body(stopping: Stopping) -> list[Report]:
        """[the report], or [] when a stop signal cancelled the campaign."""
        engines = OraclePool(oracles)
        runner = TrialRunner(
            engines,
            TrialCache(campaign.folder / "cache"),
            campaign.run,
            campaign.sprt,
            campaign.folder / "trials",
            progress,
        )
        try:
            with stopping.work:
                async with runner.running_ahead():
                    report = await body(runner)
                stopping.load_done = True
                return [report]
            return []
        finally:
            # Shielded so a Ctrl-C still stops the engines the oracles kept running.
            with anyio.CancelScope(shield=True):
                await engines.aclose()

    async def main() -> Report:
        stopping = Stopping(
            anyio.CancelScope(),
            None,
            stopping_what="the waves and their engines",
            complete="the campaign is complete; stopping its engines (again to kill them at once)",
            killing="killing the engines now",
            say=_say,
        )
        reports: list[Report] = []
        failure: Exception | None = None
        async with anyio.create_task_group() as signals:
            await signals.start(listen_for_stops, stopping)
            try:
                reports = await campaign_body(stopping)
            except Exception as exc:  # raised below, as is: not wrapped in a group
                failure = exc
            finally:
                signals.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if not reports:  # a stop signal cancelled the campaign
            raise KeyboardInterrupt
        return reports[0]

    return anyio.run(main)


def _say(text: str) -> None:
    import time

    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"[dim]{time.strftime('%H:%M:%S')}[/] {text}"
    )


def _oracles(campaign: _Campaign, oracle: Oracle | Sequence[Oracle] | None) -> list[Oracle]:
    """K deployments: the harness's, or what the caller gave (tests): one oracle per slot,
    or a single one that serves every slot itself."""
    if oracle is None:
        return [_harness_oracle(campaign.run, slot) for slot in range(campaign.parallel)]
    if isinstance(oracle, Sequence):
        return list(oracle)
    return [oracle] * campaign.parallel


def _harness_oracle(run: RunSpec, slot: int) -> Oracle:
    from repro.bisect.harness_oracle import HarnessOracle

    return HarnessOracle.for_spec(run, slot)


def _write_json(path: Path, document: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=2), encoding="utf-8")
    tmp.replace(path)
