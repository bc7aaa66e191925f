"""Where the commands write: the standard output and error consoles, and an error as one line.

The bottom of the command line's own modules: every `cli_*` module may import it, and it
imports none of them.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


def print_error(sentence: str, label: str = "error") -> None:
    """`label: sentence` on stderr, on one line however wide the terminal."""
    # The sentence may hold [brackets] (TOML tables, JSON): never read it as rich markup; and
    # a path or a server's words may hold line breaks: shown as escapes, the line stays one.
    errors.print(f"[red]{label}:[/] {escape(one_line(sentence))}", markup=True, soft_wrap=True)


def one_line(text: str) -> str:
    """Control characters (line breaks above all) as Python escapes."""
    return _CONTROLS.sub(lambda m: repr(m.group())[1:-1], text)


_CONTROLS = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")
