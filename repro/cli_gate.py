"""How `repro gate` says its verdict: the JUnit file first, then the summary and one line.

The gate's exit code is law for CI: 1 means corruption was proven. Once the verdict is known,
nothing that fails after it (a JUnit file the disk refuses, a bug while rendering) may turn
it into something else: a proven 1 stays 1, and only a pass that cannot be delivered whole
becomes 2. A gate refused while its options are parsed still leaves its --junit file.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from repro.cli_output import console, errors, one_line, print_error
from repro.errors import EXIT_ERROR, EXIT_OK, internal_error

if TYPE_CHECKING:
    from repro.results import GateVerdict, RunSummary


def deliver(verdict: GateVerdict, summary: RunSummary, junit: Path | None, as_json: bool) -> int:
    """Show the summary, write the JUnit file, say the verdict; return the exit code it means
    (see the module's rule). Each step's failure is one more sentence, never a traceback."""
    from repro.results import render_summary

    run_dir = Path(summary.run_dir) if summary.run_dir else None
    problems: list[str] = []
    if not as_json and run_dir is not None:
        try:
            render_summary(summary, run_dir, console)
        except Exception as exc:
            problems.append(internal_error(exc, run_dir) or str(exc))
    verdict = _with_problems(verdict, problems)
    if junit is not None:
        problem = _write_junit(junit, summary, verdict, run_dir)
        if problem:
            problems.append(problem)
            verdict = _with_problems(verdict, problems)
    try:
        if as_json:
            verdict_doc = {"exit_code": verdict.exit_code, "message": verdict.message}
            console.print_json(data={"verdict": verdict_doc, "summary": summary.to_dict()})
        if not as_json or verdict.exit_code != EXIT_OK:  # a failing verdict on stderr too
            (console if verdict.exit_code == EXIT_OK else errors).print(
                one_line(verdict.message),
                markup=False,
                soft_wrap=True,  # one line: CI logs are grepped
            )
    except Exception as exc:
        problems.append(internal_error(exc, run_dir) or str(exc))
    for problem in problems:
        if problem not in verdict.message:  # a pass turned error already says its first one
            print_error(problem)
    return EXIT_ERROR if problems and verdict.exit_code == EXIT_OK else verdict.exit_code


def _with_problems(verdict: GateVerdict, problems: list[str]) -> GateVerdict:
    """A pass that could not be delivered whole is an error (2); any other verdict stands."""
    if not problems or verdict.exit_code != EXIT_OK:
        return verdict
    message = f"ERROR: {problems[0]} (the run itself: {verdict.message})"
    return replace(verdict, exit_code=EXIT_ERROR, message=message, troubles=(problems[0],))


def _write_junit(
    path: Path, summary: RunSummary, verdict: GateVerdict, run_dir: Path | None
) -> str | None:
    """Write the gate's JUnit file; a bug while building it falls back to the one-case file
    that says why (so CI still reads a file). The sentence of what went wrong, if anything."""
    from repro.results import gate_records, write_junit, write_junit_error

    try:
        records = gate_records(run_dir, summary.oracle) if run_dir is not None else []
        write_junit(path, summary, records, verdict)
        return None
    except OSError as exc:
        return f"Cannot write the JUnit file {path}: {exc.strerror or exc}."
    except Exception as exc:
        sentence = internal_error(exc, run_dir) or str(exc)
    try:
        write_junit_error(path, f"{sentence} (the run itself: {verdict.message})")
    except OSError as exc:
        return f"{sentence}; and the JUnit file {path} cannot be written: {exc.strerror or exc}."
    return sentence


def junit_for_refused_gate(argv: list[str], sentence: str) -> None:
    """`repro gate ... --junit F` refused before its command ran (an option click rejects):
    F still says why no verdict was reached, when F can be written."""
    if not argv or argv[0] != "gate":
        return
    path = None
    for i, arg in enumerate(argv):
        if arg == "--junit" and i + 1 < len(argv):
            path = argv[i + 1]
        elif arg.startswith("--junit="):
            path = arg.split("=", 1)[1]
    if not path:
        return
    from repro.results import check_junit_path, write_junit_error

    # Best effort, after the refusal was said: a path that cannot take it is left alone.
    with contextlib.suppress(Exception):
        check_junit_path(Path(path))
        write_junit_error(Path(path), sentence)
