"""A whole turn confirmed clean in one go, or left to the state machine.

Most turns are exactly what DeepSeek's encoder writes: prose, then perhaps one block of
canonical invokes, then perhaps EOS, and nothing wrong with them. Reading such a text tag
by tag (stream.py) takes hundreds of Python steps; a few regular expressions and string
searches, run in C, prove the same. `read_clean_turn` answers only with the state
machine's own verdict, and only when that verdict has no defect at all; for anything
else, or anything it is not sure of, it says None: read it tag by tag. A test holds the
two readings equal on the corpus, corruptions of it and random schemas.

Why a turn that passes gives the state machine's verdict:
- Content: every trigger of markup_scan in it is judged as the state machine judges it,
  on the same window, and none may be a finding. Content holding `<｜` is refused outright:
  that is where a stop string, EOS or a cut-off token would start.
- Block: one regular expression matches the whole block as the encoder writes it (rules
  2-7; names in printable ASCII without quotes, angle brackets or bars; parameter names
  short enough for HEAD_LIMIT_CHARS). A value runs to the first `<｜` or `</｜`; DeepSeek's
  reader ends it at the first `/｜DSML｜parameter`, which could only come sooner through a
  `｜DSML｜` in the value, and that is a finding of the value's scan, so the turn would be
  refused. Values are scanned as the state machine scans them; a name can hold no
  trigger but the plain word DSML, which is no finding.
- Characters: a defect starts only at NUL, a C1 control, a surrogate, U+FFFD or a
  mojibake lead. Tags, names and EOS hold none of these, nor anything that continues a
  mojibake, so the text holds a character defect only if its content or a value does.
- Calls, schema checks and runaway repetition (on the whole text) are the functions the
  state machine calls.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from repro.checkers.char_scan import may_start_defect
from repro.checkers.dsml.canonical import canonical_tags
from repro.checkers.dsml.tags import param_value
from repro.checkers.json_codec import arguments_text
from repro.checkers.json_strings import strings_in
from repro.checkers.markup_scan import Where, holds_trigger, scan_markup
from repro.checkers.repetition import LOOP_MIN_CHARS, RepetitionProbe
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import ToolCall, Verdict
from repro.dsml.markers import BAR, DSML, EOS, V32, Dialect

_NON_SPACE = re.compile(r"\S")
_PROSE = Verdict((), ())  # a clean turn without calls (verdicts are immutable: one will do)


class _Grammar(NamedTuple):
    opener: str  # the block's opening tag without `>`
    block: re.Pattern[str]  # the whole block
    pieces: re.Pattern[str]  # its pieces: (invoke name, key, string attribute, value)


@functools.cache
def _grammar(dialect: Dialect) -> _Grammar:
    invoke, param = canonical_tags(lambda p: f"(?:{p})")
    block = re.compile(
        f"{dialect.block_opener}>\n"
        f"(?:{invoke}(?:\n|(?:{param})+)</{DSML}invoke>\n)+"
        f"{dialect.block_close}"
    )
    return _Grammar(
        dialect.block_opener, block, re.compile("|".join(canonical_tags(lambda p: f"({p})")))
    )


_V32_GRAMMAR = _grammar(V32)  # hashing the dialect on every turn would cost more than a check


def read_clean_turn(text: str, tools: ToolSet, dialect: Dialect = V32) -> Verdict | None:
    """The verdict on a whole completion text if it is a canonical turn with no defect,
    else None (read it tag by tag)."""
    grammar = _V32_GRAMMAR if dialect is V32 else _grammar(dialect)
    end = len(text) - len(EOS) if text.endswith(EOS) else len(text)
    at = text.find(grammar.opener, 0, end)
    content_end = end if at == -1 else at
    if at == -1:
        if _NON_SPACE.search(text, 0, end) is None:
            return None  # an empty turn
        pieces = []
    elif text[at - 2 : at] != "\n\n" or grammar.block.fullmatch(text, at, end) is None:
        return None  # no lead-in, or not the encoder's block
    else:
        pieces = grammar.pieces.findall(text, at, end)
    values = [p[3] for p in pieces]
    # No trigger and no character defect spans a newline: one search of the values joined
    # by newlines answers for each.
    joined = "\n".join(values)
    triggered = holds_trigger(joined)
    if triggered and any(scan_markup(v, Where.VALUE, dialect) for v in values):
        return None
    content = text[:content_end]
    if not _plain_content(content, dialect) or may_start_defect(content):
        return None
    if may_start_defect(joined):
        return None
    calls = _calls(pieces, tools, dialect, triggered) if pieces else ()
    if calls is None:
        return None
    if len(text) >= LOOP_MIN_CHARS:  # shorter text holds no run
        repetition = RepetitionProbe()
        repetition.advance(text, 0, final=True)
        if repetition.run is not None:
            return None
    return Verdict(calls, ()) if calls else _PROSE


def _plain_content(content: str, dialect: Dialect) -> bool:
    """No markup finding in the content, judged as the content segment is."""
    if not holds_trigger(content):
        return True
    if f"<{BAR}" in content:
        return False
    return not scan_markup(content, Where.CONTENT, dialect)


def _calls(
    pieces: list[tuple[str, str, str, str]], tools: ToolSet, dialect: Dialect, triggered: bool
) -> tuple[ToolCall, ...] | None:
    """The block's calls, from its pieces, if every one is clean; `triggered`: some value
    holds a trigger string."""
    calls: list[ToolCall] = []
    name: str | None = None
    args: dict = {}
    for piece in pieces:
        key, attribute, raw = piece[1], piece[2], piece[3]
        if not attribute:  # an invoke's tag; its parameters follow
            if name is not None:
                if (call := _clean_call(name, args, tools)) is None:
                    return None
                calls.append(call)
            name, args = piece[0], {}
            continue
        if key in args:
            return None
        try:
            value = param_value(raw, attribute == "true")
        except ValueError:
            return None
        if attribute == "true":
            args[key] = value
            continue
        # Markup behind JSON escapes: a decoded string holds a trigger the raw value does
        # not show only through \u (the others decode to quotes, slashes, backslashes and
        # control characters, which no trigger holds).
        hidden = "\\" in raw and (triggered or "\\u" in raw)
        if hidden and any(scan_markup(s, Where.VALUE, dialect) for s in strings_in(value)):
            return None
        args[key] = value
    assert name is not None  # the block holds an invoke
    call = _clean_call(name, args, tools)
    return None if call is None else (*calls, call)


def _clean_call(name: str, args: dict, tools: ToolSet) -> ToolCall | None:
    """The call as the state machine writes it, if its tool is declared and it fits the schema."""
    if name not in tools.validators:
        return None
    arguments = arguments_text(args)
    if tools.violations(name, args, arguments):
        return None
    return ToolCall(name, arguments)
