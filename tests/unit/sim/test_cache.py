"""The prefix cache in a fixed-size device pool: hits, spill to host, holds, waiting for room."""

from __future__ import annotations

from repro.sim.cache import CacheMatch, PrefixCache
from repro.sim.config import EngineConfig
from repro.sim.prompt import RenderedPrompt
from tests.unit.sim.parts import prompt_of

SYSTEM = ("system", 1000)


def _serve(cache: PrefixCache, prompt: RenderedPrompt, output_tokens: int = 0) -> CacheMatch:
    """One request start to end: match, take its pages, give them back."""
    match = cache.match(prompt)
    reservation = cache.reserve(prompt, match, output_tokens)
    assert reservation is not None
    cache.release(prompt, reservation)
    return match


def test_bf16_index_k_fits_fewer_tokens_in_the_same_memory() -> None:
    fp8 = EngineConfig(index_k_dtype="fp8", kv_pool_gb=80)
    bf16 = EngineConfig(index_k_dtype="bf16", kv_pool_gb=80)
    assert fp8.device_pool_tokens > 1_000_000 and bf16.device_pool_tokens < 950_000
    assert bf16.bytes_per_token - fp8.bytes_per_token == 61 * (256 - 132)


def test_a_session_hits_its_own_prefix_on_device_while_there_is_room() -> None:
    cache = PrefixCache(10_000, hicache=True)
    assert _serve(cache, prompt_of(SYSTEM, ("task-a", 100))) == CacheMatch(0, 0)
    second = prompt_of(SYSTEM, ("task-a", 100), ("call", 50), ("result", 2000))
    assert _serve(cache, second) == CacheMatch(1100, 0)


def test_under_pressure_the_least_recent_prefix_spills_to_host_or_is_lost() -> None:
    for hicache in (True, False):
        cache = PrefixCache(2_500, hicache=hicache)
        _serve(cache, prompt_of(SYSTEM, ("a", 1000)))
        _serve(
            cache, prompt_of(SYSTEM, ("b", 1000))
        )  # pool full: a's leaf goes, the shared head stays
        match = cache.match(prompt_of(SYSTEM, ("a", 1000), ("a2", 10)))
        assert match == (CacheMatch(1000, 1000) if hicache else CacheMatch(1000, 0))
        assert cache.used_tokens <= 2_500 and cache.evicted_tokens_total == 1000


def test_pages_held_by_requests_in_flight_are_never_evicted_and_waiters_get_none() -> None:
    cache = PrefixCache(3_000, hicache=True)
    _serve(cache, prompt_of(SYSTEM, ("a", 500)))
    running = prompt_of(SYSTEM, ("a", 500), ("a2", 1000))
    held = cache.reserve(running, cache.match(running), output_tokens=200)
    assert held is not None and cache.held_tokens == 1200  # its new part and its output
    other = prompt_of(("x", 1400))
    assert cache.reserve(other, cache.match(other), 0) is None  # 300 free; the rest locked or held
    assert cache.used_tokens == 2700  # a refused reservation changes nothing
    cache.release(running, held)
    assert cache.held_tokens == 0 and cache.reserve(other, cache.match(other), 0) is not None
