"""How well the host kept the embedded engine's modelled clock: its pace, per role.

Each role of the embedded engine counts the wall and modelled seconds it spent working
(repro/sim/clock.py) on its /metrics, which the run keeps as metrics/<role>.prom. The pace
is modelled seconds per scaled wall second: 1.0 when every step took its modelled time and
no more. Below SLOW_PACE the engine ran in slow motion against the client's wall clock, and
its figures carry this machine's speed (docs/sim.md, "The time scale"). Other engines do not
publish these counters: no pace, nothing to warn about.
"""

from __future__ import annotations

import re
from pathlib import Path

SLOW_PACE = 0.8  # the engine lost a fifth of its modelled time to the host: say so

_SAMPLE = re.compile(r"^(sglang:sim_[a-z_]+)(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


def role_pace(prom_text: str) -> float | None:
    """The pace a role's /metrics text implies; None without the counters (or idle)."""
    values = {name: value for name, value in _SAMPLE.findall(prom_text)}
    try:
        wall_s = float(values["sglang:sim_busy_wall_seconds_total"])
        modelled_s = float(values["sglang:sim_busy_modelled_seconds_total"])
        scale = float(values["sglang:sim_time_scale"])
    except (KeyError, ValueError):
        return None
    if wall_s <= 0:
        return None
    return round(min(1.0, modelled_s * scale / wall_s), 3)


def engine_pace(metrics_dir: Path) -> dict[str, float]:
    """role -> pace, for the roles whose scraped metrics carry the clock's counters."""
    paces = {}
    for path in sorted(metrics_dir.glob("*.prom")) if metrics_dir.is_dir() else []:
        try:
            pace = role_pace(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if pace is not None:
            paces[path.stem] = pace
    return paces


def slow_roles(paces: dict[str, float]) -> dict[str, float]:
    return {role: pace for role, pace in paces.items() if pace < SLOW_PACE}
