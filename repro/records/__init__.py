"""Records that cross from the harness, which writes them, to results, which reads them: one
turn (`TurnRecord`, `TurnOutcome`), its inter-token gaps (`GapStats`) and a replayed turn's
verdict (`ReplayedTurn`, divergence.jsonl). They sit below both, so neither imports the other.
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

_HOMES = {
    "ERROR_OUTCOMES": "turn",
    "TurnOutcome": "turn",
    "TurnRecord": "turn",
    "GapStats": "gap_stats",
    "percentiles_of": "gap_stats",
    "pooled_percentiles": "gap_stats",
    "ReplayedTurn": "replayed",
    "ReplayWriter": "replayed",
    "read_replayed": "replayed",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
