"""Conformance corpus for the tool-call formats beside DSML: clean and corrupted turns per family.

Test and bench data, not shipped. Clean turns are written by each family's encoder
(repro.toolformats) from the DSML corpus's calls and prose, plus hand-written edge cases;
corrupted turns apply one bug class of research/toolformats.md §4 to a clean turn, or are
hand-written. Every case keeps the calls the model meant, so an engine's parse can be held
against them (tests/conformance/family_oracles.py). `cases(family)` is seeded: the same
corpus every run.

Bug classes (`Case.bug`), each named for what goes wrong on the wire:

- `stripped_markers`: special markers deleted by the detokenizer (skip_special_tokens, §4.2)
- `dup_bytes`, `drop_bytes`: argument bytes repeated or lost at a multi-token delta (§4.1)
- `partial_marker`: a marker cut after its first characters, or flushed as text (§4.3)
- `marker_in_value`: a literal marker inside a value, cutting the call there (§4.6)
- `empty_arguments`: a zero-argument call written wrongly: empty JSON, a missing closer (§4.8)
- `call_in_reasoning`: a call before the reasoning closes, or in the reasoning field (§4.9)
- `engine_recovery`: a deviation an engine parses anyway (a parameter closed by the next,
  a missing open tag, Kimi's singular section marker, a recipient on analysis, ...) (§0.4)
- `splice`: bytes of another turn in place of this one's (the story's stale read)
- `framing`: a newline or space added or dropped between markers
- `unknown_tool`, `wrong_type`: a call the request's tools refuse (§4.12, §4.10)
- `mojibake`: UTF-8 read as Latin-1, or U+FFFD, inside a value
- `truncated`: the text ends inside a call
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from repro.toolformats import (
    ENCODERS,
    deepseek_v31,
    glm,
    harmony,
    hermes,
    kimi_k2,
    minimax_m2,
    mistral,
    qwen3_coder,
)
from tests.dsml_corpus import TOOLS, samples

__all__ = ["BUGS", "FAMILIES", "TOKENS", "TOOLS", "Case", "cases", "clean_cases", "fits"]
FAMILIES = tuple(ENCODERS)
Call = tuple[str, dict[str, Any]]
REASONING = (
    "The user wants the file; I should read it first, then answer.",
    "Plan:\n1. search\n2. read the top result\nCheck x < y and a > b before calling.",
    "思考：先查天气，再回答。",
)


@dataclass(frozen=True, slots=True)
class Case:
    """One turn: `text` is the completion as served (reasoning inside it when the family's
    reasoning parser did not split it), `calls` what the model meant; `engine_text` is what
    a server's tool parser sees, the text after the reasoning."""

    family: str
    id: str
    text: str
    calls: tuple[Call, ...]
    clean: bool
    bug: str = ""
    engine_text: str = ""
    reasoning: str = ""  # a separately returned reasoning field
    finish_reason: str | None = None
    note: str = ""


# What each family's text may not hold as prose or values: its markers and special tokens.
_RESERVED: dict[str, tuple[str, ...]] = {
    "qwen3_coder": (
        "<tool_call",
        "</tool_call",
        "<function=",
        "</function",
        "<parameter=",
        "</parameter",
        "think>",
        "<|",
    ),
    "hermes": ("<tool_call", "</tool_call", "think>", "<|"),
    "deepseek_v31": ("｜", "think>", "tool▁"),
    "kimi_k2": ("<|", "think>", "tool_call", "functions."),
    "glm45": ("<tool_call", "</tool_call", "arg_key>", "arg_value>", "think>", "<|", "<sop>"),
    "glm47": ("<tool_call", "</tool_call", "arg_key>", "arg_value>", "think>", "<|", "<sop>"),
    "harmony": ("<|", "to=functions", "assistantfinal"),
    "minimax_m2": (
        "minimax:",
        "<invoke",
        "</invoke",
        "<parameter name=",
        "</parameter",
        "think>",
        "]~",
        "[e~",
    ),
    "mistral": ("[TOOL_CALLS", "[ARGS", "THINK]", "[INST", "</s>", "[CALL_ID"),
}
# The markers a detokenizer with skip_special_tokens drops (in Qwen's and MiniMax's case, a
# configuration that makes their added tokens special, vLLM #25281).
_SPECIAL: dict[str, tuple[str, ...]] = {
    "qwen3_coder": (qwen3_coder.TOOL_CALL_OPEN, qwen3_coder.TOOL_CALL_CLOSE),
    "hermes": (hermes.TOOL_CALL_OPEN, hermes.TOOL_CALL_CLOSE),
    "deepseek_v31": (
        deepseek_v31.CALLS_BEGIN,
        deepseek_v31.CALLS_END,
        deepseek_v31.CALL_BEGIN,
        deepseek_v31.CALL_END,
        deepseek_v31.SEP,
    ),
    "kimi_k2": (
        kimi_k2.SECTION_BEGIN,
        kimi_k2.SECTION_END,
        kimi_k2.CALL_BEGIN,
        kimi_k2.ARGUMENT_BEGIN,
        kimi_k2.CALL_END,
    ),
    "glm45": (
        glm.TOOL_CALL_OPEN,
        glm.TOOL_CALL_CLOSE,
        glm.KEY_OPEN,
        glm.KEY_CLOSE,
        glm.VALUE_OPEN,
        glm.VALUE_CLOSE,
    ),
    "glm47": (
        glm.TOOL_CALL_OPEN,
        glm.TOOL_CALL_CLOSE,
        glm.KEY_OPEN,
        glm.KEY_CLOSE,
        glm.VALUE_OPEN,
        glm.VALUE_CLOSE,
    ),
    "harmony": (
        harmony.START,
        harmony.CHANNEL,
        harmony.MESSAGE,
        harmony.CONSTRAIN,
        harmony.END,
        harmony.CALL,
        harmony.RETURN,
    ),
    "minimax_m2": (minimax_m2.WRAPPER_OPEN, minimax_m2.WRAPPER_CLOSE),
    "mistral": (mistral.TOOL_CALLS, mistral.ARGS),
}
# Where a tool call starts in each family's text, and where its reasoning ends.
_CALL_START: dict[str, str] = {
    "qwen3_coder": qwen3_coder.TOOL_CALL_OPEN,
    "hermes": hermes.TOOL_CALL_OPEN,
    "deepseek_v31": deepseek_v31.CALLS_BEGIN,
    "kimi_k2": kimi_k2.SECTION_BEGIN,
    "glm45": glm.TOOL_CALL_OPEN,
    "glm47": glm.TOOL_CALL_OPEN,
    "harmony": "<|channel|>commentary to=",
    "minimax_m2": minimax_m2.WRAPPER_OPEN,
    "mistral": mistral.TOOL_CALLS,
}
THINK_CLOSE: dict[str, str] = {
    "qwen3_coder": "</think>",
    "hermes": "</think>",
    "deepseek_v31": "</think>",
    "kimi_k2": "</think>",
    "glm45": "</think>",
    "glm47": "</think>",
    "minimax_m2": "</think>",
    "mistral": "[/THINK]",
}
END_OF_TURN: dict[str, str] = {
    "qwen3_coder": "<|im_end|>",
    "hermes": "<|im_end|>",
    "deepseek_v31": "<｜end▁of▁sentence｜>",
    "kimi_k2": "<|im_end|>",
    "glm45": "<|user|>",
    "glm47": "<|observation|>",
    "minimax_m2": "[e~[",
    "mistral": "</s>",
}


# Each family's markers that are one token of its tokenizer, and those its tokenizer flags
# special (research/toolformats.md §1a, §2.4): a server's stream never splits them, and a
# detokenizer with skip_special_tokens drops the special ones. Text markers (Qwen's
# `<function=`, MiniMax's `<invoke name="`) are several tokens and may be split.
_QWEN_TOKENS = ("<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_end|>", "<|endoftext|>")
_GLM_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<think>",
    "</think>",
    "<|user|>",
    "<|observation|>",
    "<|endoftext|>",
    "<|assistant|>",
)
_DEEPSEEK_TOKENS = (
    deepseek_v31.CALLS_BEGIN,
    deepseek_v31.CALLS_END,
    deepseek_v31.CALL_BEGIN,
    deepseek_v31.CALL_END,
    deepseek_v31.SEP,
    "<｜end▁of▁sentence｜>",
)
_KIMI_TOKENS = (
    kimi_k2.SECTION_BEGIN,
    kimi_k2.SECTION_END,
    kimi_k2.CALL_BEGIN,
    kimi_k2.ARGUMENT_BEGIN,
    kimi_k2.CALL_END,
    "<|im_end|>",
    "<think>",
    "</think>",
)
_HARMONY_TOKENS = (
    harmony.START,
    harmony.CHANNEL,
    harmony.MESSAGE,
    harmony.CONSTRAIN,
    harmony.END,
    harmony.CALL,
    harmony.RETURN,
)
_MISTRAL_TOKENS = ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]", "</s>", "[INST]")
TOKENS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "qwen3_coder": (_QWEN_TOKENS, ("<|im_end|>", "<|endoftext|>")),
    "hermes": (_QWEN_TOKENS, ("<|im_end|>", "<|endoftext|>")),
    "deepseek_v31": ((*_DEEPSEEK_TOKENS, "<think>", "</think>"), _DEEPSEEK_TOKENS),
    "kimi_k2": (_KIMI_TOKENS, _KIMI_TOKENS),
    "glm45": (_GLM_TOKENS, _GLM_TOKENS),
    "glm47": (_GLM_TOKENS, _GLM_TOKENS),
    "harmony": (_HARMONY_TOKENS, _HARMONY_TOKENS),
    "minimax_m2": (
        ("<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>", "[e~["),
        ("[e~[",),
    ),
    "mistral": (_MISTRAL_TOKENS, _MISTRAL_TOKENS),
}


def engine_text(family: str, text: str) -> str:
    """What a server's tool parser gets: the text after the reasoning parser took its part
    (Harmony's parser reads the channels itself)."""
    close = THINK_CLOSE.get(family)
    if close is None or close not in text:
        return text
    return text.split(close, 1)[1].lstrip("\n") if family != "glm47" else text.split(close, 1)[1]


def encode(family: str, calls: tuple[Call, ...], content: str, reasoning: str | None) -> str:
    return ENCODERS[family](calls, content, reasoning)


def fits(family: str, calls: tuple[Call, ...], content: str) -> bool:
    """Whether a turn's prose and values hold none of the family's markers or special tokens."""
    words = json.dumps([content, calls], ensure_ascii=False) + content
    for call in calls:
        words += "".join(str(v) for v in call[1].values())
    return not any(r in words for r in _RESERVED[family])


def _case(family: str, id: str, text: str, calls, clean: bool, **more: Any) -> Case:
    return Case(
        family, id, text, tuple(calls), clean, engine_text=engine_text(family, text), **more
    )


def clean_cases(family: str, count: int = 300, seed: int = 11) -> list[Case]:
    """Generated healthy turns: the encoder's text for the DSML corpus's calls and prose."""
    rng = random.Random(f"{family}-{seed}")
    found: list[Case] = []
    for sample in samples(count * 3, seed=seed):
        if len(found) == count:
            break
        calls = sample.calls[:1] if family == "harmony" else sample.calls
        if not fits(family, calls, sample.content):
            continue
        reasoning = rng.choice(REASONING) if rng.random() < 0.3 else None
        text = encode(family, calls, sample.content, reasoning)
        if family in END_OF_TURN and rng.random() < 0.2:
            text += END_OF_TURN[family]
        found.append(_case(family, f"{family}/clean/{len(found)}", text, calls, True))
    return found


def handwritten_clean(family: str) -> list[Case]:
    """Edge cases a healthy model writes, one family at a time."""
    e = ENCODERS[family]
    z: tuple[Call, ...] = (("get_date", {}),)
    one: tuple[Call, ...] = (("search", {"query": "naïve café ☕\nline two <b>&</b>", "topn": 7}),)
    rows: list[tuple[str, str, tuple[Call, ...]]] = [
        ("zero-argument call", e(z, "", None), z),
        ("unicode, newlines, < > & in a value", e(one, "", None), one),
        (
            "empty string value",
            e((("search", {"query": ""}),), "", None),
            (("search", {"query": ""}),),
        ),
        ("reasoning, then content and a call", e(one, "Searching.", "Think it through."), one),
        ("content only", e((), "The answer is 42.", None), ()),
    ]
    if family != "harmony":
        two = (("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"}))
        rows.append(("two calls to one tool", e(two, "", None), two))
    extra = _HANDWRITTEN_CLEAN.get(family, ())
    rows += [(note, text, tuple(calls)) for note, text, calls in extra]
    return [
        _case(family, f"{family}/clean-hand/{i}", text, calls, True, note=note)
        for i, (note, text, calls) in enumerate(rows)
    ]


_Q = qwen3_coder
_HANDWRITTEN_CLEAN: dict[str, tuple[tuple[str, str, tuple[Call, ...]], ...]] = {
    "qwen3_coder": (
        (
            "Qwen3.5: <tool_call> opens inside an explicit <think>, an implicit end",
            "<think>\nI will look it up.\n" + _Q.encode_call("get_date", {}),
            (("get_date", {}),),
        ),
        (
            "markup of the format inside a value is text: Qwen's markers are ordinary tokens",
            _Q.encode_call(
                "write_file", {"path": "t.md", "content": "use <tool_call> and <function=f>"}
            ),
            (("write_file", {"path": "t.md", "content": "use <tool_call> and <function=f>"}),),
        ),
        (
            "a string value padded with spaces and newlines",
            _Q.encode_call("search", {"query": "\n  spaced  \n"}),
            (("search", {"query": "\n  spaced  \n"}),),
        ),
    ),
    "hermes": (
        (
            "</tool_call> inside a JSON string is data (vLLM #45310)",
            hermes.encode_call("search", {"query": "see </tool_call> and <tool_call>"}),
            (("search", {"query": "see </tool_call> and <tool_call>"}),),
        ),
        (
            "escaped quotes and backslashes",
            hermes.encode_call("search", {"query": 'a "quoted" \\ path'}),
            (("search", {"query": 'a "quoted" \\ path'}),),
        ),
    ),
    "kimi_k2": (
        (
            "the turn's ids continue the conversation's count",
            kimi_k2.encode_kimi_k2((("get_date", {}), ("list_tools", {})), "", None, first_index=5),
            (("get_date", {}), ("list_tools", {})),
        ),
        (
            "K2-Thinking opens the section before </think>: an implicit end",
            "<think>Time to call." + kimi_k2.encode_kimi_k2((("get_date", {}),)),
            (("get_date", {}),),
        ),
    ),
    "glm47": (
        (
            "a zero-argument call inline (vLLM #44326)",
            "<tool_call>get_date</tool_call><tool_call>list_tools</tool_call>",
            (("get_date", {}), ("list_tools", {})),
        ),
    ),
    "glm45": (
        (
            "a string value that looks like JSON stays a string",
            glm.encode_glm45((("search", {"query": "[1, 2]"}),)),
            (("search", {"query": "[1, 2]"}),),
        ),
    ),
    "harmony": (
        (
            "the recipient in the role header, as the Harmony docs allow",
            "<|channel|>analysis<|message|>Need the date.<|end|><|start|>assistant to=functions.get_date"
            "<|channel|>commentary <|constrain|>json<|message|>{}<|call|>",
            (("get_date", {}),),
        ),
        (
            "stop tokens trimmed by the server",
            harmony.encode_harmony((("get_date", {}),), "", "Date.", stop=False),
            (("get_date", {}),),
        ),
        (
            "a final answer with its <|return|> trimmed",
            harmony.encode_harmony((), "Done.", None, stop=False),
            (),
        ),
    ),
    "minimax_m2": (
        (
            "the wrapper's markers inside a value are text",
            minimax_m2.encode_minimax_m2((("search", {"query": "<minimax:tool_call> docs"}),)),
            (("search", {"query": "<minimax:tool_call> docs"}),),
        ),
        (
            "an invoke with no parameter (SGLang #24995)",
            minimax_m2.encode_minimax_m2((("get_date", {}), ("list_tools", {}))),
            (("get_date", {}), ("list_tools", {})),
        ),
    ),
    "mistral": (
        (
            "Magistral reasoning, then calls",
            mistral.encode_mistral((("get_date", {}),), "", "Check the calendar."),
            (("get_date", {}),),
        ),
    ),
    "deepseek_v31": (
        (
            "thinking mode: the reasoning, then a call in content",
            deepseek_v31.encode_deepseek_v31((("get_date", {}),), "Checking.", "The date matters."),
            (("get_date", {}),),
        ),
    ),
}


# -- corruption ------------------------------------------------------------------------------

_JSON_FAMILIES = frozenset({"hermes", "deepseek_v31", "kimi_k2", "harmony", "mistral"})
_JSON_STRUCTURE = frozenset('{}[]:,"')


def _region(family: str, text: str) -> int:
    return text.find(_CALL_START[family])


def _structure_points(family: str, text: str, lo: int) -> list[int]:
    """Where the wire format's own bytes are, from `lo` on: inside its markers, JSON syntax
    outside strings, newlines beside a marker. A byte lost or repeated inside a value's text
    leaves another valid value, which no grammar can tell from the meant one."""
    points: set[int] = set()
    for marker in _SPECIAL[family] + _extra_markers(family):
        at = text.find(marker, lo)
        while at != -1:
            points.update(range(at, at + len(marker)))
            for side in (at - 1, at + len(marker)):
                if 0 <= side < len(text) and text[side] == "\n":
                    points.add(side)
            at = text.find(marker, at + 1)
    if family in _JSON_FAMILIES:
        in_string = escaped = False
        for i in range(lo, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
                    points.add(i)
            elif ch == '"':
                in_string = True
                points.add(i)
            elif ch in _JSON_STRUCTURE:
                points.add(i)
    return sorted(points)


def _structural_span(rng: random.Random, text: str, family: str, lo: int) -> tuple[int, int] | None:
    points = _structure_points(family, text, lo)
    if not points:
        return None
    p = rng.choice(points)
    a = max(lo, p - rng.randint(0, 5))
    return a, min(len(text), p + 1 + rng.randint(0, 6))


def _dup_bytes(rng, family, case, pool):
    span = _structural_span(rng, case.text, family, _region(family, case.text))
    if span is None:
        return None
    a, b = span
    return case.text[:b] + case.text[a:b] + case.text[b:]


def _drop_bytes(rng, family, case, pool):
    span = _structural_span(rng, case.text, family, _region(family, case.text))
    if span is None:
        return None
    a, b = span
    return case.text[:a] + case.text[b:]


def _stripped(rng, family, case, pool):
    text = case.text
    for marker in _SPECIAL[family]:
        text = text.replace(marker, "")
    return text


def _partial_marker(rng, family, case, pool):
    text = case.text
    hits = [
        (text.find(m, _region(family, text)), m) for m in _SPECIAL[family] + _extra_markers(family)
    ]
    hits = [(at, m) for at, m in hits if at != -1 and len(m) > 3]
    if not hits:
        return None
    at, marker = rng.choice(hits)
    cut = rng.randint(3, len(marker) - 1)
    if rng.random() < 0.5:
        return text[:at] + marker[:cut]  # the text ends in the fragment
    return text[:at] + marker[:cut] + text[at + len(marker) :]  # a garbled marker


def _extra_markers(family: str) -> tuple[str, ...]:
    return {
        "qwen3_coder": (_Q.FUNCTION_OPEN, _Q.PARAMETER_OPEN, _Q.PARAMETER_CLOSE, _Q.FUNCTION_CLOSE),
        "minimax_m2": (
            minimax_m2.INVOKE_OPEN,
            minimax_m2.PARAMETER_OPEN,
            minimax_m2.INVOKE_CLOSE,
            minimax_m2.PARAMETER_CLOSE,
        ),
    }.get(family, ())


_VALUE_CLOSER = {
    "qwen3_coder": _Q.PARAMETER_CLOSE,
    "hermes": hermes.TOOL_CALL_CLOSE,
    "deepseek_v31": deepseek_v31.CALL_END,
    "kimi_k2": kimi_k2.CALL_END,
    "glm45": glm.VALUE_CLOSE,
    "glm47": glm.VALUE_CLOSE,
    "harmony": harmony.CALL,
    "minimax_m2": minimax_m2.PARAMETER_CLOSE,
    "mistral": mistral.TOOL_CALLS,
}


def _marker_in_value(rng, family, case, pool):
    """A string value holding the family's closing marker, the call cut short right after
    it, as a parser that takes the marker for the call's end leaves the stream."""
    strings = [
        (i, k)
        for i, (_, args) in enumerate(case.calls)
        for k, v in args.items()
        if isinstance(v, str) and v
    ]
    if not strings:
        return None
    i, key = rng.choice(strings)
    calls = [(n, dict(a)) for n, a in case.calls]
    value = calls[i][1][key]
    cut = rng.randint(0, len(value))
    marker = _VALUE_CLOSER[family]
    calls[i][1][key] = value[:cut] + marker + value[cut:]
    text = encode(family, tuple(calls), "", None)
    written = (
        calls[i][1][key]
        if family not in _JSON_FAMILIES
        else json.dumps(calls[i][1][key], ensure_ascii=False)[1:-1]
    )
    at = text.find(written)
    if at == -1:
        return None
    return text[: at + written.find(marker) + len(marker)]


def _empty_arguments(rng, family, case, pool):
    text = case.text
    swaps = {
        "hermes": ('"arguments": {}', '"arguments": ""'),
        "deepseek_v31": (deepseek_v31.SEP + "{}", deepseek_v31.SEP),
        "kimi_k2": (kimi_k2.ARGUMENT_BEGIN + "{}", kimi_k2.ARGUMENT_BEGIN),
        "harmony": ("<|message|>{}", "<|message|>"),
        "mistral": ("[ARGS]{}", "[ARGS]"),
        "qwen3_coder": (">\n</function>", ">\n</tool_call>"),
        "glm45": ("\n</tool_call>", "</tool_call>"),
        "glm47": ("</tool_call>", ""),
        "minimax_m2": ('">\n</invoke>', '"></invoke>'),
    }
    old, new = swaps[family]
    if old not in text:
        return None
    return text.replace(old, new, 1)


def _call_in_reasoning(rng, family, case, pool):
    if family == "harmony":
        text = case.text.replace("<|channel|>commentary to=", "<|channel|>analysis to=", 1)
        return text if text != case.text else None
    r = rng.choice(REASONING)
    calls_text = encode(family, case.calls, "", None)
    close = THINK_CLOSE[family]
    return r + "\n" + calls_text + "\n" + close + "Done."


def _engine_recovery(rng, family, case, pool):
    """One deviation the family's engines are known to parse anyway."""
    text = case.text
    options = {
        "qwen3_coder": [
            ("\n</parameter>\n<parameter=", "\n<parameter="),
            ("\n</parameter>\n</function>", "\n</function>"),
            ("<tool_call>\n<function=", "<function="),
            ("</function>\n</tool_call>\n<tool_call>", "</function>\n<tool_call>"),
        ],
        "hermes": [
            ('"arguments"', '"parameters"'),
            ("<tool_call>\n{", "<tool_call>{"),
            ("}\n</tool_call>", "}</tool_call>"),
        ],
        "deepseek_v31": [
            (deepseek_v31.CALLS_BEGIN, ""),
            (deepseek_v31.SEP + "{", deepseek_v31.SEP + "\n{"),
        ],
        "kimi_k2": [
            (kimi_k2.SECTION_BEGIN, kimi_k2.SECTION_BEGIN_SINGULAR),
            (kimi_k2.SECTION_END, kimi_k2.SECTION_END_SINGULAR),
            ("functions.", ""),
            (kimi_k2.ARGUMENT_BEGIN, "\n" + kimi_k2.ARGUMENT_BEGIN),
        ],
        "glm45": [("<arg_key>", ""), ("</arg_key>\n<arg_value>", "</arg_key><arg_value>")],
        "glm47": [("<arg_key>", ""), ("</arg_key><arg_value>", "</arg_key>\n<arg_value>")],
        "harmony": [
            (" <|constrain|>json", ""),
            ("<|channel|>commentary to=", "<|channel|>analysis to="),
        ],
        "minimax_m2": [
            ("</parameter>\n<parameter", "\n<parameter"),
            (minimax_m2.WRAPPER_OPEN + "\n", ""),
            ("</parameter>\n</invoke>", "\n</invoke>"),
        ],
        "mistral": [("[TOOL_CALLS]", "[TOOL_CALLS"), ("[ARGS]", "[ARGS"), ("[ARGS]", "")],
    }[family]
    rng.shuffle(options)
    for old, new in options:
        if old in text:
            return text.replace(old, new, 1)
    return None


def _splice(rng, family, case, pool):
    """Bytes of another turn over a stretch that holds some of this turn's wire syntax."""
    other = rng.choice(pool).text
    points = _structure_points(family, case.text, max(0, _region(family, case.text)))
    if _region(family, case.text) == -1 or len(other) < 8 or not points:
        return None
    p = rng.choice(points)
    a = max(0, p - rng.randint(0, 20))
    b = min(len(case.text), p + 1 + rng.randint(0, 20))
    c = rng.randrange(0, len(other) - 4)
    return case.text[:a] + other[c : c + rng.randint(4, 40)] + case.text[b:]


def _marker_spans(family: str, text: str, lo: int) -> list[tuple[int, int]]:
    spans = []
    for marker in _SPECIAL[family] + _extra_markers(family):
        at = text.find(marker, lo)
        while at != -1:
            spans.append((at, at + len(marker)))
            at = text.find(marker, at + 1)
    return sorted(spans)


_VALUE_OPENERS = frozenset({glm.VALUE_OPEN, _Q.PARAMETER_OPEN, minimax_m2.PARAMETER_OPEN})


def _framing(rng, family, case, pool):
    """A newline or space added or dropped where the grammar fixes the bytes: between two
    markers, or between a marker and the newline the template puts beside it. Not at the
    first call marker (whitespace between prose and the calls is prose's) nor beside a
    value's text (there it would be the value's own whitespace)."""
    text = case.text
    lo = 0 if family == "harmony" else _region(family, text)  # Harmony has no prose
    spans = _marker_spans(family, text, lo)
    points = []
    for (a, b), (c, _) in pairwise(spans):
        gap = text[b:c]
        if (
            gap in ("", "\n")
            and (a != lo or family == "harmony")
            and text[a:b] not in _VALUE_OPENERS
        ):
            points.append((b, gap))
    if family in _JSON_FAMILIES:  # a JSON payload against its markers
        points += [(b, "") for a, b in spans if text.startswith("{", b)]
        points += [(a, "") for a, b in spans if a > lo and text[a - 1 : a] == "}"]
    if not points:
        return None
    at, gap = rng.choice(points)
    if gap == "\n" and rng.random() < 0.5:
        return text[:at] + text[at + 1 :]
    return text[:at] + rng.choice(("\n", " ", "\n\n")) + text[at:]


def _unknown_tool(rng, family, case, pool):
    name = case.calls[0][0]
    calls = (("delete_everything", case.calls[0][1]), *case.calls[1:])
    text = encode(family, calls, "", None)
    return text if name in case.text else None


def _wrong_type(rng, family, case, pool):
    for i, (_, args) in enumerate(case.calls):
        for key in ("topn", "start_line", "end_line", "priority"):
            if key in args and isinstance(args[key], int):
                calls = [(n, dict(a)) for n, a in case.calls]
                calls[i][1][key] = rng.choice(("five", "many", "n/a"))
                return encode(family, tuple(calls), "", None)
    return None


def _mojibake(rng, family, case, pool):
    text = case.text
    lo = _region(family, text)
    spots = [i for i in range(lo, len(text)) if ord(text[i]) > 127]
    if not spots:
        return None
    i = rng.choice(spots)
    bad = text[i].encode("utf-8").decode("latin-1") if rng.random() < 0.5 else "\ufffd"
    return text[:i] + bad + text[i + 1 :]


def _truncated(rng, family, case, pool):
    text = case.text.rstrip()
    lo = _region(family, text)
    if lo == -1 or len(text) - lo < 6:
        return None
    ends = {
        "harmony": harmony.CALL,
    }
    body_end = text.rfind(ends.get(family, "\x00"))
    hi = body_end if body_end > lo else len(text) - 1
    return text[: rng.randrange(lo + 2, hi)] if hi > lo + 2 else None


_OPS = {
    "stripped_markers": _stripped,
    "dup_bytes": _dup_bytes,
    "drop_bytes": _drop_bytes,
    "partial_marker": _partial_marker,
    "marker_in_value": _marker_in_value,
    "empty_arguments": _empty_arguments,
    "call_in_reasoning": _call_in_reasoning,
    "engine_recovery": _engine_recovery,
    "splice": _splice,
    "framing": _framing,
    "unknown_tool": _unknown_tool,
    "wrong_type": _wrong_type,
    "mojibake": _mojibake,
    "truncated": _truncated,
}
BUGS = tuple(_OPS)


def corrupted_cases(family: str, per_bug: int = 30, seed: int = 23) -> list[Case]:
    """`per_bug` turns per bug class, each a clean turn with calls and one corruption."""
    rng = random.Random(f"{family}-corrupt-{seed}")
    pool = [c for c in clean_cases(family, 300, seed=seed) if c.calls]
    zero = [c for c in pool if any(not args for _, args in c.calls)]
    found: list[Case] = []
    for bug, op in _OPS.items():
        made, tries = 0, 0
        while made < per_bug and tries < per_bug * 20:
            tries += 1
            base = rng.choice(zero if bug == "empty_arguments" and zero else pool)
            text = op(rng, family, base, pool)
            if text is None or text == base.text:
                continue
            made += 1
            found.append(
                _case(family, f"{family}/{bug}/{made - 1}", text, base.calls, False, bug=bug)
            )
    return found


def handwritten_corrupted(family: str) -> list[Case]:
    """Hand-written defects, each with the kind it must be reported as (in `note`)."""
    rows = _HANDWRITTEN_BAD.get(family, ())
    return [
        _case(family, f"{family}/bad-hand/{i}", text, calls, False, bug=bug, note=kind)
        for i, (bug, kind, text, calls) in enumerate(rows)
    ]


_GD = (("get_date", {}),)
_S1 = (("search", {"query": "x", "topn": 3}),)
_HANDWRITTEN_BAD: dict[str, tuple[tuple[str, str, str, tuple[Call, ...]], ...]] = {
    "qwen3_coder": (
        (
            "engine_recovery",
            "unclosed_element",
            "<tool_call>\n<function=search>\n<parameter=query>\nx\n<parameter=topn>\n3\n</parameter>\n</function>\n</tool_call>",
            _S1,
        ),
        ("engine_recovery", "missing_open_tag", "<function=get_date>\n</function>", _GD),
        (
            "wrong_type",
            "python_literal",
            "<tool_call>\n<function=write_file>\n<parameter=path>\na\n</parameter>\n<parameter=content>\nb\n</parameter>\n"
            "<parameter=append>\nTrue\n</parameter>\n</function>\n</tool_call>",
            (("write_file", {"path": "a", "content": "b", "append": True}),),
        ),
        ("call_in_reasoning", "call_in_reasoning", "", _GD),  # filled in below: reasoning field
    ),
    "hermes": (
        (
            "marker_in_value",
            "truncated_block",
            '<tool_call>\n{"name": "search", "arguments": {"query": "a</tool_call>',
            _S1,
        ),
        (
            "engine_recovery",
            "malformed_call",
            '<tool_call>\n{"name": "get_date", "parameters": {}}\n</tool_call>',
            _GD,
        ),
        ("stripped_markers", "stripped_marker", '{"name": "get_date", "arguments": {}}', _GD),
        (
            "dup_bytes",
            "malformed_arguments",
            '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}{"query": "x"}}\n</tool_call>',
            _S1,
        ),
    ),
    "deepseek_v31": (
        (
            "marker_in_value",
            "markup_in_value",
            '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{"query": "a<｜tool▁call▁end｜>b"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
            _S1,
        ),
        (
            "call_in_reasoning",
            "call_in_reasoning",
            "Think.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_date<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜></think>",
            _GD,
        ),
        (
            "stripped_markers",
            "stripped_marker",
            "tool▁calls▁begintool▁call▁beginget_datetool▁sep{}",
            _GD,
        ),
    ),
    "kimi_k2": (
        (
            "engine_recovery",
            "marker_variant",
            "<|tool_call_section_begin|><|tool_call_begin|>functions.get_date:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
            _GD,
        ),
        (
            "engine_recovery",
            "bad_call_id",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_date:0<|tool_call_argument_begin|>{}<|tool_call_end|>"
            "<|tool_call_begin|>functions.get_date:3<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
            _GD * 2,
        ),
        ("stripped_markers", "stripped_marker", "functions.get_date:0{}", _GD),
        (
            "empty_arguments",
            "malformed_arguments",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_date:0<|tool_call_argument_begin|><|tool_call_end|><|tool_calls_section_end|>",
            _GD,
        ),
    ),
    "glm45": (
        (
            "engine_recovery",
            "missing_open_tag",
            "<tool_call>search\nquery</arg_key>\n<arg_value>x</arg_value>\n</tool_call>",
            (("search", {"query": "x"}),),
        ),
        (
            "wrong_type",
            "value_type_mismatch",
            "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x</arg_value>\n<arg_key>topn</arg_key>\n<arg_value>three</arg_value>\n</tool_call>",
            _S1,
        ),
    ),
    "glm47": (
        (
            "engine_recovery",
            "missing_open_tag",
            "<tool_call>searchquery</arg_key><arg_value>x</arg_value></tool_call>",
            (("search", {"query": "x"}),),
        ),
        ("framing", "bad_framing", "<tool_call>get_date\n</tool_call>", _GD),
    ),
    "harmony": (
        (
            "engine_recovery",
            "recipient_on_analysis",
            "<|channel|>analysis to=functions.get_date <|constrain|>json<|message|>{}<|call|>",
            _GD,
        ),
        (
            "engine_recovery",
            "malformed_call",
            "<|channel|>commentary to=functions.get_date<|message|>{}<|call|>",
            _GD,
        ),
        (
            "stripped_markers",
            "stripped_marker",
            "analysisNeed the date.assistantcommentary to=functions.get_date json{}",
            _GD,
        ),
    ),
    "minimax_m2": (
        (
            "engine_recovery",
            "unclosed_element",
            '\n<minimax:tool_call>\n<invoke name="search">\n<parameter name="query">x\n<parameter name="topn">3</parameter>\n</invoke>\n</minimax:tool_call>',
            _S1,
        ),
        ("engine_recovery", "missing_open_tag", '<invoke name="get_date">\n</invoke>\n', _GD),
        ("partial_marker", "partial_marker", "Let me check.\n<minimax:tool_c", _GD),
    ),
    "mistral": (
        ("engine_recovery", "marker_variant", "[TOOL_CALLSget_date[ARGS]{}", _GD),
        ("engine_recovery", "malformed_call", "[TOOL_CALLS]get_date{}", _GD),
        (
            "marker_in_value",
            "markup_in_value",
            '[TOOL_CALLS]search[ARGS]{"query": "a[TOOL_CALLS]b"}',
            _S1,
        ),
    ),
}


def cases(family: str) -> list[Case]:
    """The family's whole corpus: clean (generated, hand-written), then corrupted."""
    bad = handwritten_corrupted(family)
    if family == "qwen3_coder":  # a call in the separately returned reasoning
        bad[-1] = Case(
            family,
            bad[-1].id,
            "Let me see.",
            _GD,
            False,
            "call_in_reasoning",
            engine_text="Let me see.",
            reasoning="I need the date " + qwen3_coder.encode_call("get_date", {}),
            note="call_in_reasoning",
        )
    return [
        *clean_cases(family),
        *handwritten_clean(family),
        *corrupted_cases(family),
        *bad,
    ]
