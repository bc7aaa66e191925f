"""StreamProgress: everything one request has produced so far, filled in place as it streams.

The connection (sse_connection) folds each event in with `apply`, the one place an event
becomes progress (a whole `stream: false` answer goes through `apply_whole`); the watchdog
reads its liveness; the load generator reads the rest once the request has ended, one way or
another, with every byte that arrived.

The first choice lives in the progress's own fields (the common case, `n` = 1, costs no
lookup); further choices (`n` > 1) in `others`. What broke the stream's own rules (text for a
choice after its finish_reason, a second usage chunk, events after [DONE], a tool call's id or
name sent twice, a call index out of order) is noted in `anomalies` where it happens, for the
consistency checks (checkers.consistency) to judge; nothing is noted on a well-formed stream.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from repro.checkers.consistency import ServedAnswer, ServedCall, ServedChoice
from repro.checkers.verdict import ToolCall
from repro.harness.load.chunk import Choice, Chunk, Completion, Usage, WholeChoice
from repro.records.gap_stats import GapStats
from repro.records.turn import TurnOutcome

MAX_ANOMALIES = 32  # what a broken stream keeps of its anomalies: the first ones say enough


@dataclass(slots=True)
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ChoiceParts:
    """A choice other than the first, as it streams in."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _CallParts] = field(default_factory=dict)
    finish_reason: str | None = None
    logprobs: list[dict] = field(default_factory=list)


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
    # `logprobs.content` items of the first choice in arrival order, when the request asked
    # for them: every generated token with its scores, whichever field its text went to.
    logprobs: list[dict] = field(default_factory=list)
    streamed: bool = True  # False: the answer came whole (`stream: false`)
    others: dict[int, ChoiceParts] | None = None  # choices 1.. (n > 1)
    usage_events: int = 0  # events that carried a usage object
    _past_end: bool = False  # a finish_reason or the usage came: events are looked at closely
    anomalies: list[tuple[str, str]] = field(default_factory=list)  # (rule, what happened)

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

    def note(self, rule: str, what: str) -> None:
        if len(self.anomalies) < MAX_ANOMALIES:
            self.anomalies.append((rule, what))

    def served(self) -> ServedAnswer:
        """The whole answer as received, for the consistency checks."""
        choices = [
            ServedChoice(
                0,
                self.content_text(),
                self.reasoning_text(),
                _served_calls(self.calls),
                self.finish_reason,
                tuple(self.logprobs),
            )
        ]
        for index, parts in sorted((self.others or {}).items()):
            choices.append(
                ServedChoice(
                    index,
                    _merged(parts.content),
                    _merged(parts.reasoning),
                    _served_calls(parts.calls),
                    parts.finish_reason,
                    tuple(parts.logprobs),
                )
            )
        usage = self.usage
        return ServedAnswer(
            self.streamed,
            tuple(choices),
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.total_tokens,
            self.usage_events,
            tuple(self.anomalies),
        )

    def apply(self, event: Chunk) -> int:
        """Fold one decoded event in; 1 when it carried generated text (a token), else 0.

        Timing is not done here but once per read, by the connection
        (SseConnection.data_received): the events of one read arrived together."""
        if event.error is not None or event.object == "error":  # Chunk.is_error, inlined
            self.fail(TurnOutcome.HTTP_ERROR, f"error event from the server: {event.error_text()}")
            return 0
        if event.usage is not None:
            self._usage_event(event)
        choices = event.choices
        # The common event: one delta of the first choice, before its finish and the usage.
        # Anything else (n > 1, after the finish_reason or the usage) takes the long way,
        # which also notes what breaks the stream's order.
        if choices is None or len(choices) != 1:
            return self._apply_choices(choices) if choices else 0
        choice = choices[0]
        if choice.index or self._past_end:
            return self._apply_choices(choices)
        return self._fold_first(choice)

    def _usage_event(self, event: Chunk) -> None:
        self.usage = event.usage  # type: ignore[assignment]
        self.usage_events += 1
        self._past_end = True
        if self.usage_events > 1:
            self.note("usage_repeated", f"usage chunk number {self.usage_events}")
        if event.choices:
            self.note("usage_beside_choices", "a usage object on a chunk that carries choices")

    def _fold_first(self, choice: Choice) -> int:
        if self.finish_reason is not None:
            self._late(0, choice)
        if choice.finish_reason:
            self.finish_reason = choice.finish_reason
            self._past_end = True
        if choice.logprobs is not None:  # kept as sent (the divergence oracle reads them)
            content = choice.logprobs.get("content") if isinstance(choice.logprobs, dict) else None
            if isinstance(content, list):
                self.logprobs += content
        delta = choice.delta
        if delta is None:
            return 0
        token = 0
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            self.reasoning.append(reasoning)
            token = 1
        if delta.content:
            self.content.append(delta.content)
            token = 1
        if delta.tool_calls:
            self._fold_calls(self.calls, delta.tool_calls, 0)
            token = 1
        return token

    def _fold_calls(self, calls: dict[int, _CallParts], deltas: list, choice: int) -> None:
        for call in deltas:
            index = call.index
            if index is None:
                self.note("call_index", f"choice {choice}: a tool-call delta without an index")
                index = len(calls)
            parts = calls.get(index)
            if parts is None:
                if index != len(calls):
                    self.note(
                        "call_index",
                        f"choice {choice}: tool call index {index} opened after "
                        f"{len(calls)} call(s) (indices must count up from 0)",
                    )
                parts = calls[index] = _CallParts()
            elif (call.id and parts.id) or (
                call.function is not None and call.function.name and parts.name
            ):
                self.note(
                    "call_header_repeated",
                    f"choice {choice}: tool call {index}'s id or name sent again in a later "
                    "delta (a client that adds up deltas, as OpenAI's SDK does, doubles it)",
                )
            parts.id = call.id or parts.id
            if call.function is not None:
                parts.name = call.function.name or parts.name
                if call.function.arguments:
                    parts.arguments.append(call.function.arguments)

    def _late(self, index: int, choice: Choice) -> None:
        delta = choice.delta
        text = delta is not None and bool(
            delta.content or delta.reasoning_content or delta.reasoning or delta.tool_calls
        )
        if text or choice.finish_reason:
            what = "text or tool calls" if text else "a second finish_reason"
            self.note("after_finish", f"choice {index}: {what} after its finish_reason")

    def _apply_choices(self, choices: list[Choice]) -> int:
        """Any chunk that is not one first-choice delta before the end (n > 1, an index other
        than 0, anything after a finish_reason or the usage chunk)."""
        if self.usage_events:
            self.note("after_usage", "a chunk with choices came after the usage chunk")
        token = 0
        for choice in choices:
            if choice.index == 0:
                token |= self._fold_first(choice)
                continue
            others = self.others if self.others is not None else {}
            self.others = others
            parts = others.get(choice.index)
            if parts is None:
                parts = others[choice.index] = ChoiceParts()
            if parts.finish_reason is not None:
                self._late(choice.index, choice)
            if choice.finish_reason:
                parts.finish_reason = choice.finish_reason
            if choice.logprobs is not None:
                parts.logprobs += _logprob_items(choice.logprobs)
            delta = choice.delta
            if delta is None:
                continue
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning:
                parts.reasoning.append(reasoning)
                token = 1
            if delta.content:
                parts.content.append(delta.content)
                token = 1
            if delta.tool_calls:
                self._fold_calls(parts.calls, delta.tool_calls, choice.index)
                token = 1
        return token

    def apply_whole(self, answer: Completion) -> None:
        """A whole (non-streamed) answer: every choice, its usage."""
        self.streamed = False
        if answer.is_error:
            self.fail(
                TurnOutcome.HTTP_ERROR, f"error answer from the server: {answer.error_text()}"
            )
            return
        if answer.usage is not None:
            self.usage = answer.usage
            self.usage_events = 1
        for choice in answer.choices or ():
            self._whole_choice(choice)

    def _whole_choice(self, choice: WholeChoice) -> None:
        if choice.index == 0:
            content, reasoning, calls = self.content, self.reasoning, self.calls
            if self.finish_reason is not None:
                self.note("after_finish", "choice 0 answered twice")
            self.finish_reason = choice.finish_reason
            items = _logprob_items(choice.logprobs)
            self.logprobs += items
        else:
            others = self.others if self.others is not None else {}
            self.others = others
            if choice.index in others:
                self.note("after_finish", f"choice {choice.index} answered twice")
            parts = others[choice.index] = ChoiceParts()
            content, reasoning, calls = parts.content, parts.reasoning, parts.calls
            parts.finish_reason = choice.finish_reason
            parts.logprobs += _logprob_items(choice.logprobs)
        message = choice.message
        if message is None:
            return
        if message.content:
            content.append(message.content)
        if text := message.reasoning_content or message.reasoning:
            reasoning.append(text)
        for i, item in enumerate(message.tool_calls or ()):
            function = item.function
            calls[i] = _CallParts(
                item.id or "",
                (function.name or "") if function else "",
                [function.arguments] if function and function.arguments else [],
            )

    @property
    def first_token_at_s(self) -> float | None:
        return self.read_stamps[0] if self.read_stamps else None

    @property
    def last_token_at_s(self) -> float | None:
        return self.read_stamps[-1] if self.read_stamps else None

    def gap_stats(self) -> GapStats:
        """The inter-token gaps so far: one between reads, zero within a read."""
        return GapStats.from_read_stamps(self.read_stamps, self.chunks)


def _logprob_items(logprobs: Any) -> list[dict]:
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return content if isinstance(content, list) else []


def _served_calls(calls: dict[int, _CallParts]) -> tuple[ServedCall, ...]:
    return tuple(ServedCall(c.id, c.name, _merged(c.arguments)) for _, c in sorted(calls.items()))


def _merged(pieces: list[str]) -> str:
    if len(pieces) > 1:
        pieces[:] = ["".join(pieces)]
    return pieces[0] if pieces else ""
