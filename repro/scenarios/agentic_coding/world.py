"""A session's fake repository: paths, symbols, tests and every line of code, from a seed.

Lines are a pure function of (session seed, path, line number), so a tool result can be
regenerated on demand and the oracle knows exactly which paths, symbols and lines a
session was shown. Package names carry a per-session stem, so another session's paths
never look like this one's.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

NOUNS = (
    "ledger",
    "parser",
    "router",
    "buffer",
    "tensor",
    "cursor",
    "socket",
    "bucket",
    "schema",
    "vector",
    "packet",
    "window",
    "filter",
    "token",
    "sample",
    "record",
    "stream",
    "header",
    "budget",
    "cache",
    "queue",
    "shard",
    "batch",
    "frame",
    "index",
    "label",
    "matrix",
    "policy",
)
VERBS = (
    "parse",
    "merge",
    "flush",
    "split",
    "load",
    "store",
    "encode",
    "decode",
    "resolve",
    "fetch",
    "build",
    "check",
    "apply",
    "drain",
    "scan",
    "emit",
    "route",
    "trim",
    "pack",
    "align",
)
ERRORS = ("ValueError", "KeyError", "IndexError", "AssertionError", "TypeError")


@dataclass(frozen=True, slots=True)
class CodeLine:
    """One line of a file, and what it shows a reader (a symbol it names, a path it cites)."""

    text: str
    symbol: str | None = None
    cited_path: str | None = None


class World:
    """The repository one session works on."""

    def __init__(self, seed: int, session_id: int) -> None:
        rng = random.Random(f"agentic-coding:{seed}:{session_id}")
        self.seed_key = f"{seed}:{session_id}"
        self.package = f"{rng.choice(NOUNS)}_{rng.randrange(16**4):04x}"
        modules = rng.sample([f"{v}_{n}" for v in VERBS[:8] for n in NOUNS[:12]], 24)
        self.paths = tuple(f"src/{self.package}/{m}.py" for m in modules)
        self.lengths = {p: rng.randint(400, 1600) for p in self.paths}
        self.symbols = tuple(
            sorted(
                {f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{rng.randrange(100)}" for _ in range(90)}
            )
        )
        self.home = {s: rng.choice(self.paths) for s in self.symbols}
        target = rng.choice(self.symbols)
        self.failing_symbol = target
        module = self.home[target].rsplit("/", 1)[1].removesuffix(".py")
        self.failing_test = f"tests/test_{module}.py::test_{target}"
        self.error = rng.choice(ERRORS)

    def digest(self, *parts: object) -> int:
        return zlib.crc32(f"{self.seed_key}:{':'.join(map(str, parts))}".encode())

    def line(self, path: str, number: int) -> CodeLine:
        """Line `number` (1-based) of `path`: Python-like code full of < > " ' & characters."""
        h = self.digest(path, number)
        sym = self.symbols[h % len(self.symbols)]
        arg = NOUNS[(h >> 8) % len(NOUNS)]
        num = (h >> 16) % 97
        kind = (h >> 24) % 12
        if kind == 0:
            return CodeLine(f"def {sym}({arg}: dict[str, int] | None = None) -> list[str]:", sym)
        if kind == 1:
            return CodeLine(f"    if {arg} is None or len({arg}) < {num}:")
        if kind == 2:
            return CodeLine(
                f'        raise ValueError(f"{sym}: expected <{num} items, got {{len({arg})}}")',
                sym,
            )
        if kind == 3:
            return CodeLine(f'    return [x for x in {arg} if x > {num} and x != "{sym}"]', sym)
        if kind == 4:
            other = self.home[sym]
            module = other.rsplit("/", 1)[1].removesuffix(".py")
            return CodeLine(f"from {self.package}.{module} import {sym}  # {other}", sym, other)
        if kind == 5:
            return CodeLine(f"    {arg}_total = {sym}({arg}) & 0x{h & 0xFFFF:04x}", sym)
        if kind == 6:
            return CodeLine(
                f"    # TODO: handle '{arg}' when the count is <= {num} (see {sym})", sym
            )
        if kind == 7:
            return CodeLine(f'    log.debug("%s -> %s", {arg}, {sym}({arg}))', sym)
        if kind == 8:
            return CodeLine(
                f'        return {{"{arg}": {arg}, "count": {num}, "ok": {arg} is not None}}'
            )
        if kind == 9:
            return CodeLine(f"    while {arg} and {arg}[-1] >= {num}:")
        if kind == 10:
            return CodeLine(f"        {arg}.pop()  # keep the tail < {num} & sorted")
        return CodeLine("")

    def occurrences(self, symbol: str, limit: int) -> list[tuple[str, int]]:
        """Deterministic (path, line) places where `symbol` appears, its home first."""
        home = self.home.get(symbol, self.paths[0])
        places = [(home, 1 + self.digest("def", symbol) % (self.lengths[home] - 80))]
        for i in range(limit - 1):
            path = self.paths[self.digest("use", symbol, i) % len(self.paths)]
            places.append((path, 1 + self.digest("at", symbol, i) % self.lengths[path]))
        return places
