"""Runaway repetition: a long stretch that repeats one short unit, found by sampling probes.

Every `PROBE_STRIDE_CHARS` characters a probe takes the next `PROBE_CHARS` characters,
finds where they recur within `MAX_PERIOD_CHARS`, and checks whether the text from the
probe on is periodic with that distance for `max(MIN_RUN_CHARS, MIN_REPEATS * period)`
characters. A probe reads only a bounded window, so streaming gives whole-text results;
any qualifying stretch longer than the threshold plus one stride is found.
"""

from __future__ import annotations

from dataclasses import dataclass

PROBE_STRIDE_CHARS = 128
PROBE_CHARS = 32
MAX_PERIOD_CHARS = 512
MIN_REPEATS = 8
MIN_RUN_CHARS = 512
BACK_LIMIT_CHARS = 1024  # how far back a found run's start is traced
_CANDIDATES = 4  # recurrences of a probe tried as the period
LOOKAHEAD_CHARS = max(MIN_RUN_CHARS, MIN_REPEATS * MAX_PERIOD_CHARS) + PROBE_CHARS


@dataclass(frozen=True, slots=True)
class Run:
    offset: int
    period_chars: int
    repeats: int


class RepetitionProbe:
    """Feeds on a growing text (a buffer and its absolute offset) and keeps the first run."""

    __slots__ = ("next_probe", "run")

    def __init__(self) -> None:
        self.next_probe = 0
        self.run: Run | None = None

    def keep_from(self) -> int:
        """The earliest absolute offset a later probe may still read."""
        return self.next_probe - BACK_LIMIT_CHARS

    def advance(self, buf: str, base: int, final: bool) -> None:
        if self.run is not None:
            return
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
            if (run := self._try(buf, base, i, probe, stop, j)) is not None:
                self.run = run
                self.next_probe = i + PROBE_STRIDE_CHARS
                return
        if probes:
            self.next_probe = probes[-1] + PROBE_STRIDE_CHARS

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
