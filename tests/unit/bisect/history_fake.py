"""Stand-ins for a history search: a git repository whose commits set the engine's rate, and
a fake engine that reads it from the environment the commit's build made.

Each commit of the repository holds a file `rate` (the corruption rate of the engine built
from it) and, for an unbuildable commit, a file `broken`. BUILD copies `rate` to
$REPRO_BISECT_ENV/bin/python, so the fake engine launched "from" that interpreter knows its
rate; a broken commit's build exits 125 (untestable), as git bisect run's convention says.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fake_oracle import FakeOracle

from repro.bisect.evidence import CLEAN, CORRUPTED, Wave
from repro.spec import RunSpec

BUILD = (
    'test -f broken && exit 125; mkdir -p "$REPRO_BISECT_ENV/bin" && '
    'cp rate "$REPRO_BISECT_ENV/bin/python"'
)


def make_repo(
    folder: Path,
    rates: Sequence[float],
    broken: Sequence[int] = (),
    files: dict[str, Sequence[str]] | None = None,
) -> list[str]:
    """A repository with one commit per rate (oldest first); its commit ids in order. `files`
    gives other files' contents, one per commit."""
    folder.mkdir(parents=True, exist_ok=True)

    def git(*args: str, when: int = 0) -> str:
        # Fixed dates: the same history has the same commit ids on every run, so a seeded
        # engine keyed by them draws the same sessions.
        stamp = f"{1_700_000_000 + when} +0000"
        dates = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        return subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ | dates,
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    shas = []
    for index, rate in enumerate(rates):
        (folder / "rate").write_text(f"{rate}\n")
        (folder / "change").write_text(f"{index}\n")
        for name, contents in (files or {}).items():
            (folder / name).write_text(contents[index])
        if index in broken:
            (folder / "broken").write_text("")
        elif (folder / "broken").exists():
            (folder / "broken").unlink()
        git("add", "-A")
        git("commit", "-q", "-m", f"change {index}", when=index)
        shas.append(git("rev-parse", "HEAD"))
    return shas


@dataclass
class HistoryFake(FakeOracle):
    """The engine's rate is what its interpreter file says; sessions are seeded by (seed,
    interpreter, session id), so a point's outcomes never depend on when it is measured."""

    started: list[str] | None = None

    async def run_wave(self, spec: RunSpec, wave_dir: Path, first_session_id: int) -> Wave:
        python = Path(spec.server_python or "")
        rate = float(python.read_text())
        if self.started is not None:
            self.started.append(str(python))
        self.waves.append((str(python), first_session_id, spec.sessions))
        if self.wave_spread:
            shape = self.wave_spread**-2
            draw = random.Random(
                f"{self.seed}:{python.parent.parent.parent.name}:w{first_session_id}"
            )
            rate = min(1.0, rate * draw.gammavariate(shape, 1 / shape))
        key = python.parent.parent.parent.name  # the environment's cache entry: one per point
        outcomes = "".join(
            CORRUPTED if random.Random(f"{self.seed}:{key}:{sid}").random() < rate else CLEAN
            for sid in range(first_session_id, first_session_id + spec.sessions)
        )
        return Wave(first_session_id, outcomes, wall_s=1.0, run_dir=str(wave_dir))
