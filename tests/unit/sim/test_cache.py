"""The prefix cache: device hits, shared prefixes from the host tier, eviction to host."""

from __future__ import annotations

from repro.sim.cache import CacheMatch, PrefixCache
from repro.sim.prompt import RenderedPrompt


def _prompt(*parts: tuple[str, int]) -> RenderedPrompt:
    keys, key = [], 0
    for name, _ in parts:
        key = hash((key, name))
        keys.append(key)
    return RenderedPrompt(tuple(t for _, t in parts), tuple(keys))


SYSTEM = ("system", 1000)


def test_a_session_hits_its_own_prefix_on_device() -> None:
    cache = PrefixCache(10_000, hicache=True)
    first = _prompt(SYSTEM, ("task-a", 100))
    assert cache.match(first) == CacheMatch(0, 0)
    cache.insert(first)
    second = _prompt(SYSTEM, ("task-a", 100), ("call", 50), ("result", 2000))
    assert cache.match(second) == CacheMatch(1100, 0)


def test_a_shared_prefix_is_loaded_back_from_host_only_with_hicache() -> None:
    for hicache, expected in ((True, CacheMatch(0, 1000)), (False, CacheMatch(1000, 0))):
        cache = PrefixCache(10_000, hicache=hicache)
        cache.insert(_prompt(SYSTEM, ("task-a", 100)))
        cache.insert(_prompt(SYSTEM, ("task-b", 100)))
        assert cache.match(_prompt(SYSTEM, ("task-c", 100))) == expected


def test_eviction_goes_to_host_with_hicache_and_is_lost_without() -> None:
    for hicache in (True, False):
        cache = PrefixCache(1_500, hicache=hicache)
        cache.insert(_prompt(("a", 1000), ("a2", 10)))
        cache.insert(_prompt(("b", 1000), ("b2", 10)))  # evicts a's parts
        match = cache.match(_prompt(("a", 1000), ("a2", 10), ("a3", 5)))
        assert match == (CacheMatch(0, 1010) if hicache else CacheMatch(0, 0))
        assert cache.device_tokens <= 1_500
