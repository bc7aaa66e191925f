"""Modelled logprobs: for each generated token, its logprob and the top-k alternatives.

No model runs, so the scores are a deterministic function of the request (its key), the
position and the token the scripted agent planned there. Most positions have a wide margin
between the planned token and the runner-up (2-12 nats); a few word pieces of the reasoning
are near-ties (under 0.3 nats): two continuations almost equally likely, where a kernel that
is not batch-invariant can flip the order (near_tie.py). The runner-up is the planned piece
with the case of its first letter swapped ("The" / "the"), so a flip stays plain text.

What the engine emitted is scored against the plan: the planned token as planned; the
runner-up at a near-tie as a flipped near-tie (it now leads by a hair); anything else (bytes
a stale index-K read spliced in) as the corrupted forward scored it, confidently.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

from repro.dsml.markers import EOS, THINK_CLOSE

NEAR_TIE_SHARE = 0.04  # of the reasoning's word pieces (those with a letter to flip)
NEAR_TIE_NATS = (0.005, 0.3)
WIDE_NATS = (2.0, 12.0)
FLIPPED_LEAD = 0.05  # a flipped near-tie leads by this share of its margin
SPLICED_LOGPROB = -0.02  # the corrupted forward is sure of the bytes it read
OTHER_MASS = 0.02  # probability left to tokens outside the top two
# Plausible lower alternatives filling the rest of the top-k.
FILLERS = (" the", " and", ",", ".", " to", "\n", " of", " a", " is", " in", " it", ":",
           " that", " for", " on", " with", " as", " be", " this", " we")  # fmt: skip


def unit(key: int, position: int, salt: str) -> float:
    """A uniform draw in [0, 1) fixed by (request key, position, purpose)."""
    return zlib.crc32(f"{key}:{position}:{salt}".encode()) / 2**32


def _draws(key: int, position: int) -> tuple[float, float, int]:
    """Two uniform draws and a hash for one position, from one CRC (this runs per token)."""
    h = zlib.crc32(b"%d:%d" % (key, position))
    return (h & 0xFFFF) / 65536, (h >> 16) / 65536, h


def _has_letter(token: str) -> bool:
    return token.lower() != token.upper()


def runner_up(token: str) -> str:
    """The planned piece with its first letter's case swapped; a mark added if it has none."""
    for i, ch in enumerate(token):
        if ch.lower() != ch.upper():
            return token[:i] + ch.swapcase() + token[i + 1 :]
    return token + "\u00b7"


def reasoning_start(tokens: Sequence[str], think_open: str) -> int:
    """Index of the reasoning's first token after the family's opening marker (`<think>`,
    Harmony's analysis header), which a near tie never touches; 0 when there is none."""
    if not think_open:
        return 0
    text = ""
    for i, token in enumerate(tokens):
        text += token
        stripped = text.lstrip()
        if stripped == think_open:
            return i + 1
        if not think_open.startswith(stripped):
            return 0
    return 0


def reasoning_end(tokens: Sequence[str], think_close: str = THINK_CLOSE) -> int:
    """Index of the reasoning's end (`</think>`, or the model family's own) in the planned
    tokens (0 when the turn has no reasoning)."""
    for i, token in enumerate(tokens):
        if token == think_close:
            return i
    return 0


class LogprobModel:
    """Scores for one request's generated tokens, given what its script planned."""

    def __init__(
        self,
        key: int,
        planned: Sequence[str],
        top_k: int,
        think_close: str = THINK_CLOSE,
        think_open: str = "",
    ) -> None:
        self.key = key
        self.planned = tuple(planned)
        self.top_k = top_k
        self._reasoning_end = reasoning_end(self.planned, think_close)
        self._reasoning_start = reasoning_start(self.planned, think_open)

    def near_tie(self, position: int) -> bool:
        """A reasoning word piece whose runner-up is nearly as likely as the planned token."""
        return self._near_tie(position, _draws(self.key, position)[0])

    def _near_tie(self, position: int, tie_draw: float) -> bool:
        return (
            self._reasoning_start <= position < self._reasoning_end
            and tie_draw < NEAR_TIE_SHARE
            and _has_letter(self.planned[position])
        )

    def margin_nats(self, position: int) -> float:
        """log p(planned) - log p(runner-up) at this position."""
        tie_draw, margin_draw, _ = _draws(self.key, position)
        low, high = NEAR_TIE_NATS if self._near_tie(position, tie_draw) else WIDE_NATS
        return low + (high - low) * margin_draw

    def entry(self, position: int, emitted: str) -> dict[str, Any]:
        """One `logprobs.content` item (OpenAI's shape) for the token emitted here."""
        tie_draw, margin_draw, h = _draws(self.key, position)
        planned = self.planned[position] if position < len(self.planned) else None
        near_tie = planned is not None and self._near_tie(position, tie_draw)
        low, high = NEAR_TIE_NATS if near_tie else WIDE_NATS
        margin = low + (high - low) * margin_draw
        # Logprobs in units of 1e-4 nats: integers until the end, so the JSON stays short.
        if emitted == planned:
            first = int(math.log((1 - OTHER_MASS) / (1 + math.exp(-margin))) * 10_000)
            top = [(emitted, first), (runner_up(emitted), first - int(margin * 10_000))]
        elif near_tie and emitted == runner_up(planned):  # type: ignore[arg-type]
            lead = FLIPPED_LEAD * margin
            first = int(math.log((1 - OTHER_MASS) / (1 + math.exp(-lead))) * 10_000)
            top = [(emitted, first), (planned, first - int(lead * 10_000))]
        else:
            first = int(SPLICED_LOGPROB * 10_000)
            top = [(emitted, first), (runner_up(emitted), first - 80_000)]
        j = 0
        while len(top) < self.top_k and j < len(FILLERS):
            filler = FILLERS[(h + j) % len(FILLERS)]
            j += 1
            if filler != top[0][0] and filler != top[1][0]:
                top.append((filler, top[-1][1] - 15_000))
        return {
            "token": emitted,
            "logprob": first / 10_000,
            "top_logprobs": [
                {"token": t, "logprob": lp / 10_000} for t, lp in top[: max(self.top_k, 0)]
            ],
        }

    def entries(self, first_position: int, tokens: Sequence[str]) -> list[dict[str, Any]]:
        """Items for a run of emitted tokens starting at `first_position`; EOS is never text."""
        return [
            self.entry(first_position + i, token) for i, token in enumerate(tokens) if token != EOS
        ]
