"""docs/README.md's commands run as written: every quick `sh` block, in order, as one user
would type them after the README's install (the blocks marked `# slow` are run by hand).

The blocks write under /tmp/repro-docs, as the page says; the folder is emptied first.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
INDEX = REPO / "docs" / "README.md"
SCRATCH = Path("/tmp/repro-docs")


def blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", INDEX.read_text(), flags=re.DOTALL)


def test_the_index_has_a_command_for_each_step() -> None:
    text = INDEX.read_text()
    steps = re.findall(r"^## (\d)\. ", text, flags=re.MULTILINE)
    assert steps == [str(n) for n in range(1, 8)]
    quick = [b for b in blocks() if not b.startswith("# slow")]
    assert len(quick) >= 6 and any(b.startswith("# slow") for b in blocks())
    for link in re.findall(r"\]\(([^)#]+)", text):  # every page it points to exists
        assert (INDEX.parent / link).exists(), link


def test_every_quick_block_runs_as_written_in_order() -> None:
    """In order, as a reader follows the page: a later block reads what an earlier one made."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir()
    for block in (b for b in blocks() if not b.startswith("# slow")):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=REPO,
            env=os.environ | {"COLUMNS": "120"},
        )
        assert done.returncode == 0, f"{block}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert (SCRATCH / "first" / "summary.json").exists() and (SCRATCH / "junit.xml").exists()
