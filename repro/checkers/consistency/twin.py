"""The stream oracle's verdict: one request answered streamed and unstreamed, at the same time.

Both must agree on every choice's content, reasoning, tool calls (names, and arguments as
parsed JSON, so spacing or key order a serialiser chose is no difference) and finish_reason,
and on usage: the prompt tokens always, the completion tokens where the texts agree. Where
the texts part, the tokens (logprobs, when both sides have them) class it as the divergence
oracle does: a near tie that flipped between two batches is `numerical` and never counted;
the same tokens written as different text are the output path's fault, and counted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from repro.checkers.consistency.answer import ServedAnswer, ServedChoice
from repro.checkers.consistency.rules import Broken
from repro.checkers.divergence import (
    Answer,
    Divergence,
    DivergenceKind,
    ScoredToken,
    compare,
    scored_tokens,
)
from repro.checkers.json_codec import read_json
from repro.checkers.verdict import Defect

SHOWN = 40  # characters of each side shown where they part


class TwinKind(StrEnum):
    AGREE = "agree"
    NUMERICAL = "numerical"  # parted at a near tie: not counted
    DISAGREE = "disagree"  # counted: stream_disagrees


@dataclass(frozen=True, slots=True)
class TwinVerdict:
    kind: TwinKind
    where: str = ""  # e.g. "choices[0].content:102" or "usage.prompt_tokens"
    message: str = ""

    @property
    def counts(self) -> bool:
        return self.kind is TwinKind.DISAGREE

    def defect(self) -> Defect:
        return Defect(Broken.STREAM_DISAGREES, 0, self.message, self.where or "stream")


def compare_twins(
    streamed: ServedAnswer, whole: ServedAnswer, numerical_margin_nats: float
) -> TwinVerdict:
    """The streamed answer against the unstreamed one to the same request."""
    if (
        streamed.prompt_tokens is not None
        and whole.prompt_tokens is not None
        and streamed.prompt_tokens != whole.prompt_tokens
    ):
        return TwinVerdict(
            TwinKind.DISAGREE,
            "usage.prompt_tokens",
            f"prompt_tokens {streamed.prompt_tokens} streamed, {whole.prompt_tokens} unstreamed",
        )
    mine, theirs = _by_index(streamed), _by_index(whole)
    if set(mine) != set(theirs):
        return TwinVerdict(
            TwinKind.DISAGREE,
            "choices",
            f"choices {sorted(mine)} streamed, {sorted(theirs)} unstreamed",
        )
    numerical: TwinVerdict | None = None
    all_agree = True
    for index in sorted(mine):
        verdict = _choice(mine[index], theirs[index], numerical_margin_nats)
        if verdict.kind is TwinKind.DISAGREE:
            return verdict
        if verdict.kind is TwinKind.NUMERICAL:
            numerical, all_agree = numerical or verdict, False
    if not all_agree:
        return numerical or TwinVerdict(TwinKind.NUMERICAL)
    if streamed.completion_tokens != whole.completion_tokens and None not in (
        streamed.completion_tokens,
        whole.completion_tokens,
    ):
        return TwinVerdict(
            TwinKind.DISAGREE,
            "usage.completion_tokens",
            f"the same text from {streamed.completion_tokens} completion tokens streamed and "
            f"{whole.completion_tokens} unstreamed",
        )
    return TwinVerdict(TwinKind.AGREE)


def _by_index(answer: ServedAnswer) -> dict[int, ServedChoice]:
    return {c.index: c for c in answer.choices}


def _calls_json(choice: ServedChoice) -> str:
    """The calls with their arguments as parsed JSON (sorted keys), so only a real difference
    in what was called shows; arguments that do not parse are compared as sent."""
    calls = []
    for call in choice.calls:
        try:
            arguments: object = read_json(call.arguments)
        except (ValueError, RecursionError):
            arguments = call.arguments
        calls.append({"name": call.name, "arguments": arguments})
    return json.dumps(calls, ensure_ascii=False, sort_keys=True)


def _choice(mine: ServedChoice, theirs: ServedChoice, margin_nats: float) -> TwinVerdict:
    where = f"choices[{mine.index}]"
    calls_a, calls_b = _calls_json(mine), _calls_json(theirs)
    same_text = (mine.reasoning, mine.content, calls_a) == (
        theirs.reasoning,
        theirs.content,
        calls_b,
    )
    if same_text:
        # The same text may come from other tokens (two numbers that parse alike: 926e-93...
        # and 0.0): where both sides' tokens part, that is a near tie or not, by logprobs.
        # A list that only runs shorter is no difference: SGLang sends fewer logprob entries.
        a_tokens, b_tokens = scored_tokens(mine.logprobs), scored_tokens(theirs.logprobs)
        if _tokens_part(a_tokens, b_tokens):
            a = Answer(mine.reasoning, mine.content, calls_a, a_tokens)
            found = compare(
                a, Answer(theirs.reasoning, theirs.content, calls_b, b_tokens), margin_nats
            )
            kind = (
                TwinKind.NUMERICAL if found.kind is DivergenceKind.NUMERICAL else TwinKind.DISAGREE
            )
            return TwinVerdict(kind, f"{where}.tokens", found.describe())
        if mine.finish_reason != theirs.finish_reason:
            return TwinVerdict(
                TwinKind.DISAGREE,
                f"{where}.finish_reason",
                f"finish_reason {mine.finish_reason!r} streamed, {theirs.finish_reason!r} "
                "unstreamed",
            )
        return TwinVerdict(TwinKind.AGREE)
    a = Answer(mine.reasoning, mine.content, calls_a, scored_tokens(mine.logprobs))
    b = Answer(theirs.reasoning, theirs.content, calls_b, scored_tokens(theirs.logprobs))
    found = compare(a, b, margin_nats)
    if found.kind is DivergenceKind.NUMERICAL:
        return TwinVerdict(TwinKind.NUMERICAL, f"{where}.{found.field}", found.describe())
    return TwinVerdict(TwinKind.DISAGREE, f"{where}.{found.field}", _where_they_part(a, b, found))


def _tokens_part(a: Sequence[ScoredToken], b: Sequence[ScoredToken]) -> bool:
    """Whether two token lists hold another token at some position both reach."""
    return any(x.token != y.token for x, y in zip(a, b, strict=False))


def _where_they_part(streamed: Answer, whole: Answer, found: Divergence) -> str:
    """Both sides at the first character where their texts part, and why it counts."""
    field, at = found.field, found.char_offset or 0
    mine, theirs = streamed.text(field)[at : at + SHOWN], whole.text(field)[at : at + SHOWN]
    what = f"{field} parts at character {at}: streamed {mine!r}, unstreamed {theirs!r}"
    if found.token_offset is not None and found.note:
        what += f" (token {found.token_offset}: {found.note})"
    elif found.note:
        what += f" ({found.note})"
    return what
