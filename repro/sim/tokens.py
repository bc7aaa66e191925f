"""The simulator's tokenizer model: special tokens are one token, other text ~4 bytes a token.

No model's real tokenizer is shipped (no weights, no hub access), so the engine models one:
each special token is a single token, as in the real vocabularies, and the text between them
is cut into pieces of at least 4 UTF-8 bytes without splitting a character. Counting and
splitting agree: `count_tokens(t) == len(split_tokens(t))`.

DeepSeek-V3.2's special tokens (`｜DSML｜`, BOS, EOS, `<think>`, `</think>`, the role
markers; research/dsml.md §1.1) are the default `Tokenizer`'s; each other tool-call format
has its own (repro/sim/formats/), its markers as single tokens where its vocabulary has them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from repro.dsml.markers import BAR, BOS, DSML, EOS, THINK_CLOSE, THINK_OPEN

USER = f"<{BAR}User{BAR}>"
ASSISTANT = f"<{BAR}Assistant{BAR}>"
SPECIAL_TOKENS: tuple[str, ...] = (DSML, BOS, EOS, THINK_OPEN, THINK_CLOSE, USER, ASSISTANT)
BYTES_PER_TOKEN = 4


def _text_pieces(text: str) -> list[str]:
    """Cut plain text into pieces of >= 4 UTF-8 bytes (the last one may be shorter)."""
    if text.isascii():
        return [text[i : i + BYTES_PER_TOKEN] for i in range(0, len(text), BYTES_PER_TOKEN)]
    pieces: list[str] = []
    start = 0
    size_bytes = 0
    for i, ch in enumerate(text):
        size_bytes += len(ch.encode())
        if size_bytes >= BYTES_PER_TOKEN:
            pieces.append(text[start : i + 1])
            start, size_bytes = i + 1, 0
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _text_count(text: str) -> int:
    if text.isascii():
        return -(-len(text) // BYTES_PER_TOKEN)
    return len(_text_pieces(text))


class Tokenizer:
    """Splits and counts text with `specials` as single tokens (the longest one first)."""

    __slots__ = ("_special_re", "specials")

    def __init__(self, specials: Iterable[str]) -> None:
        self.specials = tuple(dict.fromkeys(specials))
        self._special_re = re.compile(
            "|".join(re.escape(t) for t in sorted(self.specials, key=len, reverse=True))
        )

    def split(self, text: str) -> list[str]:
        """The token strings of `text`; joining them gives `text` back."""
        tokens: list[str] = []
        last = 0
        for match in self._special_re.finditer(text):
            tokens.extend(_text_pieces(text[last : match.start()]))
            tokens.append(match.group())
            last = match.end()
        tokens.extend(_text_pieces(text[last:]))
        return tokens

    def count(self, text: str) -> int:
        """len(split(text)) without building the list; O(len(text)), mostly in C."""
        count = 0
        last = 0
        for match in self._special_re.finditer(text):
            count += _text_count(text[last : match.start()]) + 1
            last = match.end()
        return count + _text_count(text[last:])


DSML_TOKENIZER = Tokenizer(SPECIAL_TOKENS)


def split_tokens(text: str) -> list[str]:
    """DeepSeek-V3.2's token strings of `text`; joining them gives `text` back."""
    return DSML_TOKENIZER.split(text)


def count_tokens(text: str) -> int:
    """len(split_tokens(text)) without building the list."""
    return DSML_TOKENIZER.count(text)
