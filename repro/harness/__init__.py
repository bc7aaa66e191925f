"""Launching engines and driving load: a RunSpec in, a run folder and its RunSummary out.

Other parts import what is listed in `__all__`, from here (`from repro.harness import run`);
the modules behind it are this part's own and may change. Names load on first use, so
importing one costs only its own module (`repro --help` stays fast; no import cycles).
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

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
    "Stopping": "stopping",
    "listen_for_stops": "stopping",
    "RUN_DEFAULT_FIELDS": "run_defaults",
    "fill_from_profile": "run_defaults",
    "run": "whole_run",
}

__all__ = sorted(_HOMES)


__getattr__ = lazy_exports(__name__, _HOMES, globals())
