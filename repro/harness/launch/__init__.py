"""Launching engines: profiles and their placeholders, launch plans, preflight through the
engine's own parser, the local and Slurm launchers, each role's supervisor, and the Endpoint
a run drives (launched per the profile, or the --url a user gave).

    profile.py, profile_view.py   a launch profile (TOML), read strictly; shown to the user
    placeholders.py, placement.py what a profile's templates and placements may say
    resolution.py, run_defaults.py  RunSpec + profile -> Resolved (configuration, plan, [run])
    plan.py, dry_run.py           LaunchPlan: each role's argv, environment, port, health URL
    preflight.py, _engine_probe.py  every argv through the engine's own parser, in its Python
    launcher.py, launchers.py     a Deployment: roles started, watched, torn down
    local_role.py, supervisor.py  one role on this host, owned by a supervisor process
    slurm/                        roles as job steps on Slurm nodes
    endpoint.py                   engine(spec) -> Endpoint
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

_HOMES = {
    "Deployment": "launcher",
    "Endpoint": "endpoint",
    "engine": "endpoint",
    "render_plan": "dry_run",
    "check_launcher": "launchers",
    "LaunchPlan": "plan",
    "RolePlan": "plan",
    "build_plan": "plan",
    "check_plan": "plan",
    "PreflightReport": "preflight",
    "check_plans": "preflight",
    "preflight_plan": "preflight",
    "Profile": "profile",
    "load_profile": "profile",
    "profile_document": "profile_view",
    "render_profile": "profile_view",
    "Resolved": "resolution",
    "resolve": "resolution",
    "default_run_dir": "resolution",
    "RUN_DEFAULT_FIELDS": "run_defaults",
    "fill_from_profile": "run_defaults",
    "LocalRole": "local_role",
    "hurry_all": "local_role",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
