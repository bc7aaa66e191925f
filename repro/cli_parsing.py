"""What click refuses while parsing, said the way every other refusal is: one `error:` line.

Typer prints click's parse errors (an unknown option, a value out of range, a missing
argument) as a usage line, a hint and a boxed panel; repro's own refusals are one sentence
on stderr. `OneLineParseErrors` makes click's the same, with the help hint on that line.
`finite` refuses NaN and infinity before the range check, which otherwise calls NaN
"not >= 0" (every comparison with NaN is false) and lets infinity through an open top.
`given_path` refuses an empty path, which pathlib would read as the current folder.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup


class OneLineParseErrors(TyperGroup):
    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:  # the caller handles errors itself
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as exc:  # click's errors (typer vendors click)
            if type(exc).__name__ != "NoArgsIsHelpError":  # that one printed the help already
                from repro.cli_options import print_error

                print_error(one_sentence(exc))
            sys.exit(getattr(exc, "exit_code", 1))
        except typer.Abort:  # end of input at a prompt: repro has none, but click may
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def one_sentence(exc: typer.TyperException) -> str:
    message = " ".join(getattr(exc, "format_message", exc.__str__)().split())
    if not message.endswith((".", "?", "!")):
        message += "."
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.help_option_names:
        message += f" See '{ctx.command_path} {ctx.help_option_names[0]}'."
    return message


def finite(min: float | None = None, max: float | None = None) -> dict[str, Any]:
    """typer.Option keyword arguments for a finite float in [min, max]: the parser checks,
    and min and max are passed on so that `--help` shows the range."""

    def parse(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a number.") from None
        if not math.isfinite(number):
            raise typer.BadParameter(f"{text} is not a finite number.")
        if (min is not None and number < min) or (max is not None and number > max):
            low = "" if min is None else f"{min:g}<="
            high = "" if max is None else f"<={max:g}"
            raise typer.BadParameter(f"{text} is not in the range {low}x{high}.")
        return number

    return {"parser": parse, "min": min, "max": max}


def given_path(text: str | Path) -> Path:
    """A path option's parser: an empty one would mean the current folder, which nobody means."""
    if isinstance(text, Path):  # a default, not typed
        return text
    if not text.strip():
        raise typer.BadParameter("an empty path names no file or folder.")
    return Path(text)
