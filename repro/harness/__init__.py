"""Launching engines and driving load: a RunSpec in, a run folder and its RunSummary out.

Three rooms: `launch/` (profiles, plans, preflight, launchers, the Endpoint), `load/` (the
sessions, the streaming client, the watchdog) and `lifecycle/` (a whole run, its
replay, its end). `lifecycle` uses the other two; `load` and `launch` never import it, nor each other's insides.

Other parts import what is listed in `__all__`, from here (`from repro.harness import run`);
the modules behind it are this part's own and may change. Names load on first use, so
importing one costs only its own module (`repro --help` stays fast; no import cycles).
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

# Each public name and the room (sub-package) that offers it; the turn record sits below
# the harness (repro/records/turn.py), where results reads it too.
_HOMES = {
    "drive": "lifecycle",
    "render_plan": "launch",
    "Endpoint": "launch",
    "engine": "launch",
    "GapStats": "repro.records.gap_stats",
    "percentiles_of": "repro.records.gap_stats",
    "check_launcher": "launch",
    "LaunchPlan": "launch",
    "check_plan": "launch",
    "PreflightReport": "launch",
    "check_plans": "launch",
    "preflight_plan": "launch",
    "Profile": "launch",
    "load_profile": "launch",
    "profile_document": "launch",
    "render_profile": "launch",
    "Progress": "lifecycle",
    "ReplayedTurn": "repro.records.replayed",
    "read_replayed": "repro.records.replayed",
    "Resolved": "launch",
    "resolve": "launch",
    "Interrupted": "lifecycle",
    "RunStopped": "lifecycle",
    "unvouched": "lifecycle",
    "ERROR_OUTCOMES": "repro.records.turn",
    "TurnOutcome": "repro.records.turn",
    "TurnRecord": "repro.records.turn",
    "Stopping": "lifecycle",
    "listen_for_stops": "lifecycle",
    "RUN_DEFAULT_FIELDS": "launch",
    "fill_from_profile": "launch",
    "run": "lifecycle",
}

__all__ = sorted(_HOMES)


__getattr__ = lazy_exports(__name__, _HOMES, globals())
