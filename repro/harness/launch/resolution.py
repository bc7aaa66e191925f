"""A run's spec checked against its profile before anything starts: the configuration it
resolves to, the launch plan, and the run folder's default name."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from repro.harness.launch.launchers import plan_for
from repro.harness.launch.plan import LaunchPlan, check_settings
from repro.harness.launch.profile import Profile, load_profile
from repro.harness.launch.run_defaults import fill_from_profile
from repro.knobs import STORY_DEFAULTS
from repro.scenarios import get_scenario
from repro.spec import RUNS_DIR, RunSpec


@dataclass(frozen=True)
class Resolved:
    """The spec checked against its profile, with what the user left unsaid filled from it
    (repro.harness.launch.run_defaults): the full configuration and, unless --url, the plan."""

    spec: RunSpec
    profile: Profile
    config: dict[str, str]
    plan: LaunchPlan | None


def resolve(spec: RunSpec) -> Resolved:
    """Everything that can be checked before a process starts; bad input raises UsageError."""
    profile = load_profile(spec.profile_path())
    get_scenario(spec.scenario)
    check_settings(profile, spec.settings)  # before the profile adds its own
    spec = fill_from_profile(spec, profile.run, profile.engine.oracle, profile.settings)
    if spec.url:
        # An external engine is configured by whoever started it: knobs only label the run.
        labels = {k: profile.resolve_knobs({k: v})[k] for k, v in spec.knobs.items()}
        return Resolved(spec, profile, labels, None)
    config = profile.resolve_knobs(spec.knobs)
    return Resolved(spec, profile, config, plan_for(profile, spec, config))


def default_run_dir(config: dict[str, str], root: Path = RUNS_DIR) -> Path:
    """runs/<timestamp>-<topology>-<knobs that differ from the story's defaults>."""
    changed = [
        f"{k}-{v}" for k, v in config.items() if k != "topology" and STORY_DEFAULTS.get(k, v) != v
    ]
    label = "-".join([config.get("topology", "external"), *changed])[:80]
    return root / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
