"""The OpenAI chat-completion chunk, declared once and decoded and validated in one pass.

Every server event passes through `decode_event` before repro looks at it, so nothing a server
sends can reach a turn record with a wrong type: an event that breaks the schema is a
`ProtocolViolation` (the turn's outcome becomes `protocol_error`), never a crash and never
corruption. Unknown fields are allowed (servers add their own); known ones must have the
declared type. Counts are bounded so they always fit the int64 columns of turns.parquet.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

Count = Annotated[int, msgspec.Meta(ge=0, le=2**53)]  # exact in float64 too (pandas, JSON)
Index = Annotated[int, msgspec.Meta(ge=0, le=65_535)]
# gc=False: a decoded event holds no cycles, and untracked structs decode about 10% faster.


class FunctionDelta(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct, gc=False):
    index: Index | None = None
    id: str | None = None
    type: str | None = None
    function: FunctionDelta | None = None


class Delta(msgspec.Struct, gc=False):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None  # SGLang's name (and older vLLM's)
    reasoning: str | None = None  # vLLM 0.32's name for the same text
    tool_calls: list[ToolCallDelta] | None = None


class Choice(msgspec.Struct, gc=False):
    index: Index = 0
    delta: Delta | None = None
    finish_reason: str | None = None
    # OpenAI's {"content": [{"token", "logprob", "top_logprobs": [...]}, ...]}, kept as sent:
    # the divergence oracle reads it leniently (checkers/divergence.scored_tokens).
    logprobs: Any = None


class PromptTokensDetails(msgspec.Struct, gc=False):
    cached_tokens: Count | None = None


class Usage(msgspec.Struct, gc=False):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    total_tokens: Count | None = None
    prompt_tokens_details: PromptTokensDetails | None = None

    @property
    def cached_tokens(self) -> int | None:
        details = self.prompt_tokens_details
        return None if details is None else details.cached_tokens


class _Answer(msgspec.Struct, gc=False):
    """What a streamed event and a whole completion share: usage, and the error shapes."""

    usage: Usage | None = None
    object: str | None = None
    # Error events: {"error": {...} | "text"} (OpenAI, SGLang) or {"object": "error", "message": ...}
    error: Any = None
    message: Any = None

    @property
    def is_error(self) -> bool:
        return self.error is not None or self.object == "error"

    def error_text(self) -> str:
        """The server's own words for an error, whatever shape they came in."""
        return server_words(self.error, self.message)


class Chunk(_Answer, gc=False):
    """One `data:` event of a streamed chat completion (or an error event in its place)."""

    choices: list[Choice] | None = None


ERROR_TEXT_CHARS = 2000


def server_words(error: Any, message: Any) -> str:
    """An error object's message ({"error": {...} | "text"} or {"message": ...}), capped."""
    said = error if error is not None else message
    if isinstance(said, dict):
        said = said.get("message", said)
    return str(said)[:ERROR_TEXT_CHARS]


_decoder = msgspec.json.Decoder(Chunk)


# --- A whole (non-streamed) chat completion: `stream: false` answers with one of these. ---


class FunctionCall(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


class ToolCallItem(msgspec.Struct, gc=False):
    id: str | None = None
    type: str | None = None
    function: FunctionCall | None = None


class Message(msgspec.Struct, gc=False):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallItem] | None = None


class WholeChoice(msgspec.Struct, gc=False):
    index: Index = 0
    message: Message | None = None
    finish_reason: str | None = None
    logprobs: Any = None


class Completion(_Answer, gc=False):
    """A whole chat completion (`stream: false`), or an error object in its place."""

    choices: list[WholeChoice] | None = None


decode_completion = msgspec.json.Decoder(Completion).decode


class ProtocolViolation(Exception):
    """An event that is not a chat-completion chunk; the message says where it broke."""


# The hot path calls the decoder itself (no wrapper per event) and turns its errors into words
# with `violation`; `decode_event` is the same for everyone else.
decode_chunk = _decoder.decode
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError)


def violation(exc: Exception) -> str:
    """What a decode error says about the event, as a turn's error text."""
    if isinstance(exc, msgspec.ValidationError):
        return f"event breaks the chat-completion chunk schema: {exc}"
    return f"event is not valid JSON: {exc}"


def decode_event(data: str | bytes) -> Chunk:
    """Parse and validate one event's JSON; raises ProtocolViolation with msgspec's reason."""
    try:
        return _decoder.decode(data)
    except DECODE_ERRORS as exc:
        raise ProtocolViolation(violation(exc)) from None
