"""Which part may import which: the format sits below both the engine and its checkers."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _imported(part: str) -> dict[str, set[str]]:
    """Per module of `repro/<part>`, the repro modules it imports (anywhere in its body)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "repro" / part).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(REPO))] = {n for n in names if n.startswith("repro.")}
    return found


def test_the_embedded_engine_writes_dsml_without_the_checkers() -> None:
    imported = _imported("sim")
    assert any("repro.dsml.markers" in names for names in imported.values())
    offenders = {
        m: n for m, n in imported.items() if any(x.startswith("repro.checkers") for x in n)
    }
    assert offenders == {}


def test_the_dsml_format_imports_nothing_else_of_repro() -> None:
    imported = _imported("dsml")
    assert len(imported) >= 3
    assert all(n.startswith("repro.dsml") for names in imported.values() for n in names)
