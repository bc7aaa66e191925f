"""Bisection: SPRT trials per configuration, the flag search, matrix tables, a trial cache.

bisect_flags(FlagCampaign)     the whole conjunction of knobs that makes good corrupt
bisect_matrix(MatrixCampaign)  rates per cell of a full or resolution-IV design
commands.app                   `repro bisect flags|matrix` (mounted by repro.cli)

Other parts import what is listed in `__all__`, from here; names load on first use.
"""

from repro.lazy_exports import lazy_exports

# Each public name and the module that defines it.
_HOMES = {
    "FlagCampaign": "campaign",
    "MatrixCampaign": "campaign",
    "bisect_flags": "campaign",
    "bisect_matrix": "campaign",
    "flag_report_json": "campaign",
    "matrix_report_json": "campaign",
    "KnobClass": "classify",
    "FlagReport": "flags",
    "MatrixReport": "matrix",
    "Decision": "sprt",
    "SprtResult": "sprt",
    "SprtSettings": "sprt",
    "run_sprt": "sprt",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
