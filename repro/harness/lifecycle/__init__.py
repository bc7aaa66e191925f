"""One run's life: resolve, launch or attach, drive the load, replay for the divergence oracle,
and leave a complete run folder and summary on every way out, signals included.

    whole_run.py                  the run start to end (the CLI's and the bisect's entry)
    driving.py, final_summary.py  sessions -> run folder -> summary.json, on every exit
    replay.py                     the divergence oracle's replay (its verdicts: records/)
    progress.py                   the live panel
    stopping.py, run_outcome.py   what a stop signal does; how the run ended, for the CLI
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

_HOMES = {
    "run": "whole_run",
    "drive": "driving",
    "Progress": "progress",
    "Interrupted": "run_outcome",
    "RunStopped": "run_outcome",
    "unvouched": "run_outcome",
    "Stopping": "stopping",
    "listen_for_stops": "stopping",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
