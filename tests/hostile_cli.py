"""Generated hostile command lines: output paths the system rejects, and standard streams that
are closed, broken or full. Families of tests/bad_inputs.py.

    paths     `repro gate` / `report --html` / `sweep` with --out, --junit and --html paths
              that are too long, not UTF-8, a file, a device, a pipe, under a file, a loop
              of links, or inside /proc: one sentence and exit 2, before anything starts
    streams   a command as a real process (repro's streams set up by a shell), whose exit
              code and files must be what the same command gives with every stream fine
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from hypothesis import strategies as st

LONG_NAME = "n" * 300


# A name the system takes but that a careless reader of paths would not: any text but "/" and
# NUL, or past the 255-byte limit of one name.
names = st.one_of(
    st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=["Cs"]),
            min_size=1, max_size=40),
    st.integers(200, 400).map(lambda n: "n" * n),
)  # fmt: skip


def _path_kinds(folder: Path) -> dict[str, str]:
    """Hostile paths, made real in the scratch folder where they must exist to be hostile."""
    (folder / "a-file").write_text("mine")
    fifo = folder / "a-fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    loop = folder / "loop"
    if not loop.is_symlink():
        loop.symlink_to(loop)
    full = folder / "full"
    full.mkdir(exist_ok=True)
    (full / "x").write_text("x")
    return {
        "long name": str(folder / LONG_NAME),
        "long path": str(folder / "/".join(["d" * 200] * 25)),
        "not utf-8": str(folder) + "/\udcff\udcfe-out",
        "a file": str(folder / "a-file"),
        "under a file": str(folder / "a-file" / "out"),
        "a device": "/dev/null",
        "a full device": "/dev/full",
        "a pipe": str(fifo),
        "a loop of links": str(loop / "out"),
        "in /proc": "/proc/version/out",
        "not empty": str(full),
        "line breaks": str(folder / "a\nb\rc"),
        "fine": str(folder / "fresh" / "out"),
    }


@st.composite
def path_invocations(draw: st.DrawFn, folder: Path, base: Path) -> tuple[list[str], frozenset[int]]:
    paths = _path_kinds(folder)
    generated = str(folder.joinpath(*draw(st.lists(names, min_size=1, max_size=4))))
    choices = [*sorted(paths.values()), generated]
    out = draw(st.sampled_from(choices))
    junit = draw(st.sampled_from(choices))
    command = draw(st.sampled_from(["gate", "report", "sweep"]))
    if command == "gate":  # port 9 on loopback: nothing listens, so a fine path ends there
        argv = ["gate", "--url", "http://127.0.0.1:9", "--sessions", "1", "--out", out]
        return [*argv, "--junit", junit], frozenset({2})
    if command == "report":
        return ["report", str(base), "--html", junit], frozenset({0, 2})
    argv = ["sweep", "--url", "http://127.0.0.1:9", "--sessions", "1", "--out", out]
    return argv, frozenset({2})


# name -> the shell redirections of the command
STREAMS = {
    "stdin closed": "<&-",
    "stdout closed": ">&-",
    "stderr closed": "2>&-",
    "all three closed": "<&- >&- 2>&-",
    "stdout full": ">/dev/full",
    "stderr full": "2>/dev/full",
    "both full": ">/dev/full 2>&1",
    "stdout read a little": "| head -c 10 >/dev/null",
    "stderr read a little": "2>&1 >/dev/null | head -c 10 >/dev/null",
    "stdout read by nobody": "| true",
}


def stream_commands(base: Path, folder: Path) -> dict[str, list[str]]:
    tools = folder / "tools.json"
    tools.write_text('[{"type": "function", "function": {"name": "f", "parameters": {}}}]')
    turn = folder / "turn.txt"
    turn.write_text("Done.")
    return {
        "report": ["report", str(base)],
        "report --json": ["report", str(base), "--json"],
        "compare": ["compare", str(base), str(base / ".." / "base")],
        "check": ["check", "--tools", str(tools), str(turn)],
        "dry run": ["run", "--dry-run"],
        "profile": ["profile", "show"],
        "bad option": ["run", "--sessions", "zero"],
    }


def run_with_streams(argv: list[str], redirections: str, folder: Path) -> int:
    """repro's own exit code as a real process, its streams set up by a shell."""
    status = folder / "status"
    command = shlex.join([sys.executable, "-m", "repro", *argv])
    # PIPESTATUS[0]: repro's code, whatever the reader at the end of a pipe did.
    script = f'{command} {redirections}; echo "${{PIPESTATUS[0]}}" > {shlex.quote(str(status))}'
    subprocess.run(["bash", "-c", script], capture_output=True, timeout=60, check=False)
    return int(status.read_text())
