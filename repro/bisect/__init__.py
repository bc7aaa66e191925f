"""Bisection: SPRT trials per configuration, the flag search, matrix tables, a trial cache.

bisect_flags(FlagCampaign)     the whole conjunction of knobs that makes good corrupt
bisect_matrix(MatrixCampaign)  rates per cell of a full or resolution-IV design
commands.app                   `repro bisect flags|matrix` (mounted by repro.cli)
"""

from repro.bisect.campaign import (
    FlagCampaign,
    MatrixCampaign,
    bisect_flags,
    bisect_matrix,
    flag_report_json,
    matrix_report_json,
)
from repro.bisect.classify import KnobClass
from repro.bisect.flags import FlagReport
from repro.bisect.matrix import MatrixReport
from repro.bisect.sprt import Decision, SprtResult, SprtSettings, run_sprt

__all__ = [
    "Decision",
    "FlagCampaign",
    "FlagReport",
    "KnobClass",
    "MatrixCampaign",
    "MatrixReport",
    "SprtResult",
    "SprtSettings",
    "bisect_flags",
    "bisect_matrix",
    "flag_report_json",
    "matrix_report_json",
    "run_sprt",
]
