"""Every defect kind the checkers report: a stable snake_case name and what it means.

The table below is also in docs/checkers.md; a test keeps both equal to `MEANINGS`.
"Rule n" is DeepSeek's grammar, research/dsml.md §1.6; "other formats" are the families in
repro/checkers/families/ (docs/checkers.md, "Other tool-call formats").

| kind | group | meaning |
|---|---|---|
| `block_lead_in` | markup | A tool-call block opener not preceded by the blank line (`\\n\\n`) that starts it (rule 2). |
| `wrong_block_name` | markup | A block named for another DSML generation, e.g. V4's `<｜DSML｜tool_calls>` in V3.2 output. |
| `unknown_tag` | markup | A `<｜DSML｜…>` tag whose name is not `function_calls`, `invoke` or `parameter` (e.g. `param`, `toolcalls`). |
| `ascii_bars` | markup | A DSML marker written with ASCII `\\|` instead of U+FF5C `｜`. |
| `doubled_bars` | markup | A DSML marker with doubled bars, e.g. `｜｜DSML｜｜`. |
| `garbled_marker` | markup | Any other mangled DSML marker: spaces inside it, a bar missing. |
| `missing_dsml_prefix` | markup | Tool-call markup without the `｜DSML｜` token: `<function_calls>`, `<invoke name="…`, `<parameter name="…" string="…`. |
| `bad_separator` | markup | Text between two tags other than the single `>` + newline the grammar allows (rules 3, 5). |
| `malformed_invoke` | markup | An invoke tag not of the form `<｜DSML｜invoke name="NAME">` + newline (rule 4), or a name with a quote, `<`, `>` or newline. |
| `malformed_parameter` | markup | A parameter not of the form `<｜DSML｜parameter name="KEY" string="…">VALUE</｜DSML｜parameter>` (rule 5). |
| `bad_string_attribute` | markup | A parameter whose `string` attribute is missing or neither `true` nor `false` (rule 5). |
| `duplicate_parameter` | markup | The same parameter name twice in one invoke (rule 6). |
| `unbalanced_markup` | markup | A well-formed DSML tag where the block's structure does not allow it: a stray closer, an opener inside another tag. |
| `empty_block` | markup | A tool-call block with no invoke in it. |
| `text_after_block` | markup | Anything but the end-of-sentence token after the block's closing tag, a second block included (rule 7). |
| `text_after_eos` | markup | Text after the end-of-sentence token. |
| `truncated_block` | markup | The text ends inside the tool-call block, and generation was not cut by the length limit. |
| `truncated_call` | markup | Generation hit the length limit (finish_reason `length`) inside a tool call. |
| `markup_in_content` | leak | Well-formed tool-call markup (DSML, or the format's own markers) in content outside the calls that may end it (rule 8). |
| `markup_in_reasoning` | leak | Tool-call markup (DSML, or the format's own markers) in the reasoning (rules 1, 8). |
| `markup_in_value` | leak | Tool-call markup (DSML, or the format's own markers) inside a parameter value or an argument string, raw or server-parsed. |
| `special_token` | leak | A special token as text: BOS, EOS (except one at the very end), `<｜User｜>`, `<think>`, `</think>`, any `<｜…｜>` token. |
| `unknown_tool` | call | A call to a tool the request did not declare. |
| `invalid_json_value` | call | A `string="false"` parameter value that is not JSON (NaN and Infinity included). |
| `invalid_arguments` | call | Server-parsed `arguments` that are not a JSON object. |
| `schema_violation` | call | Arguments that fail the tool's JSON Schema (required, types, enums, additionalProperties, nested). |
| `replacement_char` | text | U+FFFD REPLACEMENT CHARACTER: bytes that failed to decode. |
| `mojibake` | text | UTF-8 read as Latin-1 or cp1252, e.g. `Ã©` for `é`, `â€™` for `’`. |
| `invalid_char` | text | NUL, a C1 control character (U+0080 to U+009F) or a lone surrogate. |
| `runaway_repetition` | text | At least 512 characters that repeat one unit of at most 512 characters 8 or more times; or a word's unit of at most 5 characters repeated 100 times over at least 160 characters (a short-period loop). |
| `empty_turn` | turn | No content (besides whitespace) and no tool call. |
| `bad_framing` | markup | Other formats: text between two markers other than the exact bytes the model's template writes there (a newline missing, doubled or added, indentation, stray text between calls). |
| `malformed_call` | markup | Other formats: a call's head not of the grammar's form: no name, a name that is not an identifier, an unterminated `<function=NAME`, a Hermes object without exactly `name` and `arguments`, a Harmony header not `to=functions.NAME <\\|constrain\\|>json`. |
| `malformed_arguments` | markup | Other formats: a call's JSON payload that is not one JSON object (empty, cut, two objects, trailing text), or a string inside it cut open by a marker. |
| `unclosed_element` | markup | Other formats: an element ended by the next one or by its parent's end instead of its own closing marker (a Qwen or MiniMax parameter closed by the next parameter, a `<tool_call>` closed by the next); engines recover it, the model's grammar never writes it. |
| `missing_open_tag` | markup | Other formats: an element without its opening marker (`<function=` with no `<tool_call>`, `<invoke` with no `<minimax:tool_call>`, a Kimi call with no section, a GLM `</arg_key>` with no `<arg_key>`). |
| `marker_variant` | markup | Other formats: a marker spelled as some engine accepts but the model never writes it (Kimi's singular `<\\|tool_call_section_begin\\|>`, a Kimi id without `functions.`, Mistral's `[TOOL_CALLS` without `]`). |
| `stray_marker` | markup | Other formats: a well-formed marker where the grammar does not allow it (a closer without its opener, an opener inside a call, a second reasoning end). |
| `bad_call_id` | call | Other formats: a call id not of the model's form (Kimi `functions.NAME:IDX` with IDX counting up by one within the turn, the name matching the call; Mistral's nine alphanumerics). |
| `value_type_mismatch` | call | Other formats: an untyped parameter text (Qwen3 XML, GLM, MiniMax) that cannot be read as any type the parameter's schema allows, e.g. `five` for an integer. |
| `python_literal` | call | Other formats: a non-string parameter written in Python's spelling (`True`, `None`, single-quoted strings) where the template writes JSON; engines coerce it with `literal_eval`. |
| `call_in_reasoning` | leak | A tool call opened before the reasoning closes where the format forbids it, or tool-call markup in a separately returned reasoning (the client never gets that call). |
| `recipient_on_analysis` | leak | Harmony: a `to=` recipient on the `analysis` channel; the model addresses tools only from `commentary`. |
| `stripped_marker` | leak | A special marker's text with its bracketing token stripped or garbled (`tool_call_begin`, `functions.get:0` without Kimi's tokens, `tool▁sep`, a bare Hermes `{"name": ..., "arguments": ...}`): the detokenizer dropped special tokens. |
| `partial_marker` | leak | Text that ends in the first characters of a marker (`<tool_ca`, `<\\|tool_call`, `[TOOL_CA`): a marker cut or flushed as text in pieces. |
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    BLOCK_LEAD_IN = "block_lead_in"
    WRONG_BLOCK_NAME = "wrong_block_name"
    UNKNOWN_TAG = "unknown_tag"
    ASCII_BARS = "ascii_bars"
    DOUBLED_BARS = "doubled_bars"
    GARBLED_MARKER = "garbled_marker"
    MISSING_DSML_PREFIX = "missing_dsml_prefix"
    BAD_SEPARATOR = "bad_separator"
    MALFORMED_INVOKE = "malformed_invoke"
    MALFORMED_PARAMETER = "malformed_parameter"
    BAD_STRING_ATTRIBUTE = "bad_string_attribute"
    DUPLICATE_PARAMETER = "duplicate_parameter"
    UNBALANCED_MARKUP = "unbalanced_markup"
    EMPTY_BLOCK = "empty_block"
    TEXT_AFTER_BLOCK = "text_after_block"
    TEXT_AFTER_EOS = "text_after_eos"
    TRUNCATED_BLOCK = "truncated_block"
    TRUNCATED_CALL = "truncated_call"
    MARKUP_IN_CONTENT = "markup_in_content"
    MARKUP_IN_REASONING = "markup_in_reasoning"
    MARKUP_IN_VALUE = "markup_in_value"
    SPECIAL_TOKEN = "special_token"
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_JSON_VALUE = "invalid_json_value"
    INVALID_ARGUMENTS = "invalid_arguments"
    SCHEMA_VIOLATION = "schema_violation"
    REPLACEMENT_CHAR = "replacement_char"
    MOJIBAKE = "mojibake"
    INVALID_CHAR = "invalid_char"
    RUNAWAY_REPETITION = "runaway_repetition"
    EMPTY_TURN = "empty_turn"
    BAD_FRAMING = "bad_framing"
    MALFORMED_CALL = "malformed_call"
    MALFORMED_ARGUMENTS = "malformed_arguments"
    UNCLOSED_ELEMENT = "unclosed_element"
    MISSING_OPEN_TAG = "missing_open_tag"
    MARKER_VARIANT = "marker_variant"
    STRAY_MARKER = "stray_marker"
    BAD_CALL_ID = "bad_call_id"
    VALUE_TYPE_MISMATCH = "value_type_mismatch"
    PYTHON_LITERAL = "python_literal"
    CALL_IN_REASONING = "call_in_reasoning"
    RECIPIENT_ON_ANALYSIS = "recipient_on_analysis"
    STRIPPED_MARKER = "stripped_marker"
    PARTIAL_MARKER = "partial_marker"


def doc_table_rows(doc: str) -> dict[str, tuple[str, str]]:
    """The rows of a docstring's three-column table whose first cell is a `kind`."""
    rows = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0] != "`kind`":
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


# kind -> (group, meaning), read from the table above so the table is the one source.
MEANINGS: dict[str, tuple[str, str]] = doc_table_rows(__doc__ or "")


def table_markdown() -> str:
    """The kinds table as markdown, exactly as docs/checkers.md must contain it."""
    head = "| kind | group | meaning |\n|---|---|---|\n"
    return head + "".join(f"| `{k}` | {g} | {m} |\n" for k, (g, m) in MEANINGS.items())
