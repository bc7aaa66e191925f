"""A repository's commits between two refs, and a worktree of its own for each build.

Read-only on the user's repository except for worktrees: each commit is checked out with
`git worktree add --detach` into the campaign's folder and removed (`git worktree remove`)
as soon as its build ends, whatever way it ends; worktrees a killed run left behind are
removed, and git's records of them pruned, when the next run starts.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio

from repro.errors import UsageError


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def git(repo: Path, *args: str) -> str:
    """Run git in `repo`; its stdout. A failure is one sentence with git's own words."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
    except FileNotFoundError:
        raise UsageError("git is not installed (bisect commits runs git).") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UsageError(f"git {' '.join(args[:2])} failed in {repo}: {said}")
    return done.stdout


def resolve(repo: Path, ref: str) -> str:
    """A ref (branch, tag, sha, HEAD~3) as a full commit id."""
    if not (repo / ".git").exists() and not _is_repo(repo):
        raise UsageError(f"--repo {repo} is not a git repository.")
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except UsageError:
        raise UsageError(f"{ref!r} is not a commit of {repo}.") from None


def _is_repo(repo: Path) -> bool:
    try:
        git(repo, "rev-parse", "--git-dir")
    except UsageError:
        return False
    return True


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(repo), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def commits_between(repo: Path, old: str, new: str, first_parent: bool) -> list[Commit]:
    """old, then every commit after it up to new, oldest first: the commits that are
    descendants of old and ancestors of new (with --first-parent, the merges' first line)."""
    args = ["rev-list", "--reverse", "--ancestry-path"]
    if first_parent:
        args.append("--first-parent")
    shas = git(repo, *args, f"{old}..{new}").split()
    if first_parent and new not in shas and old != new:  # an ancestry path off the first line
        raise UsageError(
            f"{new[:10]} is not on the first-parent line from {old[:10]}; drop --first-parent."
        )
    subjects = _subjects(repo, [old, *shas])
    return [Commit(sha, subjects.get(sha, "")) for sha in [old, *shas]]


def _subjects(repo: Path, shas: list[str]) -> dict[str, str]:
    if not shas:
        return {}
    out = git(repo, "show", "-s", "--format=%H %s", *shas)
    found = {}
    for line in out.splitlines():
        sha, _, subject = line.partition(" ")
        found[sha] = subject
    return found


# git's worktree records are not safe to change from two processes at once (a prune can
# remove the folder an add is creating): one change at a time per repository.
_WORKTREE_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _lock(repo: Path) -> threading.Lock:
    with _LOCKS_LOCK:
        return _WORKTREE_LOCKS.setdefault(repo.resolve(), threading.Lock())


def _add(repo: Path, path: Path, sha: str) -> None:
    with _lock(repo):
        git(repo, "worktree", "add", "--detach", "--force", str(path), sha)


@contextlib.asynccontextmanager
async def worktree(repo: Path, sha: str, under: Path) -> AsyncIterator[Path]:
    """The commit checked out, detached, in a folder of its own; removed on any way out."""
    under.mkdir(parents=True, exist_ok=True)
    path = under / sha[:12]
    await anyio.to_thread.run_sync(_remove, repo, path)
    await anyio.to_thread.run_sync(_add, repo, path, sha)
    try:
        yield path
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove, repo, path)


def _remove(repo: Path, path: Path) -> None:
    with _lock(repo):
        _remove_unlocked(repo, path)


def _remove_unlocked(repo: Path, path: Path) -> None:
    if path.exists():
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "remove", "--force", "--force", str(path)],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(path, ignore_errors=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True, check=False)


def remove_leftovers(repo: Path, under: Path) -> list[Path]:
    """Worktrees a killed run left in `under`: removed, git's records of them pruned."""
    gone = sorted(p for p in under.iterdir() if p.is_dir()) if under.is_dir() else []
    for path in gone:
        _remove(repo, path)
    return gone
