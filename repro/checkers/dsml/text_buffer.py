"""The text a parser has been fed: appended in pieces, searched for stop strings, trimmed
behind the reader. Positions are absolute (from the start of the whole text)."""

from __future__ import annotations

TRIM_CHARS = 1 << 16  # consumed text is dropped once this much has piled up


class TextBuffer:
    __slots__ = ("_found", "_pending", "base", "pending_chars", "text")

    def __init__(self) -> None:
        self.text = ""
        self.base = 0  # absolute position of text[0]
        self._pending: list[str] = []
        self.pending_chars = 0
        self._found: dict[str, tuple[int, int]] = {}  # stop -> (position or -1, searched to)

    @property
    def end(self) -> int:
        return self.base + len(self.text)

    def add(self, chunk: str) -> None:
        """Queue a piece; `absorb` appends everything queued at once (one copy, not many)."""
        self._pending.append(chunk)
        self.pending_chars += len(chunk)

    def absorb(self, keep_from: int) -> None:
        """Append the queued pieces, dropping text before `keep_from` if enough piled up."""
        if not self._pending:
            return
        new = "".join(self._pending)
        self._pending.clear()
        self.pending_chars = 0
        if keep_from - self.base > TRIM_CHARS:
            self.text = self.text[keep_from - self.base :] + new
            self.base = keep_from
        else:
            self.text += new

    def slice(self, lo: int, hi: int) -> str:
        return self.text[lo - self.base : hi - self.base]

    def next(self, stop: str, start: int) -> int:
        """Absolute position of the first `stop` at or after `start`, or -1 (not yet seen).

        Each stop's last answer is remembered, so a stop far ahead is searched for once
        and a missing one only through text that has arrived since. `start` never goes
        back from one call to the next for the same stop.
        """
        begin = start
        known = self._found.get(stop)
        if known is not None:
            pos, searched_to = known
            if pos >= start:
                return pos
            if pos == -1:
                begin = max(start, searched_to - len(stop) + 1)
        i = self.text.find(stop, max(begin, self.base) - self.base)
        pos = -1 if i == -1 else i + self.base
        self._found[stop] = (pos, self.end)
        return pos
