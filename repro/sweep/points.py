"""The sweep's points on disk: one run folder per point, named by what its outcome depends on,
so the same command finds finished points again and only runs the rest (as a bisect
campaign resumes from its trial cache). An unfinished attempt is set aside, never deleted."""

from __future__ import annotations

from pathlib import Path

from repro.bisect.cache import key_digest, trial_key
from repro.bisect.harness_oracle import HarnessOracle
from repro.harness import resolve
from repro.results import RunSummary
from repro.sweep.plan import SweepPoint


def point_folder(root: Path, point: SweepPoint) -> Path:
    """<root>/runs/<label>-<key>: the key covers the engine, its configuration and the load."""
    config = resolve(point.spec).config
    identity = HarnessOracle.for_spec(point.spec).identity()
    digest = key_digest(trial_key(point.spec, config, identity))[:12]
    return root / "runs" / f"{point.label}-{digest}"


def finished(folder: Path) -> RunSummary | None:
    """The point's summary if it ran to its end (a wedge is a result too), else None."""
    path = folder / "summary.json"
    if not path.exists():
        return None
    try:
        summary = RunSummary.from_file(path)
    except (OSError, ValueError, TypeError):
        return None
    return None if summary.interrupted or summary.error else summary


def set_aside(folder: Path) -> Path:
    """Rename an unfinished attempt to <folder>.attempt-N, keeping what it measured."""
    n = 1
    while (target := folder.with_name(f"{folder.name}.attempt-{n}")).exists():
        n += 1
    folder.rename(target)
    return target
