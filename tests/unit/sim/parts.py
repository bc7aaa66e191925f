"""Prompts for the unit tests, built from named parts: RenderedPrompt as cache.py reads it."""

from __future__ import annotations

from repro.sim.prompt import RenderedPrompt


def prompt_of(*parts: tuple[str, int]) -> RenderedPrompt:
    """Parts as (name, tokens); a chained key per boundary, as render_prompt makes them."""
    keys, key = [], 0
    for name, _ in parts:
        key = hash((key, name))
        keys.append(key)
    return RenderedPrompt(tuple(t for _, t in parts), tuple(keys))
