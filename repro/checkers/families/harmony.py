"""gpt-oss Harmony messages read strictly (repro.toolformats.harmony has the grammar).

A completion is messages: the first opens with `<|channel|>` (the prompt ends in
`<|start|>assistant`), each later one with `<|start|>assistant`. A header is `analysis`,
`final`, `commentary` (a preamble), or `commentary to=functions.NAME <|constrain|>json`
(a call); the recipient may instead follow the role, `assistant to=functions.NAME`, as the
Harmony docs allow. Analysis and preambles end with `<|end|>`; a call ends the completion
with `<|call|>`, the final answer with `<|return|>`, either possibly trimmed as a stop
token. Flagged: a recipient on `analysis` (recipient_on_analysis), a call without
`<|constrain|>json` or with another terminator (malformed_call), anything after a call or
the final answer (text_after_eos).
"""

from __future__ import annotations

import re
from enum import IntEnum, auto

from repro.checkers.families.calls import TOOL_NAME_TEXT, CallDraft, key_finder, read_json_arguments
from repro.checkers.families.canonical import free_text, json_object, quiet_text
from repro.checkers.families.family import Family
from repro.checkers.families.findings import Findings
from repro.checkers.families.json_payload import PayloadCache
from repro.checkers.families.leaks import LeakScan, Where
from repro.checkers.families.reader import Reader
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import snippet
from repro.toolformats.harmony import (
    ASSISTANT,
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    MESSAGE,
    RETURN,
    START,
)

MARKERS = (START, CHANNEL, MESSAGE, CONSTRAIN, END, CALL, RETURN)
_RECIPIENT = re.compile(r"(analysis|commentary|final) to=functions\.([^\s<>]+) \Z")
_ROLE_RECIPIENT = re.compile(r"assistant to=functions\.([^\s<>]+)\Z")
STRIPPED = (r"assistant(?:analysis|commentary|final)", r"to=functions\.[A-Za-z0-9_.\-]{1,64}")
SPECIALS = (r"<\|[A-Za-z_]{2,32}\|>",)


class _S(IntEnum):
    CHANNEL = auto()  # a message's channel marker must come next
    ROLE = auto()  # after <|start|>: `assistant`, maybe a recipient, then <|channel|>
    HEADER = (
        auto()
    )  # after <|channel|>: the channel and recipient, then <|message|> or <|constrain|>
    CONSTRAINED = auto()  # after <|constrain|>: `json`, then <|message|>
    BODY = auto()  # after <|message|>: the body, then its terminator
    BETWEEN = auto()  # after <|end|>: <|start|> next
    DONE = auto()  # after <|call|> or <|return|>: nothing


class HarmonyReader(Reader):
    think_open = think_close = "\0"  # reasoning is the analysis channel, not markers
    markers = MARKERS

    def __init__(self, out: Findings, reasoning_apart: bool) -> None:
        super().__init__(out, reasoning_apart)
        self.state = _S.CHANNEL
        self.msg_at = 0
        self.channel = ""
        self.recipient: str | None = None
        self.role_recipient: str | None = None
        self.constrained = False
        self.body_at = 0
        self.payloads = PayloadCache()

    def in_call(self) -> bool:
        return True  # no reasoning markers for the base to take

    def keeps_as_text(self, seg: str) -> bool:
        in_call_body = self.state is _S.BODY and self.recipient is not None
        return in_call_body and self.payloads.read(seg).open_string

    def outside_text(self, seg: str, seg_at: int) -> None:  # never called: in_call() is True
        raise AssertionError

    def on_marker(self, seg: str, seg_at: int, marker: str, at: int) -> bool:
        state = self.state
        if marker == CHANNEL and state in (_S.CHANNEL, _S.ROLE):
            if state is _S.CHANNEL:
                self._nothing(seg, seg_at, "before the first message")
            else:
                self._role(seg, seg_at)
            self.msg_at = at
            self.state = _S.HEADER
        elif marker == START and state is _S.BETWEEN:
            self._nothing(seg, seg_at, "between messages")
            self.state = _S.ROLE
        elif marker == CONSTRAIN and state is _S.HEADER:
            self._header(seg, seg_at, constrained=True)
            self.state = _S.CONSTRAINED
        elif marker == MESSAGE and state in (_S.HEADER, _S.CONSTRAINED):
            if state is _S.HEADER:
                self._header(seg, seg_at, constrained=False)
            elif seg != "json":
                self.out.add(Kind.MALFORMED_CALL, seg_at, f"`{CONSTRAIN}{snippet(seg)}`: not json")
            self._check_call_header(at)
            self.body_at = at + len(marker)
            self.state = _S.BODY
        elif marker in (END, CALL, RETURN) and state is _S.BODY:
            self._body(seg, seg_at, marker, at)
        else:
            self.out.add(Kind.STRAY_MARKER, at, f"`{marker}` where the grammar does not allow it")
            if marker == START:
                self.state = _S.ROLE
            elif marker == CHANNEL:
                self.state = _S.HEADER
        return False

    def on_end(self, seg: str, seg_at: int) -> None:
        state = self.state
        if state is _S.BODY and (self.recipient is not None or self.channel == "final"):
            self._body(seg, seg_at, None, seg_at + len(seg))  # its stop token trimmed
        elif state is _S.BODY:
            self._prose_body(seg, seg_at)
            self.tail(seg, seg_at)
        elif state is _S.DONE:
            if seg:
                self.out.add(
                    Kind.TEXT_AFTER_EOS, seg_at, f"text after the stop token: `{snippet(seg)}`"
                )
        elif state is _S.BETWEEN:
            self._nothing(seg, seg_at, "after the last message")
            self.tail(seg, seg_at)
        elif state is _S.CHANNEL and seg_at == 0:
            self._content(seg, seg_at)  # no message at all: text (and what it leaked)
            self.tail(seg, seg_at)
        elif self.first_call_at != -1 or self.channel.startswith("commentary to="):
            self.out.truncated(self.msg_at, "a tool call's header")
        elif seg_at + len(seg) > 0 and not self.tail(seg, seg_at):
            self.out.add(Kind.MALFORMED_CALL, self.msg_at, "the text ends inside a message header")

    # -- parts ------------------------------------------------------------------------

    def _nothing(self, seg: str, seg_at: int, where: str) -> None:
        if seg:
            self.out.add(Kind.BAD_FRAMING, seg_at, f"text {where}: `{snippet(seg)}`")

    def _role(self, seg: str, seg_at: int) -> None:
        self.role_recipient = None
        if seg == ASSISTANT:
            return
        m = _ROLE_RECIPIENT.match(seg)
        if m is not None:
            self.role_recipient = m.group(1)
        else:
            self.out.add(Kind.BAD_FRAMING, seg_at, f"role `{snippet(seg)}`: expected `assistant`")

    def _header(self, seg: str, seg_at: int, constrained: bool) -> None:
        self.constrained = constrained
        self.recipient = self.role_recipient
        if constrained:
            m = _RECIPIENT.match(seg)
            if m is not None:
                self.channel, self.recipient = m.group(1), m.group(2)
                return
            if self.role_recipient is not None and seg in ("commentary ", "analysis "):
                self.channel = seg[:-1]
                return
            self.channel = seg
            self.out.add(Kind.MALFORMED_CALL, seg_at, f"header `{snippet(seg)}` is not a call's")
            return
        self.channel = seg
        if seg in ("analysis", "commentary", "final"):
            return
        m = re.match(r"(analysis|commentary|final) to=functions\.([^\s<>]+)\s*(?:json)?\Z", seg)
        if m is not None:
            self.channel, self.recipient = m.group(1), m.group(2)
            self.out.add(
                Kind.MALFORMED_CALL, seg_at, f"call header `{snippet(seg)}` lacks `{CONSTRAIN}json`"
            )
        else:
            self.out.add(
                Kind.BAD_FRAMING, seg_at, f"channel `{snippet(seg)}` is not one of Harmony's"
            )

    def _check_call_header(self, at: int) -> None:
        if self.recipient is None:
            return
        self.call_opens(self.msg_at)
        if self.channel == "analysis":
            self.out.add(
                Kind.RECIPIENT_ON_ANALYSIS,
                self.msg_at,
                f"a call to {self.recipient!r} on the analysis channel",
            )
        elif self.channel != "commentary":
            self.out.add(
                Kind.MALFORMED_CALL, self.msg_at, f"a call on the {self.channel!r} channel"
            )

    def _body(self, seg: str, seg_at: int, terminator: str | None, at: int) -> None:
        if self.recipient is None:
            self._prose_body(seg, seg_at)
            want = RETURN if self.channel == "final" else END
            if terminator is None and want == END:
                self.out.truncated(self.msg_at, f"the {self.channel} message")
            elif terminator is not None and terminator != want:
                self.out.add(
                    Kind.STRAY_MARKER, at, f"a {self.channel} message ends with `{terminator}`"
                )
        else:
            call = CallDraft(self.msg_at)
            broken = (
                not self.constrained
                or self.channel != "commentary"
                or terminator not in (CALL, None)
            )
            if terminator not in (CALL, None):
                self.out.add(
                    Kind.MALFORMED_CALL, at, f"a call ends with `{terminator}`, not `{CALL}`"
                )
            call.set_name(self.out, self.recipient, self.msg_at)
            call.broken = call.broken or broken
            read_json_arguments(self.out, call, seg, seg_at, self.payloads.read(seg))
        self.state = _S.BETWEEN if terminator == END else _S.DONE

    def _prose_body(self, seg: str, seg_at: int) -> None:
        if self.channel == "analysis":
            self.out.text(seg, seg_at, Where.REASONING)
        else:
            self._content(seg, seg_at)


LEAKS = LeakScan(MARKERS, (), STRIPPED, SPECIALS)
_BODY = free_text(MARKERS)
# The usual completion: [analysis] [preamble] then a call or the final answer, stop token
# kept or trimmed.
_CANONICAL = re.compile(
    r"(?:<\|channel\|>analysis<\|message\|>(?P<analysis>"
    + _BODY
    + r")<\|end\|><\|start\|>assistant)?"
    r"(?:<\|channel\|>commentary<\|message\|>(?P<preamble>"
    + _BODY
    + r")<\|end\|><\|start\|>assistant)?"
    r"(?:(?P<call><\|channel\|>)commentary to=functions\.(?P<name>" + TOOL_NAME_TEXT + r") "
    r"<\|constrain\|>json<\|message\|>(?P<args>" + _BODY + r")(?:<\|call\|>)?"
    r"|<\|channel\|>final<\|message\|>(?P<final>" + _BODY + r")(?:<\|return\|>)?)\Z"
)


def read_canonical_harmony(text: str, out: Findings, reasoning_apart: bool) -> bool:
    """The shortcut (canonical.py) for Harmony's usual shapes; False, nothing recorded, else."""
    m = _CANONICAL.match(text)
    if m is None:
        return False
    args = None
    if m["name"] is not None:
        args = json_object(m["args"])
        if args is None:
            return False
    prose = [m[p] for p in ("analysis", "preamble", "final") if m[p] is not None]
    out.quiet = quiet_text(LEAKS, prose, [m["args"]] if m["args"] is not None else [])
    if m["analysis"] is not None:
        out.text(m["analysis"], m.start("analysis"), Where.REASONING)
    said = False
    for part in ("preamble", "final"):
        if m[part] is not None:
            said = said or bool(m[part].strip())
            out.text(m[part], m.start(part), Where.CONTENT)
    if args is not None:
        at, args_at = m.start("call"), m.start("args")
        out.json_strings(args, m["args"], args_at)
        out.call(m["name"], args, at, key_finder(m["args"], args_at, at))
    elif not said:
        out.add(Kind.EMPTY_TURN, 0, "the turn has no content and no tool call")
    return True


HARMONY = Family(
    "harmony",
    "raw gpt-oss completion text (Harmony messages)",
    MARKERS,
    HarmonyReader,
    LEAKS,
    read_canonical_harmony,
)
