"""docs/reference.md is what `scripts/cli-reference` writes from the CLI today: it cannot drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_reference_page_matches_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "cli-reference"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_the_reference_names_every_command() -> None:
    text = (REPO / "docs" / "reference.md").read_text()
    for command in ("run", "gate", "report", "compare", "check", "preflight", "proxy", "sweep",
                    "profile show", "bisect flags", "bisect matrix"):  # fmt: skip
        assert f"## `repro {command}`" in text, command
