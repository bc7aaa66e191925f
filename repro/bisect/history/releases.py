"""A package's releases between two versions: from the registry (`pip index versions`, pip's
own client and configuration) or as the user lists them, ordered by version."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from repro.errors import UsageError


def parse_version(text: str, where: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise UsageError(f"{where} {text!r} is not a version (e.g. 0.8.5).") from None


def registry_versions(package: str) -> list[str]:
    """Every release the registry lists for `package`, as pip sees it (its index and
    configuration); one sentence when pip cannot say."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "index",
        "versions",
        package,
        "--disable-pip-version-check",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"`pip index versions {package}` took over 120 s; give the releases with --versions."
        ) from None
    found = parse_index_output(done.stdout)
    if done.returncode != 0 or not found:
        said = (done.stderr.strip().splitlines() or ["no versions listed"])[-1]
        raise UsageError(
            f"`pip index versions {package}` found no releases ({said}); check the name, or "
            "give the releases with --versions."
        )
    return found


def parse_index_output(text: str) -> list[str]:
    """The versions on pip's 'Available versions:' line."""
    match = re.search(r"^Available versions:\s*(.+)$", text, flags=re.MULTILINE)
    if not match:
        return []
    return [v.strip() for v in match.group(1).split(",") if v.strip()]


def releases_between(available: Sequence[str], older: str, newer: str) -> list[str]:
    """The releases from `older` to `newer` inclusive, oldest first (both endpoints kept even
    when the list lacks them: the user named them)."""
    low, high = parse_version(older, "--good/--bad"), parse_version(newer, "--good/--bad")
    keyed: dict[Version, str] = {}
    for text in [*available, older, newer]:
        try:
            version = Version(text)
        except InvalidVersion:
            continue  # the registry may list a legacy version string: not in any range
        if low <= version <= high:
            keyed.setdefault(version, text)
    return [keyed[v] for v in sorted(keyed)]


def given_versions(text: str) -> list[str]:
    """--versions 0.6.0,0.6.1,...: each must be a version."""
    items = [v.strip() for v in text.split(",") if v.strip()]
    if not items:
        raise UsageError("--versions is empty; give releases as 0.6.0,0.6.1,...")
    for item in items:
        parse_version(item, "--versions")
    return items
