"""Realistic corruptions of a completion, at pseudo-token boundaries.

The V3.2 tokenizer is not available offline; the pseudo-tokens here follow its shape for
markup: `｜DSML｜` and each `<｜…｜>` special token are single tokens, words and runs of
whitespace are tokens, any other character is one.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from repro.dsml.markers import BAR, DSML

_TOKEN = re.compile(f"{re.escape(DSML)}|<{BAR}[^{BAR}<>\n]{{1,40}}{BAR}>|\\w+|\\s+|.", re.DOTALL)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


@dataclass(frozen=True, slots=True)
class Corruption:
    name: str
    text: str
    finish_reason: str | None = None


def corrupt(text: str, other: str, rng: random.Random) -> Corruption:
    """One corruption of `text`, chosen at random; `other` is another output to splice from."""
    toks = tokens(text)
    i = rng.randrange(len(toks)) if toks else 0
    kind = rng.choice(
        (
            "drop",
            "double",
            "splice",
            "replace",
            "ascii_bar",
            "ascii_bars",
            "double_bars",
            "strip_dsml",
            "truncate",
            "truncate_length",
        )
    )
    if kind == "drop" and toks:
        return Corruption(kind, "".join(toks[:i] + toks[i + 1 :]))
    if kind == "double" and toks:
        return Corruption(kind, "".join(toks[: i + 1] + toks[i:]))
    if kind in ("splice", "replace"):
        other_toks = tokens(other) or ["x"]
        a = rng.randrange(len(other_toks))
        b = min(len(other_toks), a + rng.randint(1, 40))
        gone = rng.randint(1, 20) if kind == "replace" else 0
        return Corruption(kind, "".join(toks[:i] + other_toks[a:b] + toks[i + gone :]))
    if kind == "ascii_bar" and BAR in text:
        spots = [m.start() for m in re.finditer(BAR, text)]
        at = rng.choice(spots)
        return Corruption(kind, text[:at] + "|" + text[at + 1 :])
    if kind == "ascii_bars" and BAR in text:
        return Corruption(kind, text.replace(DSML, "|DSML|"))
    if kind == "double_bars" and DSML in text:
        return Corruption(kind, text.replace(DSML, f"{BAR}{BAR}DSML{BAR}{BAR}", 1))
    if kind == "strip_dsml" and DSML in text:
        return Corruption(kind, text.replace(DSML, ""))
    if kind == "truncate_length":
        return Corruption(kind, "".join(toks[:i]), "length")
    return Corruption("truncate", "".join(toks[:i]))
