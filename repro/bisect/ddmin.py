"""ddmin (Zeller & Hildebrandt, TSE 2002): a 1-minimal failing subset of a failing set of deltas.

Split the current set into n chunks; if a chunk fails keep it (n = 2); else if a complement
fails keep that (n = n - 1); else double n; stop when n reaches the set's size and nothing
fails. Unresolved tests (None) count as "does not fail", as in the paper. The result fails,
and removing any one element of it does not (within what the test could resolve).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

Test = Callable[[tuple[str, ...]], Awaitable[bool | None]]


def split(items: Sequence[str], parts: int) -> list[tuple[str, ...]]:
    """Cut into `parts` contiguous chunks whose sizes differ by at most one."""
    size, extra = divmod(len(items), parts)
    chunks, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        chunks.append(tuple(items[start:end]))
        start = end
    return chunks


async def ddmin(deltas: Sequence[str], fails: Test) -> tuple[str, ...]:
    """Minimise `deltas` (assumed to fail as a whole) with the test `fails`."""
    current, parts = tuple(deltas), 2
    while len(current) >= 2:
        chunks = split(current, parts)
        reduced = await _first_failing(chunks, fails)
        if reduced is not None:
            current, parts = reduced, 2
            continue
        # With two parts each complement is the other chunk, already tested.
        complements = [tuple(d for d in current if d not in c) for c in chunks] if parts > 2 else []
        reduced = await _first_failing(complements, fails)
        if reduced is not None:
            current, parts = reduced, max(parts - 1, 2)
            continue
        if parts >= len(current):
            break
        parts = min(len(current), parts * 2)
    return current


async def _first_failing(
    candidates: Sequence[tuple[str, ...]], fails: Test
) -> tuple[str, ...] | None:
    for candidate in candidates:
        if await fails(candidate) is True:
            return candidate
    return None
