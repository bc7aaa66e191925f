"""The request-slot pool: slots are reused across requests, and a slot keeps its last owner.

SGLang gives each running request a slot (`req_pool_idx`) whose pages hold its KV and
index-K; a freed slot is handed to the next request as is. Until a new owner's index-K
has been filled, the slot still holds the previous owner's bytes: that is what a read
that skips the layer-transfer wait sees (faults.IndexKRace).
"""

from __future__ import annotations


class SlotPool:
    """LIFO free list (the most recently freed slot is reused first, as a free list does)."""

    def __init__(self, size: int) -> None:
        self._free = list(range(size - 1, -1, -1))
        self._owner: dict[int, str] = {}  # slot -> rid of its current or last owner
        self._held: dict[str, int] = {}  # rid -> slot

    def acquire(self, rid: str) -> tuple[int, str | None]:
        """A slot for `rid` and the rid whose bytes it still holds (None if never used)."""
        slot = self._free.pop() if self._free else len(self._owner)
        previous = self._owner.get(slot)
        self._owner[slot] = rid
        self._held[rid] = slot
        return slot, previous

    def release(self, rid: str) -> None:
        slot = self._held.pop(rid, None)
        if slot is not None:
            self._free.append(slot)

    def in_use(self) -> int:
        return len(self._held)
