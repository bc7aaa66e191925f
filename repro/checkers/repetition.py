"""Runaway repetition, found by sampling probes; two rules, each a stretch of periodic text:

- a long run: at least `MIN_RUN_CHARS` characters repeating one unit of at most
  `MAX_PERIOD_CHARS` at least `MIN_REPEATS` times;
- a short loop (a model stuck on a word: `the the the ...`): a unit of at most
  `LOOP_MAX_PERIOD_CHARS` repeated `LOOP_MIN_REPEATS` times (a last copy missing at most
  half its unit counts), over at least `LOOP_MIN_CHARS` (so a single character needs 160).
  Legitimate text repeats short units too (rulers, indentation, table borders, base64 of
  zeros, hex, `NA,NA,...` and `true,true,...` in data), so the unit must be a word's: hold a
  lowercase or caseless letter (not an uppercase-only token such as NA or NULL, not a
  modifier letter such as the prolonged sound mark), and a character that is neither in the
  base64 alphabet nor a field separator (a space, punctuation, a CJK character).

Every `PROBE_STRIDE_CHARS` characters a probe takes the next `PROBE_CHARS` characters. For
a long run, it finds where they recur within `MAX_PERIOD_CHARS` and checks whether the text
from the probe on is periodic with that distance for `max(MIN_RUN_CHARS, MIN_REPEATS *
period)` characters. For a loop, it asks whether they have a period of at most
`LOOP_MAX_PERIOD_CHARS`: the long rule's own search answers that where it has run, so loops
cost almost nothing there. A probe reads only a bounded window, so streaming gives
whole-text results; each rule's first stretch is kept and the earlier one is reported.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

PROBE_STRIDE_CHARS = 128
PROBE_CHARS = 32
MAX_PERIOD_CHARS = 512
MIN_REPEATS = 8
MIN_RUN_CHARS = 512
BACK_LIMIT_CHARS = 1024  # how far back a found run's start is traced
_CANDIDATES = 4  # recurrences of a probe tried as the period
LOOKAHEAD_CHARS = max(MIN_RUN_CHARS, MIN_REPEATS * MAX_PERIOD_CHARS) + PROBE_CHARS

LOOP_MIN_REPEATS = 100
# Longer units repeated so often make a long run, which the first rule finds.
LOOP_MAX_PERIOD_CHARS = MIN_RUN_CHARS // LOOP_MIN_REPEATS
# A stretch this long holds a whole probe wherever the probes fall: the same probes serve
# both rules. Only a single character needs more than 100 copies to reach it.
LOOP_MIN_CHARS = PROBE_STRIDE_CHARS + PROBE_CHARS
LOOP_BACK_CHARS = LOOP_MIN_CHARS  # a loop starts at most this far before its first probe
# Characters that data repeats: base64 (and so hex and digits) and field separators.
_DATA = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=,;|\t\n")
_WORD_LETTERS = frozenset(("Ll", "Lt", "Lo"))  # lowercase, titlecase, caseless (CJK, Thai...)


@dataclass(frozen=True, slots=True)
class Run:
    offset: int
    period_chars: int
    repeats: int
    unit: str = ""  # the repeated unit, for a short loop (as it starts at `offset`)


class RepetitionProbe:
    """Feeds on a growing text (a buffer and its absolute offset) and keeps the first run."""

    __slots__ = ("long_run", "loop", "next_loop_probe", "next_probe")

    def __init__(self) -> None:
        self.next_probe = 0
        self.next_loop_probe = 0
        self.long_run: Run | None = None
        self.loop: Run | None = None

    @property
    def run(self) -> Run | None:
        """The earlier of the two rules' first stretches."""
        if self.loop is None or self.long_run is None:
            return self.long_run or self.loop
        return self.loop if self.loop.offset < self.long_run.offset else self.long_run

    def keep_from(self) -> int:
        """The earliest absolute offset a later probe may still read."""
        return min(self.next_probe - BACK_LIMIT_CHARS, self.next_loop_probe - LOOP_BACK_CHARS)

    def advance(self, buf: str, base: int, final: bool) -> None:
        end = base + len(buf)
        if self.long_run is None and end - self.next_probe >= MIN_RUN_CHARS:
            self._advance_runs(buf, base, final)
        if self.loop is None and end - self.next_loop_probe >= PROBE_CHARS:
            self._advance_loops(buf, base, final)

    def _advance_runs(self, buf: str, base: int, final: bool) -> None:
        end = base + len(buf)
        # A probe finds a run only if at least MIN_RUN_CHARS follow it: at the end of the
        # text, later probes could not, so they are not taken.
        ahead = MIN_RUN_CHARS if final else LOOKAHEAD_CHARS
        probes = range(self.next_probe, end - ahead + 1, PROBE_STRIDE_CHARS)
        for i in probes:
            k = i - base
            probe = buf[k : k + PROBE_CHARS]
            # A period needs MIN_REPEATS copies before the text ends: near the end only
            # short periods can make a run, so only their recurrences are looked for.
            longest = (end - i) // MIN_REPEATS
            stop = k + PROBE_CHARS + (longest if longest < MAX_PERIOD_CHARS else MAX_PERIOD_CHARS)
            if probe not in buf[k + 1 : stop]:  # most probes end here: nothing recurs
                continue  # (`in` on a slice: cheaper than find() and its arguments)
            j = buf.find(probe, k + 1, stop)
            if j - k <= LOOP_MAX_PERIOD_CHARS and i >= self.next_loop_probe:
                # The probe has a period of at most 5: the loop rule's question, answered.
                self._loop_at(buf, base, i)
            if (run := self._try(buf, base, i, probe, stop, j)) is not None:
                self.long_run = run
                self.next_probe = i + PROBE_STRIDE_CHARS
                break
        else:
            if probes:
                self.next_probe = probes[-1] + PROBE_STRIDE_CHARS
        # Every probe the loop above took was also a loop probe (a probe without a
        # recurrence has no period either).
        self.next_loop_probe = max(self.next_loop_probe, self.next_probe)

    def _advance_loops(self, buf: str, base: int, final: bool) -> None:
        """Loop probes the long rule did not take: the last ones of a text, and all of them
        once it has found its run."""
        end = base + len(buf)
        # While the text grows, wait for the long rule, which answers for loops too; at the
        # end, a probe needs only itself (a loop reads at most MIN_RUN_CHARS past it).
        ahead = PROBE_CHARS if final else LOOKAHEAD_CHARS
        probes = range(self.next_loop_probe, end - ahead + 1, PROBE_STRIDE_CHARS)
        cut = LOOP_MAX_PERIOD_CHARS
        for i in probes:
            k = i - base
            # A probe with a period p <= 5 has its last 27 characters again p earlier.
            if buf[k + cut : k + PROBE_CHARS] in buf[k : k + PROBE_CHARS - 1]:
                self._loop_at(buf, base, i)
                if self.loop is not None:
                    self.next_loop_probe = i + PROBE_STRIDE_CHARS
                    return
        if probes:
            self.next_loop_probe = probes[-1] + PROBE_STRIDE_CHARS

    def _loop_at(self, buf: str, base: int, i: int) -> None:
        if self.loop is None:
            self.loop = _loop_through(buf, base, i - base)

    @staticmethod
    def _try(buf: str, base: int, i: int, probe: str, stop: int, j: int) -> Run | None:
        """The run through the probe at `i`, trying its first recurrences as the period."""
        k = i - base
        for _ in range(_CANDIDATES):
            if j == -1:
                return None
            period = j - k
            span = max(MIN_RUN_CHARS, MIN_REPEATS * period)  # within the text (see `stop`)
            far, mid = k + span - period - 1, k + (span - period) // 2
            if (
                # Two single characters first: most recurrences of a probe in ordinary text
                # are not runs, and this rejects them without copying anything.
                buf[far] == buf[far + period]
                and buf[mid] == buf[mid + period]
                and buf.startswith(buf[k : k + span - period], j)
            ):
                return _trace_back(buf, base, i, period, span)
            j = buf.find(probe, j + 1, stop)
        return None


def _trace_back(buf: str, base: int, i: int, period: int, span: int) -> Run:
    """The run through the probe at `i`, its start traced back at most BACK_LIMIT_CHARS."""
    floor = max(base, i - BACK_LIMIT_CHARS) - base
    a = i - base
    while a - period >= floor and buf[a - period : a] == buf[a : a + period]:
        a -= period
    while a - 1 >= floor and buf[a - 1] == buf[a - 1 + period]:
        a -= 1
    return Run(a + base, period, (i + span - (a + base)) // period)


def _loop_through(buf: str, base: int, k: int) -> Run | None:
    """The short loop through the probe at buf[k:], if the probe has a period of at most 5,
    its unit is a word's, and the stretch holds LOOP_MIN_REPEATS copies and LOOP_MIN_CHARS.

    The stretch is read at most MIN_RUN_CHARS past the probe, what streaming has by then."""
    probe = buf[k : k + PROBE_CHARS]
    periods = (p for p in range(1, LOOP_MAX_PERIOD_CHARS + 1) if probe[p:] == probe[:-p])
    period = next(periods, 0)  # the screen passes some probes periodic only in part
    if not period:
        return None
    unit = probe[:period]
    if not any(ch not in _DATA for ch in unit):  # base64, hex, `true,true,` and `nan\n`
        return None
    if not any(unicodedata.category(ch) in _WORD_LETTERS for ch in unit):  # rulers, NA, NULL
        return None
    floor = max(0, k - LOOP_BACK_CHARS)
    a = k
    while a > floor and buf[a - 1] == buf[a - 1 + period]:
        a -= 1
    b, last = k + PROBE_CHARS, min(len(buf), k + MIN_RUN_CHARS)
    while b < last and buf[b] == buf[b - period]:
        b += 1
    repeats = (b - a + period // 2) // period
    if repeats < LOOP_MIN_REPEATS or b - a < LOOP_MIN_CHARS:
        return None
    return Run(a + base, period, repeats, buf[a : a + period])
