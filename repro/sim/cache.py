"""The prefix cache: message-boundary prefixes in a device tier and (HiCache) a host tier.

A prompt is a chain of parts (prompt.RenderedPrompt); a cached prefix is identified by
the chained key of its last boundary, so a lookup walks the chain from the root and stops
at the first miss, like a radix tree cut at message boundaries. The device tier is LRU
with leaves evicted first; with HiCache on, evicted prefixes go to the host tier and a
later hit there is loaded back (cheaper than recomputing). Without HiCache they are gone.

Shared prefixes (a node with several children, e.g. the scenario's system prompt and
tools that every session starts with) are modelled as host-resident under HiCache: a
request whose match ends on one (a session's first turn) loads it back from the host
tier; later turns match their own, device-resident, longer prefix.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from repro.sim.prompt import RenderedPrompt


@dataclass(frozen=True, slots=True)
class CacheMatch:
    device_tokens: int
    host_tokens: int

    @property
    def cached_tokens(self) -> int:
        return self.device_tokens + self.host_tokens


class PrefixCache:
    def __init__(self, device_capacity_tokens: int, hicache: bool) -> None:
        self._capacity_tokens = device_capacity_tokens
        self._hicache = hicache
        self._device: OrderedDict[int, int] = OrderedDict()  # key -> part tokens, LRU first
        self._host: dict[int, int] = {}
        self._children: dict[int, set[int]] = {}
        self._device_tokens = 0

    @property
    def device_tokens(self) -> int:
        return self._device_tokens

    @property
    def host_tokens(self) -> int:
        return sum(self._host.values())

    def match(self, prompt: RenderedPrompt) -> CacheMatch:
        """Longest cached prefix; the last part (the new turn) is never a hit."""
        device = host = 0
        depth = -1  # index of the deepest matched boundary
        in_host = False
        for i, key in enumerate(prompt.boundary_keys[:-1]):
            if key in self._device:
                device += prompt.part_tokens[i]
            elif key in self._host:
                host += prompt.part_tokens[i]
                in_host = True
            else:
                break
            depth = i
        for key in reversed(prompt.boundary_keys[: depth + 1]):  # ancestors end most recent
            if key in self._device:
                self._device.move_to_end(key)
        if self._hicache and depth >= 0 and not in_host:
            last = prompt.boundary_keys[depth]
            if len(self._children.get(last, ())) > 1:
                return CacheMatch(0, device + host)  # shared prefix: served from the host tier
        return CacheMatch(device, host)

    def insert(self, prompt: RenderedPrompt) -> None:
        """Record every prefix of this prompt as device-resident, evicting LRU leaves."""
        parent = 0
        for key, tokens in zip(prompt.boundary_keys, prompt.part_tokens, strict=True):
            self._children.setdefault(parent, set()).add(key)
            parent = key
            if key in self._device:
                continue
            self._host.pop(key, None)
            self._device[key] = tokens
            self._device_tokens += tokens
        for key in reversed(prompt.boundary_keys):
            self._device.move_to_end(key)
        while self._device_tokens > self._capacity_tokens and len(self._device) > 1:
            key, tokens = self._device.popitem(last=False)
            self._device_tokens -= tokens
            if self._hicache:
                self._host[key] = tokens

    def flush(self) -> None:
        self._device.clear()
        self._host.clear()
        self._children.clear()
        self._device_tokens = 0
