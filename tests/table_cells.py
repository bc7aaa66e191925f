"""Read a rich table back from its rendering, to show that no value was cut at a width."""

from __future__ import annotations

import copy
import io

from rich import box
from rich.console import Console
from rich.table import Table


def rendered(table: Table, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.export_text()


def cells(table: Table, width: int) -> list[list[str]]:
    """Every row's cells (header first) as rendered at `width`, each cell's lines joined with
    whitespace removed: wrapping and folding keep a cell's characters, cutting ('…') loses
    them. Lines wider than `width` are an error (the console would crop them)."""
    table = copy.deepcopy(table)
    table.box, table.show_lines, table.title = box.SQUARE, True, None
    text = rendered(table, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    rows: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        if line.startswith(("┌", "├", "└")):
            if current is not None:
                rows.append(current)
            current = None
        elif line.startswith("│"):
            parts = line.rstrip()[1:-1].split("│")
            if current is None:
                current = ["" for _ in parts]
            current = [c + "".join(p.split()) for c, p in zip(current, parts, strict=True)]
    return rows


def assert_nothing_cut(table: Table, width: int = 80) -> None:
    """At `width` every cell holds exactly what it holds when nothing needs to wrap."""
    narrow, wide = cells(table, width), cells(table, 1000)
    assert "…" not in rendered(table, width)
    assert narrow == wide
