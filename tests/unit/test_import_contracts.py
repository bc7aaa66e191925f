"""The layers are a contract checked by import-linter (pyproject.toml, [tool.importlinter]):
the real tree keeps every contract, and a planted violation of each kind breaks one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
]


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over the `repro` package found in `tree`, with the project's contracts."""
    return subprocess.run(
        [*LINT, "--no-cache", str(REPO / "pyproject.toml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tree,
        env=os.environ | {"PYTHONPATH": str(tree)},
    )


def test_the_tree_keeps_every_contract() -> None:
    done = lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout


PLANTED = {
    # contract broken -> (module, the import planted at its top)
    "The embedded engine, the proxy and the recorder stand beside the harness": (
        "repro/sim/clock.py",
        "import repro.harness",
    ),
    "the recorder stand beside the harness": ("repro/record/answer.py", "import repro.harness"),
    "Layers": ("repro/checkers/kinds.py", "import repro.results"),
    "The harness's rooms": (
        "repro/harness/load/clock.py",
        "import repro.harness.lifecycle.stopping",
    ),
    "No import cycles": ("repro/bisect/sprt.py", "import repro.bisect.trial"),
}


@pytest.mark.parametrize("contract", sorted(PLANTED))
def test_a_planted_violation_breaks_its_contract(contract: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "repro", tree / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    module, line = PLANTED[contract]
    path = tree / module
    path.write_text(f"{line}  # planted by the test\n" + path.read_text())
    done = lint(tree)
    assert done.returncode == 1, done.stdout
    broken = done.stdout.split("Broken contracts")[1]
    assert contract in broken, done.stdout
