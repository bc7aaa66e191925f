"""Launching engines and driving load: a RunSpec in, a run folder and its RunSummary out.

Other parts import what is listed in `__all__`, from here (`from repro.harness import run`);
the modules behind it are this part's own and may change. Names load on first use, so
importing one costs only its own module (`repro --help` stays fast; no import cycles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from repro.harness.driving import drive
    from repro.harness.dry_run import render_plan
    from repro.harness.endpoint import Endpoint, engine
    from repro.harness.gap_stats import GapStats, percentiles_of
    from repro.harness.launchers import check_launcher
    from repro.harness.plan import LaunchPlan, check_plan
    from repro.harness.preflight import PreflightReport, check_plans, preflight_plan
    from repro.harness.profile import Profile, load_profile
    from repro.harness.profile_view import profile_document, render_profile
    from repro.harness.progress import Progress
    from repro.harness.replayed import ReplayedTurn, read_replayed
    from repro.harness.resolution import Resolved, resolve
    from repro.harness.run_outcome import Interrupted, RunStopped, unvouched
    from repro.harness.turn import ERROR_OUTCOMES, TurnOutcome, TurnRecord
    from repro.harness.whole_run import run

# Each public name and the module that defines it.
_HOMES = {
    "drive": "driving",
    "render_plan": "dry_run",
    "Endpoint": "endpoint",
    "engine": "endpoint",
    "GapStats": "gap_stats",
    "percentiles_of": "gap_stats",
    "check_launcher": "launchers",
    "LaunchPlan": "plan",
    "check_plan": "plan",
    "PreflightReport": "preflight",
    "check_plans": "preflight",
    "preflight_plan": "preflight",
    "Profile": "profile",
    "load_profile": "profile",
    "profile_document": "profile_view",
    "render_profile": "profile_view",
    "Progress": "progress",
    "ReplayedTurn": "replayed",
    "read_replayed": "replayed",
    "Resolved": "resolution",
    "resolve": "resolution",
    "Interrupted": "run_outcome",
    "RunStopped": "run_outcome",
    "unvouched": "run_outcome",
    "ERROR_OUTCOMES": "turn",
    "TurnOutcome": "turn",
    "TurnRecord": "turn",
    "run": "whole_run",
}

__all__ = [
    "ERROR_OUTCOMES",
    "Endpoint",
    "GapStats",
    "Interrupted",
    "LaunchPlan",
    "PreflightReport",
    "Profile",
    "Progress",
    "ReplayedTurn",
    "Resolved",
    "RunStopped",
    "TurnOutcome",
    "TurnRecord",
    "check_launcher",
    "check_plan",
    "check_plans",
    "drive",
    "engine",
    "load_profile",
    "percentiles_of",
    "preflight_plan",
    "profile_document",
    "read_replayed",
    "render_plan",
    "render_profile",
    "resolve",
    "run",
    "unvouched",
]


__getattr__ = lazy_exports(__name__, _HOMES, globals())
