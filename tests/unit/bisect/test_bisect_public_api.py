"""The names other parts may import from repro.bisect, pinned."""

from __future__ import annotations

import repro.bisect
from repro.cli_bisect import app


def test_public_surface_is_pinned():
    assert sorted(repro.bisect.__all__) == [
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
    assert all(hasattr(repro.bisect, name) for name in repro.bisect.__all__)


def test_the_app_to_mount_has_flags_matrix_commits_and_versions():
    names = sorted(c.name or c.callback.__name__ for c in app.registered_commands)
    assert names == ["commits", "flags", "matrix", "versions"]
