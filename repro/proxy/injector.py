"""Corrupt chosen SSE streams on purpose, under a rule, and record every injection.

Each stream gets a seeded draw when it starts: with probability `rate` it becomes a victim,
and the injection point is its k-th target event (k seeded, 1..4). A target event carries
judged text (content or tool-call arguments); with `target=calls` only once the stream is
inside a tool call (parsed arguments, or a call marker seen in the content): that is where
a validity checker must see corruption, while prose around calls may legitimately say
anything. There the rule is applied only if at least `min_streams` streams are in flight
(and, for a splice, another stream has answer text to give); otherwise the next target
event tries again. Streams that are not victims pass through as the bytes arrived, unparsed.

A victim's unfinished event is held until it ends, but never past MAX_EVENT_BYTES: then the
proxy stops inspecting that stream and passes it on untouched, rather than stall it.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from enum import StrEnum

from repro.proxy import notes, sse

TAIL_BYTES = 4096  # recent bytes kept per stream as splice material
MAX_TARGET_EVENT = 4  # the injection lands within a stream's first few target events
# An unfinished event held this long is not one: repro's client gives up on such a line too
# (harness/sse_connection.py MAX_EVENT_BYTES), and a real chunk never comes near it.
MAX_EVENT_BYTES = 1024 * 1024
# Where raw tool-call markup starts in the content, for the formats repro meets:
# DeepSeek-V3.2 DSML, hermes (Qwen and the tiny model), Mistral, Llama 3 / 4.
CALL_MARKERS = ("｜DSML｜", "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
MARKER_WINDOW = max(len(m) for m in CALL_MARKERS) - 1  # a marker may span two deltas


class RuleKind(StrEnum):
    OFF = "off"
    SPLICE = "splice"  # bytes from another in-flight stream inserted into this one's text
    DROP = "drop"  # bytes removed from a tool-call argument (or the content carrying calls)
    CUT = "cut"  # the text stops early; the stream still ends normally
    DUPLICATE = "duplicate"  # a call's first argument fragment sent twice (duplicated bytes)
    FINISH = "finish"  # the finish_reason lies: tool_calls with no call, length on calls
    FLIP = "flip"  # one letter's case flipped: a stream that disagrees with its unstreamed twin


# Rules that edit the judged text of one event (the others rewrite other fields).
TEXT_RULES = frozenset({RuleKind.SPLICE, RuleKind.DROP, RuleKind.CUT, RuleKind.FLIP})


class Target(StrEnum):
    CALLS = "calls"  # text inside tool calls only: what a validity checker must catch
    ANY = "any"  # any answer text: what the divergence oracle must catch


@dataclass(frozen=True, slots=True)
class InjectionRule:
    kind: RuleKind = RuleKind.OFF
    min_streams: int = 2
    rate: float = 0.05
    seed: int = 0
    span_bytes: int = 24  # characters spliced in or dropped
    target: Target = Target.CALLS


@dataclass(frozen=True, slots=True)
class Injection:
    """One corruption the proxy made: enough to find the turn again and see what changed."""

    stream: int  # the stream's ordinal at the proxy, from 0
    rule: str
    at_s: float  # wall clock (time.time())
    in_flight: int
    target_event: int  # the k-th target event
    field: str
    position: int  # character offset in that event's text
    text: str  # spliced in, dropped, or (cut) the first text withheld
    donor: int | None
    request_sha256: str
    response_id: str

    def to_json(self) -> dict:
        return {"event": "injection", **asdict(self)}


class InFlight:
    """The streams open right now and, when splicing, each one's most recent bytes."""

    def __init__(self, keep_tails: bool) -> None:
        self.keep_tails = keep_tails
        self.tails: dict[int, bytearray] = {}

    def __len__(self) -> int:
        return len(self.tails)

    def open(self, ordinal: int) -> None:
        self.tails[ordinal] = bytearray()

    def close(self, ordinal: int) -> None:
        self.tails.pop(ordinal, None)

    def feed(self, ordinal: int, chunk: bytes) -> None:
        if self.keep_tails and (tail := self.tails.get(ordinal)) is not None:
            tail += chunk
            if len(tail) > TAIL_BYTES:
                del tail[:-TAIL_BYTES]

    def donor_text(self, excluding: int, span: int, rng: random.Random) -> tuple[int, str] | None:
        """The last `span` characters of text some other stream sent recently."""
        candidates = []
        for ordinal, tail in self.tails.items():
            if ordinal == excluding:
                continue
            # The tail's first event may be cut at its start: skip to the first separator.
            start = tail.find(sse.SEPARATOR)
            events = sse.split_events(bytearray(tail[start + 2 :])) if start >= 0 else []
            # Answer text only (content, arguments): reasoning is not what a splice mixes up.
            texts = (sse.judged_text(p) for e in events if (p := sse.parse(e)) is not None)
            text = "".join(t.text for t in texts if t is not None)
            if text.strip():
                candidates.append((ordinal, text[-span:]))
        return rng.choice(candidates) if candidates else None


class Injector:
    """Wraps each SSE stream; `report` receives every Injection as it is made, `note` a line
    for each stream it stops inspecting."""

    def __init__(
        self,
        rule: InjectionRule,
        report: Callable[[Injection], None],
        note: Callable[[str], None] = notes.say,
    ) -> None:
        self.rule = rule
        self.report = report
        self.note = note
        self.in_flight = InFlight(keep_tails=rule.kind is RuleKind.SPLICE)
        self.streams = 0
        self.victims = 0
        self.injected = 0
        self.streamed_bytes = 0

    def counts(self) -> dict[str, int]:
        return {
            "streams": self.streams,
            "victims": self.victims,
            "injected": self.injected,
            "streamed_bytes": self.streamed_bytes,
        }

    async def tap(
        self, chunks: AsyncIterator[bytes], request_body: bytes, request: str = "a request"
    ) -> AsyncIterator[bytes]:
        """The stream as the client gets it; `request` names it in notes.

        If `chunks` raises (the upstream failed), what the upstream sent of an unfinished
        event still comes out first, then the same exception.
        """
        ordinal = self.streams
        self.streams += 1
        rng = random.Random(f"{self.rule.seed}:{ordinal}")
        victim = None
        if self.rule.kind is not RuleKind.OFF and rng.random() < self.rule.rate:
            self.victims += 1
            victim = _Victim(self, ordinal, rng, request_body, request)
        self.in_flight.open(ordinal)
        try:
            try:
                async for chunk in chunks:
                    self.streamed_bytes += len(chunk)
                    self.in_flight.feed(ordinal, chunk)
                    yield chunk if victim is None else victim.feed(chunk)
            except Exception:
                if victim is not None and victim.buffer:
                    yield victim.release()
                raise
            if victim is not None and victim.buffer:
                yield victim.release()  # an unterminated last event, as it came
        finally:
            self.in_flight.close(ordinal)

    def inject(self, victim: _Victim, payload: dict, where: sse.JudgedText) -> Injection | None:
        """Apply the rule to this event if the conditions hold now; None to try a later event."""
        rule, rng = self.rule, victim.rng
        in_flight = len(self.in_flight)
        if in_flight < rule.min_streams:
            return None
        donor = None
        text = where.text
        if rule.kind is RuleKind.SPLICE:
            found = self.in_flight.donor_text(victim.ordinal, rule.span_bytes, rng)
            if found is None:
                return None
            donor, material = found
            position = rng.randint(0, len(text))
            changed = text[:position] + material + text[position:]
        elif rule.kind is RuleKind.DROP:
            position = rng.randrange(len(text))
            material = text[position : position + rule.span_bytes]
            changed = text[:position] + text[position + rule.span_bytes :]
        elif rule.kind is RuleKind.DUPLICATE:
            position, material = len(text), text
            changed = text + text
        elif rule.kind is RuleKind.FLIP:
            position = _letter_at(text, where.field != "content")
            if position < 0:
                return None
            material = text[position]
            changed = text[:position] + material.swapcase() + text[position + 1 :]
        else:  # CUT: keep a prefix of this event's text and nothing after it
            position = rng.randrange(len(text))
            material = text[position:]
            changed = text[:position]
        sse.replace_judged_text(payload, where, lambda _: changed)
        self.injected += 1
        injection = Injection(
            stream=victim.ordinal,
            rule=rule.kind.value,
            at_s=time.time(),
            in_flight=in_flight,
            target_event=victim.target_events,
            field=where.field,
            position=position,
            text=material,
            donor=donor,
            request_sha256=hashlib.sha256(victim.request_body).hexdigest(),
            response_id=str(payload.get("id", "")),
        )
        self.report(injection)
        return injection

    def lie(self, victim: _Victim, payload: dict, saw_calls: bool) -> Injection | None:
        """The FINISH rule at the victim's finish event: a finish_reason the answer belies
        (tool_calls for an answer without a call; length for one with calls)."""
        in_flight = len(self.in_flight)
        if in_flight < self.rule.min_streams:
            return None
        choice = payload["choices"][0]
        was = choice.get("finish_reason")
        said = "length" if saw_calls else "tool_calls"
        if was == said:
            return None
        choice["finish_reason"] = said
        self.injected += 1
        injection = Injection(
            stream=victim.ordinal,
            rule=self.rule.kind.value,
            at_s=time.time(),
            in_flight=in_flight,
            target_event=victim.target_events,
            field="finish_reason",
            position=0,
            text=f"{was} -> {said}",
            donor=None,
            request_sha256=hashlib.sha256(victim.request_body).hexdigest(),
            response_id=str(payload.get("id", "")),
        )
        self.report(injection)
        return injection


def _letter_at(text: str, inside_strings: bool) -> int:
    """The first ASCII letter of `text` (inside a JSON string, for arguments); -1 if none."""
    quoted = False
    escaped = False
    for i, ch in enumerate(text):
        if inside_strings:
            if escaped:
                escaped = False
                continue
            if ch == "\\":
                escaped = True
                continue
            if ch == '"':
                quoted = not quoted
                continue
            if not quoted:
                continue
        if ch.isascii() and ch.isalpha():
            return i
    return -1


class _Victim:
    """A stream chosen for corruption: parsed event by event until the injection is made
    (to its end for a cut, which withholds all later text), raw bytes after that."""

    def __init__(
        self, injector: Injector, ordinal: int, rng: random.Random, body: bytes, request: str
    ) -> None:
        self.injector = injector
        self.ordinal = ordinal
        self.rng = rng
        self.request_body = body
        self.request = request
        self.target_event = rng.randint(1, MAX_TARGET_EVENT)
        if injector.rule.kind in (RuleKind.DUPLICATE, RuleKind.FINISH):
            self.target_event = 1  # a call's first fragment, the finish: once or so a stream
        self.target_events = 0
        self.in_call = injector.rule.target is Target.ANY
        self.recent_content = ""  # the last few characters, to see a marker split over deltas
        self.injected = False
        self.is_cut = injector.rule.kind is RuleKind.CUT
        self.saw_calls = False  # FINISH: whether a parsed tool call came before the end
        self.passing = False  # raw bytes from here on: injected (not a cut), or given up
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> bytes:
        if self.passing:
            return chunk
        # Only the new bytes (and the one before them) can complete a separator: a held
        # event is not searched again for every chunk that extends it.
        start = max(0, len(self.buffer) - len(sse.SEPARATOR) + 1)
        self.buffer += chunk
        if self.buffer.find(sse.SEPARATOR, start) < 0:
            return self._give_up() if len(self.buffer) > MAX_EVENT_BYTES else b""
        out = [self._event(event) for event in sse.split_events(self.buffer)]
        if self.injected and not self.is_cut:
            self.passing = True
            out.append(self.release())  # the rest of a split event, untouched
        elif len(self.buffer) > MAX_EVENT_BYTES:
            out.append(self._give_up())
        return b"".join(out)

    def release(self) -> bytes:
        """The bytes held of an unfinished event, as they came."""
        held = bytes(self.buffer)
        self.buffer.clear()
        return held

    def _give_up(self) -> bytes:
        """Stop inspecting this stream: what is held goes out untouched, and all after it."""
        self.passing = True
        self.injector.note(
            f"{self.request}, stream {self.ordinal}: an event passed {MAX_EVENT_BYTES:,} bytes"
            " without ending; this stream is no longer inspected and passes through untouched."
        )
        return self.release()

    def _event(self, event: bytes) -> bytes:
        payload = sse.parse(event)
        if payload is None:
            return event
        if self.injected:
            if not self.is_cut:
                return event
            # A cut withholds all later text; finish reason, usage and [DONE] still come.
            return sse.serialize(payload) if sse.drop_later_text(payload) else b""
        kind = self.injector.rule.kind
        if kind is RuleKind.FINISH:
            return self._finish_event(event, payload)
        where = sse.judged_text(payload)
        if kind is RuleKind.DUPLICATE and (
            where is None or where.field == "content" or not where.text.startswith("{")
        ):
            return event  # only a call's first argument fragment is sent twice
        if where is None or not where.text.strip() or not self._inside_call(where):
            return event
        self.target_events += 1
        if self.target_events < self.target_event:
            return event
        if self.injector.inject(self, payload, where) is None:
            return event
        self.injected = True
        return sse.serialize(payload)

    def _finish_event(self, event: bytes, payload: dict) -> bytes:
        """FINISH: note parsed calls as they pass; at the first choice's finish, lie."""
        if sse.has_calls(payload):
            self.saw_calls = True
        if not sse.finish_reason(payload):
            return event
        self.target_events += 1
        if self.injector.lie(self, payload, self.saw_calls) is None:
            return event
        self.injected = True
        return sse.serialize(payload)

    def _inside_call(self, where: sse.JudgedText) -> bool:
        """Whether this event's text is tool-call text (always, with target=any)."""
        if self.in_call or where.field != "content":
            return True
        seen = self.recent_content + where.text
        for marker in CALL_MARKERS:
            at = seen.find(marker)
            if at >= 0:
                self.in_call = True
                return False  # the opening event may hold prose too: the events after it count
        self.recent_content = seen[-MARKER_WINDOW:]
        return False
