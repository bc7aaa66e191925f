"""The consistency checks' defect kinds: what each means, the bug class it catches, its cost.

These hold for any model on any engine: they judge what the serving layer promised (the
OpenAI chat-completions contract, and what vLLM 0.32 and SGLang 0.5.23 do in their own
sources), never what a model chose to write. The table below is docs/consistency.md's; a
test keeps both equal to `RULES`.

| kind | bug class it catches | what is wrong |
|---|---|---|
| `finish_reason_lie` | a finish_reason that lies (vLLM streams `tool_calls` whenever a call was streamed, complete or not; a call cut by a stop string or by max_tokens) | `tool_calls` on a choice with no tool call; or `length` while the completion tokens are fewer than max_tokens allows (within the model's window, when the server states it) |
| `tool_calls_unparsable` | streamed arguments that lose or repeat bytes: multi-token deltas that drop a closing brace, a final flush that repeats a suffix (`}{`), duplicated argument bytes | finish_reason `tool_calls`, yet a call's arguments are empty or not JSON (a value other than an object is the model's to write: `true` parses) |
| `grammar_violated` | structured output batched beside plain requests, a grammar not applied or applied to the wrong request, the constrained path's own parser | under tool_choice `required` or a named function, or response_format `json_object` or `json_schema`, an answer not cut short (by max_tokens or a stop string) that breaks what the grammar forces: no call, a call to another or an undeclared tool, arguments that are not JSON, or, for a tool declared `strict: true`, arguments that are not an object meeting its schema; content that is not a JSON object or fails the requested schema |
| `tool_choice_ignored` | tool_choice dropped on the way to the parser | tool calls in an answer to tool_choice `none` |
| `parallel_calls_ignored` | parallel_tool_calls dropped | more than one call in a choice of a request with parallel_tool_calls false |
| `call_id_broken` | index and id bookkeeping of parallel calls (SGLang's tool_index as the tool's position) | a call without an id or a name, or two calls of one choice with one id |
| `stream_out_of_order` | re-serialising parsers and final flushes that send metadata again (vLLM GLM final chunk), events after the end | in a stream: text or a second finish_reason for a choice after its finish_reason, a choice after the usage chunk, an event after `[DONE]`, a call's id or name sent again (OpenAI's SDK adds deltas up, so it doubles), a call index that does not count up from 0 |
| `usage_wrong` | usage accounting on the streaming path | no usage where it was asked for; total not prompt plus completion; more logprob entries than completion tokens; text from zero completion tokens |
| `max_tokens_exceeded` | a length limit not applied (per request, in a batch) | more completion tokens than n times max_tokens |
| `choice_missing` | `n` > 1 ordering and fan-out | fewer choices than n, or a choice that never got a finish_reason |
| `reasoning_unseparated` | the reasoning parser's hand-off (reasoning dropped or kept on a boundary delta) | reasoning text that holds `</think>`, the marker where the parser must end it |
| `stream_disagrees` | a streamed answer that disagrees with the same request unstreamed: the streaming parser against the one-shot parser, usage on one path only | the stream oracle's twin answered differently: content, reasoning, tool calls (names, parsed arguments), finish_reason, or usage (prompt tokens; completion tokens where the texts agree); a difference at a near tie (by logprobs) is `numerical`, not counted |
"""

from __future__ import annotations

from enum import StrEnum

from repro.checkers.kinds import doc_table_rows


class Broken(StrEnum):
    FINISH_REASON_LIE = "finish_reason_lie"
    TOOL_CALLS_UNPARSABLE = "tool_calls_unparsable"
    GRAMMAR_VIOLATED = "grammar_violated"
    TOOL_CHOICE_IGNORED = "tool_choice_ignored"
    PARALLEL_CALLS_IGNORED = "parallel_calls_ignored"
    CALL_ID_BROKEN = "call_id_broken"
    STREAM_OUT_OF_ORDER = "stream_out_of_order"
    USAGE_WRONG = "usage_wrong"
    MAX_TOKENS_EXCEEDED = "max_tokens_exceeded"
    CHOICE_MISSING = "choice_missing"
    REASONING_UNSEPARATED = "reasoning_unseparated"
    STREAM_DISAGREES = "stream_disagrees"


# kind -> (bug class, what is wrong), read from the table above: the table is the one source.
RULES: dict[str, tuple[str, str]] = doc_table_rows(__doc__ or "")
KINDS = frozenset(RULES)


def rules_markdown() -> str:
    """The table as markdown, exactly as docs/consistency.md must contain it."""
    head = "| kind | bug class it catches | what is wrong |\n|---|---|---|\n"
    return head + "".join(f"| `{k}` | {b} | {m} |\n" for k, (b, m) in RULES.items())
