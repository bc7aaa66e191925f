"""TurnRecord: one assistant turn as measured and judged; one row of turns.parquet."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TurnOutcome(StrEnum):
    """How a request ended. Only `ok` turns are judged for corruption."""

    OK = "ok"
    HTTP_ERROR = "http_error"  # the server answered with an error status or error event
    TIMEOUT = "timeout"  # the whole-turn deadline passed
    STALLED = "stalled"  # no byte for the read timeout, or the run's stall detector fired
    TRANSPORT_ERROR = "transport_error"  # connection refused or reset, stream cut off
    PROTOCOL_ERROR = (
        "protocol_error"  # an event that is not a chat-completion chunk (bad JSON, types)
    )
    CANCELLED = "cancelled"  # the run was interrupted (Ctrl-C, SIGTERM, engine death)
    ABORTED = "aborted"  # repro cancelled it on purpose (--abort-rate)


ERROR_OUTCOMES = frozenset(
    {
        TurnOutcome.HTTP_ERROR,
        TurnOutcome.TIMEOUT,
        TurnOutcome.STALLED,
        TurnOutcome.TRANSPORT_ERROR,
        TurnOutcome.PROTOCOL_ERROR,
    }
)


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """Times are monotonic seconds since the run started; token counts come from the server."""

    session_id: int
    turn: int
    outcome: str
    http_status: int | None
    error: str
    scheduled_at_s: float
    sent_at_s: float
    first_token_at_s: float | None
    last_token_at_s: float | None
    ended_at_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    finish_reason: str | None
    content: str
    reasoning: str
    tool_calls: str  # JSON list of {"name", "arguments"} as received or parsed
    n_calls: int
    chunks: int
    # Inter-token gaps as running figures (records.gap_stats): their count, mean and max, and
    # a log-bucket histogram as parallel lists (bucket ids, counts) for pooled percentiles.
    gap_count: int
    gap_mean_s: float | None
    gap_max_s: float | None
    gap_buckets: list[int]
    gap_bucket_counts: list[int]
    request_bytes: int
    corrupted: bool
    defect_kinds: list[str]
    first_defect: str  # "kind@field:offset: message", empty when clean
    # False for an ok turn no oracle judged: with only the divergence oracle, every turn
    # until the replay judges it (divergence.jsonl), and those the replay did not sample.
    judged: bool = True
    # The request's shape, `axis=value ...` for the axes the run mixed (empty without --mix).
    shape: str = ""
    # The stream oracle's verdict on this turn: "" (not sent twice), agree, numerical,
    # disagree, unanswered (the twin failed).
    twin: str = ""

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_at_s is None else self.first_token_at_s - self.sent_at_s

    @property
    def e2e_s(self) -> float:
        return self.ended_at_s - self.sent_at_s

    @property
    def send_lag_s(self) -> float:
        return self.sent_at_s - self.scheduled_at_s
