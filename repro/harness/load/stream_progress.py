"""StreamProgress: everything one request has produced so far, filled in place as it streams.

The connection (sse_connection) folds each event in with `apply`, the one place an event
becomes progress; the watchdog reads its liveness; the load generator reads the rest once the
request has ended, one way or another, with every byte that arrived.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from repro.checkers.verdict import ToolCall
from repro.harness.load.chunk import Chunk, Usage
from repro.records.gap_stats import GapStats
from repro.records.turn import TurnOutcome


@dataclass(slots=True)
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamProgress:
    """Everything one request has produced so far; mutable while it streams."""

    scheduled_at_s: float  # when the turn was due (the client's delay runs from here)
    sent_at_s: float = 0.0  # when its bytes were handed to the connection
    outcome: TurnOutcome = TurnOutcome.OK
    http_status: int | None = None
    error: str = ""
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _CallParts] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    bad_event: str = ""  # the event that broke the protocol (truncated), for protocol_errors.jsonl
    bad_event_chars: int = 0
    protocol_kind: str = ""  # what kind of protocol break (sse_connection), for the same file
    last_event_at_s: float = 0.0  # the answer's head or a data event: what idle limits watch
    ended_at_s: float = 0.0
    # When each read that brought tokens arrived (a read only appends a float): the first
    # and last token's times and, at the turn's end, the gap figures (`gap_stats`).
    read_stamps: array = field(default_factory=lambda: array("d"))
    chunks: int = 0
    done: bool = False
    # `logprobs.content` items in arrival order, when the request asked for them: every
    # generated token with its scores, whichever field its text went to.
    logprobs: list[dict] = field(default_factory=list)

    def content_text(self) -> str:
        """The content so far as one string. The pieces are merged in place, so the turn's
        several readers (checker, record, next message) join its text once, not each time;
        `tool_calls` does the same with each call's arguments."""
        return _merged(self.content)

    def reasoning_text(self) -> str:
        """The reasoning so far as one string, merged in place as `content_text`."""
        return _merged(self.reasoning)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.name, _merged(c.arguments)) for _, c in sorted(self.calls.items()))

    def call_ids(self) -> tuple[str, ...]:
        return tuple(c.id for _, c in sorted(self.calls.items()))

    def fail(self, outcome: TurnOutcome, error: str) -> None:
        if self.outcome is TurnOutcome.OK:
            self.outcome, self.error = outcome, error

    def apply(self, event: Chunk) -> int:
        """Fold one decoded event in; 1 when it carried generated text (a token), else 0.

        Timing is not done here but once per read, by the connection
        (SseConnection.data_received): the events of one read arrived together."""
        if event.error is not None or event.object == "error":  # Chunk.is_error, inlined
            self.fail(TurnOutcome.HTTP_ERROR, f"error event from the server: {event.error_text()}")
            return 0
        if event.usage is not None:
            self.usage = event.usage
        if not event.choices:
            return 0
        choice = event.choices[0]
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
        if choice.logprobs is not None:  # asked for by the divergence oracle; kept as sent
            content = choice.logprobs.get("content") if isinstance(choice.logprobs, dict) else None
            if isinstance(content, list):
                self.logprobs += content
        delta = choice.delta
        if delta is None:
            return 0
        token = 0
        if delta.reasoning_content:
            self.reasoning.append(delta.reasoning_content)
            token = 1
        if delta.content:
            self.content.append(delta.content)
            token = 1
        if delta.tool_calls:
            for call in delta.tool_calls:
                index = len(self.calls) if call.index is None else call.index
                parts = self.calls.get(index)
                if parts is None:
                    parts = self.calls[index] = _CallParts()
                parts.id = call.id or parts.id
                if call.function is not None:
                    parts.name = call.function.name or parts.name
                    if call.function.arguments:
                        parts.arguments.append(call.function.arguments)
            token = 1
        return token

    @property
    def first_token_at_s(self) -> float | None:
        return self.read_stamps[0] if self.read_stamps else None

    @property
    def last_token_at_s(self) -> float | None:
        return self.read_stamps[-1] if self.read_stamps else None

    def gap_stats(self) -> GapStats:
        """The inter-token gaps so far: one between reads, zero within a read."""
        return GapStats.from_read_stamps(self.read_stamps, self.chunks)


def _merged(pieces: list[str]) -> str:
    if len(pieces) > 1:
        pieces[:] = ["".join(pieces)]
    return pieces[0] if pieces else ""
