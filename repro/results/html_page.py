"""What every self-contained HTML page of repro shares: the style, tables, plot sections.

No script and no link: a page can be mailed or archived as one file. Cells are HTML already
(the caller escapes what it takes from a run).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from html import escape

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { text-align: left; padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; vertical-align: top; }
td.num { text-align: right; }
.red { color: #c0392b; } .green { color: #1e8449; } .yellow { color: #b9770e; }
svg { max-width: 100%; height: auto; }
p.caption { color: #555; font-size: 0.9em; margin-top: 0; }
code { font-size: 0.85em; white-space: pre-wrap; word-break: break-all; }
"""


def document(title: str, parts: Iterable[str]) -> str:
    """The whole page: a heading with `title`, then the parts in order."""
    head = (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
    )
    return "\n".join([head, f"<h1>{escape(title)}</h1>", *parts, "</body></html>\n"])


def section(title: str, caption: str, svg: str) -> str:
    """A plot under its heading and caption."""
    return f"<h2>{escape(title)}</h2>\n<p class='caption'>{escape(caption)}</p>\n{svg}"


def table(
    header: Sequence[str] | None, rows: Iterable[Sequence[str]], tones: Iterable[str] = ()
) -> str:
    """A table of cells that are already HTML (escaped by the caller); a tone is a CSS class."""
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join(
        (f"<tr class='{tone}'>" if tone else "<tr>")
        + "".join(f"<td>{c}</td>" for c in cells)
        + "</tr>"
        for cells, tone in zip(rows, itertools.chain(tones, itertools.repeat("")), strict=False)
    )
    return f"<table>{head}{body}</table>"
