"""Trials at once (`--parallel K`): K deployments, each trial on one of them for the waves
it runs itself (idle ones run waves ahead of need: ahead.py).

The search asks for independent trials together; together.py runs up to K of them at once
on this pool.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

import anyio

from repro.bisect.oracle import Oracle


class OraclePool:
    """K oracles, each keeping its own deployment; a trial borrows one for the waves it runs,
    preferably the one whose engine last ran the same configuration (no restart). A wave run
    ahead of need (ahead.py) borrows one only while it is idle and no trial waits for one."""

    def __init__(self, oracles: Sequence[Oracle]) -> None:
        if not oracles:
            raise ValueError("an oracle pool needs at least one oracle")
        self.oracles = list(oracles)
        self._free = list(range(len(self.oracles)))
        self._slots = anyio.Semaphore(len(self.oracles))
        self._last: dict[int, str] = {}
        self._waiting = 0  # trials waiting for a deployment: they come before waves ahead
        self._changed = anyio.Event()

    @property
    def size(self) -> int:
        return len(self.oracles)

    @property
    def busy(self) -> int:
        """Deployments lent out now."""
        return self.size - len(self._free)

    @contextlib.asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[Oracle]:
        """A free oracle for the trial `key` (waits while all K are busy)."""
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
            self.poke()  # with no one else waiting, an idle deployment may run a wave ahead
        index = self._take(key)
        try:
            yield self.oracles[index]
        finally:
            self.release(index)

    def promise(self, trials: int) -> None:
        """`trials` about to ask for a deployment (started, not yet running): no wave ahead
        may take one before they ask. Each calls `promised` when it runs."""
        self._waiting += trials

    def promised(self) -> None:
        self._waiting -= 1
        self.poke()

    def idle(self, key: str) -> int | None:
        """An idle deployment's index for a wave ahead of `key`'s trial, taken; None when all
        are busy or a trial waits for one. Give it back with `release`."""
        if self._waiting or not self._free:
            return None
        self._slots.acquire_nowait()
        return self._take(key)

    def release(self, index: int) -> None:
        self._free.append(index)
        self._slots.release()
        self.poke()

    def poke(self) -> None:
        """Something a wave ahead may use has changed (a deployment freed, a trial asked)."""
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self) -> None:
        await self._changed.wait()

    def _take(self, key: str) -> int:
        index = next(
            (i for i in self._free if self._last.get(i) == key),
            next((i for i in self._free if i not in self._last), self._free[0]),
        )
        self._free.remove(index)
        self._last[index] = key
        return index

    async def aclose(self) -> None:
        """Stop every deployment (each distinct oracle once)."""
        seen: set[int] = set()
        for oracle in self.oracles:
            if id(oracle) not in seen:
                seen.add(id(oracle))
                await oracle.aclose()
