"""Which part may import which: the format sits below both the engine and its checkers."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PARTS = sorted(
    p.stem for p in (REPO / "repro").iterdir() if (p / "__init__.py").exists() or p.suffix == ".py"
)


def _imported(part: str) -> dict[str, set[str]]:
    """Per module of `repro/<part>`, the repro modules it imports (anywhere in its body)."""
    found: dict[str, set[str]] = {}
    where = REPO / "repro" / part
    for path in sorted(where.rglob("*.py") if where.is_dir() else [where.with_suffix(".py")]):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(REPO))] = {n for n in names if n.startswith("repro.")}
    return found


def test_the_dsml_format_imports_nothing_else_of_repro() -> None:
    imported = _imported("dsml")
    assert len(imported) >= 3
    assert all(n.startswith("repro.dsml") for names in imported.values() for n in names)


@pytest.mark.parametrize("part", ["harness", "results"])
def test_a_part_is_used_through_its_declared_surface(part: str) -> None:
    """Other parts import `repro.<part>` itself, never a module behind it (the Slurm launcher,
    which a bisect slot keeps an allocation of, aside)."""
    package = importlib.import_module(f"repro.{part}")
    behind = f"repro.{part}."
    offenders = {
        module: sorted(n for n in names if n.startswith(behind) and ".slurm" not in n)
        for p in PARTS
        if p != part
        for module, names in _imported(p).items()
    }
    assert {m: n for m, n in offenders.items() if n} == {}
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018


@pytest.mark.parametrize(
    "part",
    [
        "bisect",
        "harness",
        "harness.launch",
        "harness.load",
        "harness.lifecycle",
        "records",
        "results",
    ],
)
def test_every_declared_name_loads_from_its_module(part: str) -> None:
    package = importlib.import_module(f"repro.{part}")
    assert len(package.__all__) >= 5
    for name in package.__all__:
        value = getattr(package, name)
        home = package._HOMES[name]
        module = importlib.import_module(
            home if home.startswith("repro.") else f"repro.{part}.{home}"
        )
        assert value is getattr(module, name)
