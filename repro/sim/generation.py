"""One request's state inside the engine, from arrival to its last token."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from repro.dsml.markers import THINK_CLOSE
from repro.sim.cache import CacheMatch, Reservation
from repro.sim.prompt import RenderedPrompt

NO_MATCH = CacheMatch(0, 0)


@dataclass(slots=True, eq=False)
class Generation:
    """Mutable on purpose: the scheduler advances it step by step.

    `tokens` is the planned completion (empty on a prefill server); the scheduler puts
    lists of token strings on `out` as they are "generated", then None when it ends.
    """

    rid: str
    prompt: RenderedPrompt
    tokens: list[str]
    room: int | None = None
    out: asyncio.Queue[list[str] | None] = field(default_factory=asyncio.Queue)
    prefilled: asyncio.Event = field(default_factory=asyncio.Event)
    match: CacheMatch = NO_MATCH
    emitted_tokens: int = 0
    finish_reason: str | None = None  # "stop" | "length" | "abort"
    max_tokens: int | None = None
    arrived_at_s: float = 0.0  # modelled clock
    first_token_at_s: float | None = None
    key: int = 0  # stable across processes and runs: seeds this request's timing noise
    bootstrap_addr: tuple[str, int] | None = None  # decode side: the prefill's bootstrap server
    slot_previous_rid: str | None = None  # whose bytes this request's slot held before it
    index_k_stale: bool = False
    handover_stuck: bool = False  # PD prefill: its index-K part will never be ready to send
    reservation: Reservation | None = None  # its pages in the device pool, while it holds them
    think_close: str = THINK_CLOSE  # the model family's reasoning end (near-ties are before it)
    think_open: str = ""  # ... and its opening marker (near-ties are after it)

    @property
    def prompt_tokens(self) -> int:
        return self.prompt.prompt_tokens

    @property
    def context_tokens(self) -> int:
        return self.prompt.prompt_tokens + self.emitted_tokens

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None
