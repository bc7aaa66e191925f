"""The prefix cache in a device KV pool of fixed size, with (HiCache) a host tier behind it.

A prompt is a chain of parts (prompt.RenderedPrompt); a cached prefix is identified by
the chained key of its last boundary, so a lookup walks the chain from the root and stops
at the first miss, like a radix tree cut at message boundaries.

The device pool holds `capacity_tokens` (its memory over the per-token footprint, so bf16
index-K fits fewer). Its pages are either cached prefixes or held by requests in flight: a
running request locks the cached prefix it reads and holds pages for what it adds (the
prefix it loads back from host, its new tokens, its output). To make room, unlocked cached
prefixes are evicted, least recently used first (leaves before their ancestors). With
HiCache every cached prefix is also written through to the host tier, so an evicted one is
still there and a later turn that reuses it loads it back (host -> device) instead of
recomputing it; without HiCache it is gone. A request that cannot get its pages waits.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass

from repro.sim.prompt import RenderedPrompt


@dataclass(frozen=True, slots=True)
class CacheMatch:
    device_tokens: int
    host_tokens: int

    @property
    def cached_tokens(self) -> int:
        return self.device_tokens + self.host_tokens


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one request in flight holds in the pool until it is released."""

    locked_keys: tuple[int, ...]  # the device-resident prefix it reads
    held_tokens: int  # pages for its loaded-back prefix, its new tokens and its output


class PrefixCache:
    def __init__(self, capacity_tokens: int, hicache: bool) -> None:
        self.capacity_tokens = capacity_tokens
        self._hicache = hicache
        self._device: OrderedDict[int, int] = OrderedDict()  # key -> part tokens, LRU first
        self._host: dict[int, int] = {}  # HiCache: every prefix written through to host
        self._locks: Counter[int] = Counter()
        self._device_tokens = 0
        self.held_tokens = 0
        self.evicted_tokens_total = 0

    @property
    def device_tokens(self) -> int:
        """Tokens of cached prefixes on the device (not counting pages held by requests)."""
        return self._device_tokens

    @property
    def used_tokens(self) -> int:
        return self._device_tokens + self.held_tokens

    @property
    def host_tokens(self) -> int:
        return sum(self._host.values())

    def match(self, prompt: RenderedPrompt) -> CacheMatch:
        """Longest cached prefix; the last part (the new turn) is never a hit."""
        device = host = 0
        depth = -1
        for i, key in enumerate(prompt.boundary_keys[:-1]):
            if key in self._device:
                device += prompt.part_tokens[i]
            elif key in self._host:
                host += prompt.part_tokens[i]
            else:
                break
            depth = i
        self._touch(prompt.boundary_keys[: depth + 1])
        return CacheMatch(device, host)

    def reserve(
        self, prompt: RenderedPrompt, match: CacheMatch, output_tokens: int
    ) -> Reservation | None:
        """Lock the device prefix and take pages for the rest, evicting what it must; None
        (and nothing changed) when the pool cannot make room now."""
        reads = []
        for key in prompt.boundary_keys[:-1]:  # the chain match() walked
            if key in self._device:
                reads.append(key)
            elif key not in self._host:
                break
        need = prompt.prompt_tokens - match.device_tokens + output_tokens
        shortfall = need - (self.capacity_tokens - self.used_tokens)
        if shortfall > 0 and not self._evict(shortfall, keep=frozenset(reads)):
            return None
        self._locks.update(reads)
        self.held_tokens += need
        return Reservation(tuple(reads), need)

    def release(self, prompt: RenderedPrompt, reservation: Reservation) -> None:
        """The request is done with its pages: its prompt's prefixes stay cached on device."""
        self._locks.subtract(reservation.locked_keys)
        self._locks = +self._locks  # drop zero counts
        self.held_tokens -= reservation.held_tokens
        for key, tokens in zip(prompt.boundary_keys, prompt.part_tokens, strict=True):
            if key not in self._device:
                self._device[key] = tokens
                self._device_tokens += tokens
            if self._hicache:
                self._host[key] = tokens  # write-through: the host copy outlives eviction
        self._touch(prompt.boundary_keys)
        over = self.used_tokens - self.capacity_tokens
        if over > 0:
            self._evict(over, keep=frozenset())

    def flush(self) -> None:
        self._device.clear()
        self._host.clear()
        self._device_tokens = 0

    def _touch(self, keys: tuple[int, ...]) -> None:
        # Ancestors end most recent, so a chain's leaf is evicted before its ancestors.
        for key in reversed(keys):
            if key in self._device:
                self._device.move_to_end(key)

    def _evict(self, tokens: int, keep: frozenset[int]) -> bool:
        """Free at least `tokens` of unlocked cached prefixes, LRU first; False if impossible."""
        victims, freed = [], 0
        for key, size in self._device.items():
            if freed >= tokens:
                break
            if key in keep or self._locks[key] > 0:
                continue
            victims.append(key)
            freed += size
        if freed < tokens:
            return False
        for key in victims:
            self._device_tokens -= self._device.pop(key)
        self.evicted_tokens_total += freed
        return True
