"""What an engine's parse of a corpus case means beside repro's verdict, as one category.

For a clean case the engine must return the calls the model meant; for a corrupted case
(which repro flags) any call the engine returns is it accepting what it should not, either
the meant call (it recovered the deviation: repro stricter by design) or another.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tests.formats_corpus import Case

AGREE = "agree"
CLEAN_DROPPED = "healthy turn: engine returns fewer calls"
CLEAN_WRONG = "healthy turn: engine returns other calls or arguments"
CLEAN_ERROR = "healthy turn: engine raises"
RECOVERED = "corrupted turn: engine recovers the meant calls"
ACCEPTED_WRONG = "corrupted turn: engine returns wrong calls"
STREAM_SPLIT = "streamed parse differs from the engine's whole parse"
DISAGREEMENTS = (CLEAN_DROPPED, CLEAN_WRONG, CLEAN_ERROR, RECOVERED, ACCEPTED_WRONG, STREAM_SPLIT)


@dataclass(frozen=True, slots=True)
class Outcome:
    case: str
    engine: str
    mode: str  # "whole" or "streamed"
    category: str
    detail: str = ""


def _calls(parse: dict[str, Any]) -> list[tuple[str, Any]]:
    found = []
    for name, arguments in parse["calls"]:
        try:
            found.append((name, json.loads(arguments) if arguments else None))
        except ValueError:
            found.append((name, f"<not JSON: {arguments[:60]}>"))
    return found


def categorize(case: Case, parse: dict[str, Any]) -> tuple[str, str]:
    meant = [(name, dict(args)) for name, args in case.calls]
    got = _calls(parse)
    if case.clean:
        if parse["error"] and not got:
            return CLEAN_ERROR, parse["error"][:120]
        if got == meant:
            return AGREE, ""
        if len(got) < len(meant) and all(g in meant for g in got):
            return CLEAN_DROPPED, f"{len(got)} of {len(meant)} calls"
        return CLEAN_WRONG, _difference(meant, got)
    if not got:
        return AGREE, ""  # nothing returned: the corruption is not passed on as a call
    if got == meant:
        return RECOVERED, ""
    return ACCEPTED_WRONG, _difference(meant, got)


def _difference(meant: list, got: list) -> str:
    for i, (a, b) in enumerate(zip(meant, got, strict=False)):
        if a != b:
            return f"call {i}: meant {json.dumps(a, ensure_ascii=False)[:80]}, got {json.dumps(b, ensure_ascii=False)[:80]}"
    return f"meant {len(meant)} calls, got {len(got)}"


def outcomes(case: Case, engine: str, result: dict[str, Any]) -> list[Outcome]:
    """The whole parse's category, and the streamed parses': the first streamed split that
    disagrees with the whole parse is STREAM_SPLIT, else the streamed parses share the
    whole parse's category."""
    whole, detail = categorize(case, result["whole"])
    found = [Outcome(case.id, engine, "whole", whole, detail)]
    whole_calls = _calls(result["whole"])
    streamed = (whole, detail)
    for parse in result["streams"]:
        if _calls(parse) != whole_calls:
            got = categorize(case, parse)
            streamed = (STREAM_SPLIT, f"{got[0]}; {got[1]}".strip("; "))
            break
    found.append(Outcome(case.id, engine, "streamed", *streamed))
    return found


def char_splits(
    text: str, seed: int, atoms: tuple[str, ...] = (), count: int = 2
) -> list[list[str]]:
    """`count` random splits of a text into chunks of 1 to 12 characters (several tokens:
    stream_interval > 1, speculative decoding, batched detokenization). A chunk never ends
    inside one of `atoms`, the family's single-token markers: a server streams whole tokens."""
    rng = random.Random(seed)
    inside = set()
    for atom in atoms:
        at = text.find(atom)
        while at != -1:
            inside.update(range(at + 1, at + len(atom)))
            at = text.find(atom, at + 1)
    splits = []
    for _ in range(count):
        chunks, at = [], 0
        while at < len(text):
            end = at + rng.choice((1, 2, 3, 4, 6, 8, 12))
            while end in inside:  # move the cut past the marker it would split
                end += 1
            chunks.append(text[at:end])
            at = end
        splits.append(chunks or [""])
    return splits
