"""Release numbers and ranges of them, for a profile's `[versions."RANGE"]` tables.

A version is a release as registries spell it: `0.32.0`, `0.19.1`, `0.12.0.post2`,
`0.20.0rc1`, `0.9.0.dev3`. A range is one or more comparisons joined by commas, all of
which must hold: `<0.20`, `>=0.12,<0.17`, `==0.19.1`, `!=0.13.0`. Trailing zeros do not
count (0.12 == 0.12.0); a pre-release sorts before its release, a post-release after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:\.?(dev|rc|post)(\d+))?$")
_CLAUSE = re.compile(r"^(==|!=|<=|>=|<|>)\s*(\S+)$")
_PHASES = {"dev": 0, "rc": 1, None: 2, "post": 3}


def version_key(text: str) -> tuple[tuple[int, ...], int, int]:
    """A sortable key for a release; ValueError names what cannot be read."""
    match = _VERSION.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a release number (e.g. 0.32.0, 0.12.0.post2)")
    release = [int(part) for part in match[1].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    return tuple(release), _PHASES[match[2]], int(match[3] or 0)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """Comparisons that must all hold, e.g. `>=0.12,<0.17`."""

    text: str
    clauses: tuple[tuple[str, tuple[tuple[int, ...], int, int]], ...]

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        clauses = []
        for part in text.split(","):
            match = _CLAUSE.match(part.strip())
            if not match:
                raise ValueError(
                    f"{text!r} is not a version range: write comparisons joined by commas, "
                    "e.g. '<0.20' or '>=0.12,<0.17'"
                )
            clauses.append((match[1], version_key(match[2])))
        return cls(text, tuple(clauses))

    def __contains__(self, version: str) -> bool:
        key = version_key(version)
        return all(_holds(key, op, bound) for op, bound in self.clauses)


def _holds(key: tuple, op: str, bound: tuple) -> bool:
    return {
        "==": key == bound,
        "!=": key != bound,
        "<": key < bound,
        "<=": key <= bound,
        ">": key > bound,
        ">=": key >= bound,
    }[op]
