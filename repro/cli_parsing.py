"""What click refuses while parsing, said the way every other refusal is: one `error:` line.

Typer prints click's parse errors (an unknown option, a value out of range, a missing
argument) as a usage line, a hint and a boxed panel; repro's own refusals are one sentence
on stderr. `OneLineParseErrors` makes click's the same, with the help hint on that line.
`finite` refuses NaN and infinity before the range check, which otherwise calls NaN
"not >= 0" (every comparison with NaN is false) and lets infinity through an open top.
`given_path` refuses an empty path, which pathlib would read as the current folder.
A bug escaping a command ends the same way, one sentence and exit 2 (repro/errors.py).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from repro.errors import EXIT_ERROR, internal_error


class OneLineParseErrors(TyperGroup):
    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:  # the caller handles errors itself
            return super().main(*args, standalone_mode=False, **kwargs)
        argv = list(args[0] if args and args[0] is not None else kwargs.get("args") or sys.argv[1:])
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except typer.TyperException as exc:  # click's errors (typer vendors click)
            if type(exc).__name__ != "NoArgsIsHelpError":  # that one printed the help already
                from repro.cli_gate import junit_for_refused_gate
                from repro.cli_output import print_error

                print_error(one_sentence(exc))
                junit_for_refused_gate(argv, one_sentence(exc))
            sys.exit(getattr(exc, "exit_code", 1))
        except typer.Abort:  # end of input at a prompt: repro has none, but click may
            from repro.cli_output import print_error

            print_error("standard input ended where repro needed it.")
            sys.exit(EXIT_ERROR)
        except Exception as exc:  # a bug in repro: one sentence and 2, never 1 (corruption)
            from repro.cli_output import print_error

            print_error(internal_error(exc) or str(exc))
            sys.exit(EXIT_ERROR)
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
    """A path option's parser: an empty one would mean the current folder, which nobody means;
    one the system rejects whatever it is for (too long a name, a loop of links) or that is
    not text (repro writes its paths into JSON) is refused here, before anything starts."""
    if isinstance(text, Path):  # a default, not typed
        return text
    if not text.strip():
        raise typer.BadParameter("an empty path names no file or folder.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # argv bytes that are not UTF-8 arrive as lone surrogates
        raise typer.BadParameter(
            "the path holds bytes that are not UTF-8 text; name it in UTF-8."
        ) from None
    try:
        os.stat(text)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        pass  # may be created, or said by what uses it (with the file's own role)
    except OSError as exc:
        raise typer.BadParameter(f"the system refuses it: {exc.strerror}.") from None
    except ValueError:  # a NUL byte: argv cannot hold one, but a test's call can
        raise typer.BadParameter("the path holds a NUL byte.") from None
    return Path(text)
