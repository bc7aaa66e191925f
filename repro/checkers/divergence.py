"""The divergence oracle's verdict: a turn answered under load against the same request alone.

At temperature 0 a batch-invariant engine must answer a request the same whatever else is
in flight, so the first token where the two answers part is the evidence. With logprobs it
is classed: `numerical` when the reference scored the loaded token within a margin of its
own choice (a near-tie that flipped: a kernel that is not batch-invariant, not a bug that
corrupts), `corrupt` when the loaded answer picked a token the reference scored far below
its own choice or not at all. Without logprobs every divergence is `diverged` and counts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class DivergenceKind(StrEnum):
    IDENTICAL = "identical"
    NUMERICAL = "numerical"  # a near-tie flipped; not counted as corruption
    CORRUPT = "corrupt"
    DIVERGED = "diverged"  # no logprobs to class it by: counted, as corrupt is


COUNTED = frozenset({DivergenceKind.CORRUPT, DivergenceKind.DIVERGED})
TEXT_FIELDS = ("reasoning", "content", "tool_calls")


@dataclass(frozen=True, slots=True)
class ScoredToken:
    """One generated token: its logprob, the top-2 margin, and (reference side) its top-k."""

    token: str
    logprob: float | None
    margin: float | None  # top-1 minus top-2 logprob, when the engine gave two
    top: tuple[tuple[str, float], ...] = ()  # as the engine listed them


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer to a request: its texts, and its tokens when the engine gave logprobs."""

    reasoning: str = ""
    content: str = ""
    tool_calls: str = "[]"  # JSON list of {"name", "arguments"}
    tokens: tuple[ScoredToken, ...] = ()

    def text(self, field: str) -> str:
        return str(getattr(self, field))


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where (and how) a loaded answer parts from its reference; `identical` when it does not.

    Offsets: `token_offset` counts generated tokens (logprobs); `field` and `char_offset`
    say where the texts part (reasoning, content, or the tool calls' JSON).
    """

    kind: DivergenceKind
    token_offset: int | None = None
    field: str = ""
    char_offset: int | None = None
    loaded_token: str | None = None
    reference_token: str | None = None
    loaded_logprob: float | None = None
    loaded_margin: float | None = None
    reference_logprob: float | None = None
    reference_margin: float | None = None
    reference_logprob_of_loaded: float | None = None  # None: not among the reference's top-k
    note: str = ""
    by_tokens: bool = False  # both sides gave logprobs: compared token by token

    @property
    def counts(self) -> bool:
        """Corruption as the gate sees it: corrupt, or unclassed for want of logprobs."""
        return self.kind in COUNTED

    @property
    def gap_nats(self) -> float | None:
        """How far below its own choice the reference scored the loaded token (None: unknown)."""
        if self.reference_logprob is None or self.reference_logprob_of_loaded is None:
            return None
        return self.reference_logprob - self.reference_logprob_of_loaded

    def describe(self) -> str:
        """One line for reports: where the answers part and what each side chose there."""
        if self.kind is DivergenceKind.IDENTICAL:
            return "identical to the reference"
        where = f"{self.field}:{self.char_offset}" if self.field else "?"
        what = f"{self.kind}@{where}"
        if self.token_offset is not None:
            what += f" (token {self.token_offset})"
        sides = f"loaded {self.loaded_token!r} where the reference has {self.reference_token!r}"
        gap = self.gap_nats
        if gap is not None:
            sides += f", {gap:.2f} nats below its choice"
        elif self.kind is DivergenceKind.CORRUPT and self.reference_token is not None:
            sides += ", not among its top choices"
        return f"{what}: {sides}" + (f"; {self.note}" if self.note else "")


def scored_tokens(items: Iterable[Any], keep_top: bool = True) -> tuple[ScoredToken, ...]:
    """OpenAI `logprobs.content` items as ScoredTokens; () when any item is malformed.

    The load runs this on every token of every turn, so it stays lean there: with
    `keep_top=False` only the top-2 margin is kept (the reference's alternatives are looked
    up where the answers part; the loaded side's are never needed).
    """
    tokens = []
    try:
        for item in items:
            token = item["token"]
            if not isinstance(token, str):
                return ()
            pairs = [(alt["token"], alt["logprob"]) for alt in item.get("top_logprobs") or ()]
            top = tuple((t, float(lp)) for t, lp in pairs if _finite(lp) is not None)
            best = sorted((lp for _, lp in top), reverse=True)[:2]
            margin = best[0] - best[1] if len(best) == 2 else None
            tokens.append(
                ScoredToken(token, _finite(item.get("logprob")), margin, top if keep_top else ())
            )
    except (KeyError, TypeError, AttributeError):
        return ()
    return tuple(tokens)


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _first_difference(a: str, b: str) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _text_divergence(loaded: Answer, reference: Answer) -> tuple[str, int] | None:
    for field in TEXT_FIELDS:
        offset = _first_difference(loaded.text(field), reference.text(field))
        if offset is not None:
            return field, offset
    return None


def _first_token_difference(a: Sequence[ScoredToken], b: Sequence[ScoredToken]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x.token != y.token:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _text_parts_before(reference: Answer, field: str, char_offset: int | None, k: int) -> bool:
    """True when the texts part inside what the first k tokens (the same on both sides) wrote:
    a change on the output path, which a flipped near-tie later on must not hide. Decided over
    the stretch where the reference's text is its tokens written out (a parser's reshaping
    or an incomplete UTF-8 sequence ends it)."""
    shared = "".join(t.token for t in reference.tokens[:k])
    written_out = _first_difference(reference.text(field), shared)
    agree = len(shared) if written_out is None else written_out
    return char_offset is not None and char_offset < agree


def compare(loaded: Answer, reference: Answer, numerical_margin_nats: float) -> Divergence:
    """The verdict for one turn; `numerical_margin_nats` separates a flipped near-tie from corruption."""
    text = _text_divergence(loaded, reference)
    field, char_offset = text if text else ("", None)
    if not loaded.tokens or not reference.tokens:
        if text is None:
            return Divergence(DivergenceKind.IDENTICAL)
        return Divergence(
            DivergenceKind.DIVERGED,
            field=field,
            char_offset=char_offset,
            loaded_token=_around(loaded.text(field), char_offset),
            reference_token=_around(reference.text(field), char_offset),
            note="no logprobs on both sides, so it is not classed",
        )
    k = _first_token_difference(loaded.tokens, reference.tokens)
    if k is None:
        if text is None:
            return Divergence(DivergenceKind.IDENTICAL, by_tokens=True)
        return Divergence(
            DivergenceKind.CORRUPT,
            field=field,
            char_offset=char_offset,
            note="the same tokens gave different text: the output path (detokenizer or parser) differs",
            by_tokens=True,
        )
    # A parser that took the text as calls on one side only decided on later tokens (a call
    # cut by max_tokens fails to parse whole and comes back as content): no output path.
    reshaped = (loaded.tool_calls == "[]") != (reference.tool_calls == "[]")
    if field and not reshaped and _text_parts_before(reference, field, char_offset, k):
        return Divergence(
            DivergenceKind.CORRUPT,
            token_offset=k,
            field=field,
            char_offset=char_offset,
            loaded_token=_around(loaded.text(field), char_offset),
            reference_token=_around(reference.text(field), char_offset),
            note="the text parts where the tokens are still the same: the output path differs",
            by_tokens=True,
        )
    mine = loaded.tokens[k] if k < len(loaded.tokens) else None
    theirs = reference.tokens[k] if k < len(reference.tokens) else None
    verdict = Divergence(
        DivergenceKind.CORRUPT,
        token_offset=k,
        field=field,
        char_offset=char_offset,
        loaded_token=mine.token if mine else None,
        reference_token=theirs.token if theirs else None,
        loaded_logprob=mine.logprob if mine else None,
        loaded_margin=mine.margin if mine else None,
        reference_logprob=theirs.logprob if theirs else None,
        reference_margin=theirs.margin if theirs else None,
        by_tokens=True,
    )
    if mine is None or theirs is None:
        ended = "the loaded answer ended" if mine is None else "the reference ended"
        return dataclasses.replace(verdict, note=f"{ended} here")
    if not theirs.top:
        return dataclasses.replace(
            verdict, kind=DivergenceKind.DIVERGED, note="the reference gave no alternatives"
        )
    of_loaded = dict(theirs.top).get(mine.token)
    verdict = dataclasses.replace(verdict, reference_logprob_of_loaded=of_loaded)
    gap = verdict.gap_nats
    if gap is not None and gap < numerical_margin_nats:
        return dataclasses.replace(verdict, kind=DivergenceKind.NUMERICAL)
    if gap is None and theirs.logprob is not None:
        # Not listed: the reference scored it below its last alternative, and no lower. Where
        # the listed ones lie within the margin (a flat distribution, as a random model's),
        # that is no proof it lies far below: a near tie among many, not counted.
        spread = theirs.logprob - min(lp for _, lp in theirs.top)
        if spread < numerical_margin_nats:
            note = (
                f"not among the reference's top {len(theirs.top)}, which lie within "
                f"{spread:.2f} nats of its choice: too flat to tell a flip from corruption"
            )
            return dataclasses.replace(verdict, kind=DivergenceKind.NUMERICAL, note=note)
    return verdict


def _around(text: str, offset: int | None, width: int = 12) -> str:
    """A few characters from where the texts part, to show in a report."""
    return "" if offset is None else text[offset : offset + width]
