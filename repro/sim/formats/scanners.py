"""How an engine's lenient parser finds each call of a family's output: one scanner per format.

A scanner's `next(text, pos, final)` returns the first call that is complete at or after
`pos`: (start, end, (name, arguments) or None when it is malformed), or None while none is
complete yet. `final` says the text is whole (a call a stop token ended, trimmed by the
server, is complete then). Behaviour as research/toolformats.md §1b describes each engine's
parser (SGLang 0.5.23's detectors, vLLM's parsers; code written here): the recoveries they
make are made here too (a Qwen3 parameter closed by the next one, `<function=` without
`<tool_call>`, Kimi's singular section marker and ids without `functions.`, Mistral's
markers missing their `]`), which is what repro's strict readers flag and these accept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from repro.sim.formats.typed import Schemas, typed_arguments
from repro.toolformats import deepseek_v31 as v31
from repro.toolformats import kimi_k2 as kimi

Found = tuple[int, int, tuple[str, dict[str, Any]] | None]
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text.strip())
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _named(name: str, arguments: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    name = name.strip()
    if arguments is None or not _NAME.match(name):
        return None
    return name, arguments


def _one_newline(value: str) -> str:
    """Qwen3 and MiniMax values: one framing newline stripped at each end."""
    return value.removeprefix("\n").removesuffix("\n")


@dataclass(frozen=True, slots=True)
class Scanner:
    """`starts`: where the calls begin (content before the first one is the prose)."""

    starts: tuple[str, ...]
    next: Callable[[str, int, bool, Schemas], Found | None]


# --- Qwen3 XML -------------------------------------------------------------------------

_QWEN_FUNCTION = re.compile(r"<function=([^>\n]*)>(.*?)</function>", re.S)
_QWEN_PARAMETER = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)


def _qwen3(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    m = _QWEN_FUNCTION.search(text, pos)
    if m is None:
        return None
    name = m.group(1).strip()
    pairs = [
        (p.group(1).strip(), _one_newline(p.group(2))) for p in _QWEN_PARAMETER.finditer(m.group(2))
    ]
    return m.start(), m.end(), _named(name, typed_arguments(name, pairs, schemas))


# --- Hermes JSON ----------------------------------------------------------------------

_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def _hermes(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    m = _HERMES.search(text, pos)
    if m is None:
        return None
    body = _object(m.group(1))
    call = None
    if body is not None and isinstance(body.get("name"), str):
        arguments = body.get("arguments", body.get("parameters", {}))
        call = _named(body["name"], arguments if isinstance(arguments, dict) else None)
    return m.start(), m.end(), call


# --- DeepSeek V3.1 --------------------------------------------------------------------

_V31 = re.compile(
    re.escape(v31.CALL_BEGIN) + r"(.*?)" + re.escape(v31.SEP) + r"(.*?)" + re.escape(v31.CALL_END),
    re.S,
)


def _deepseek_v31(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    m = _V31.search(text, pos)
    if m is None:
        return None
    return m.start(), m.end(), _named(m.group(1), _object(m.group(2)))


# --- Kimi K2 --------------------------------------------------------------------------

_KIMI = re.compile(
    re.escape(kimi.CALL_BEGIN)
    + r"\s*(.*?)\s*"
    + re.escape(kimi.ARGUMENT_BEGIN)
    + r"(.*?)"
    + re.escape(kimi.CALL_END),
    re.S,
)
_KIMI_ID = re.compile(r"(?:functions\.)?([^:\s]+):\d+\Z")


def _kimi_k2(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    m = _KIMI.search(text, pos)
    if m is None:
        return None
    ident = _KIMI_ID.match(m.group(1))
    call = _named(ident.group(1), _object(m.group(2))) if ident else None
    return m.start(), m.end(), call


# --- GLM-4.5 / 4.7 --------------------------------------------------------------------

_GLM = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_GLM_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>\s*(?:\\n)?\s*<arg_value>(.*?)</arg_value>", re.S)


def _glm(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    m = _GLM.search(text, pos)
    if m is None:
        return None
    body = m.group(1)
    name = body.split("<arg_key>", 1)[0].replace("\\n", "\n").strip()
    pairs = [(k.strip(), v) for k, v in _GLM_PAIR.findall(body)]
    return m.start(), m.end(), _named(name, typed_arguments(name, pairs, schemas))


# --- MiniMax-M2 -----------------------------------------------------------------------

_INVOKE = re.compile(r"<invoke name=(.*?)>(.*?)</invoke>", re.S)
_MINIMAX_PARAMETER = re.compile(
    r"<parameter name=(.*?)>(.*?)(?:</parameter>|(?=<parameter name=)|\Z)", re.S
)


def _minimax_m2(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    m = _INVOKE.search(text, pos)
    if m is None:
        return None
    name = m.group(1).strip().strip("\"'")
    pairs = [
        (p.group(1).strip().strip("\"'"), _one_newline(p.group(2)))
        for p in _MINIMAX_PARAMETER.finditer(m.group(2))
    ]
    return m.start(), m.end(), _named(name, typed_arguments(name, pairs, schemas))


# --- Mistral (v11+: [TOOL_CALLS]NAME[ARGS]{JSON}) ------------------------------------

_TOOL_CALLS = "[TOOL_CALLS"
_ARGS = "[ARGS"
_DECODER = json.JSONDecoder()


def _mistral(text: str, pos: int, final: bool, schemas: Schemas) -> Found | None:
    start = text.find(_TOOL_CALLS, pos)
    if start == -1:
        return None
    name_at = start + len(_TOOL_CALLS)
    name_at += text.startswith("]", name_at)
    later = text.find(_TOOL_CALLS, name_at)
    limit = later if later != -1 else len(text)
    whole = final or later != -1  # nothing more can come for this call
    args_at = text.find(_ARGS, name_at, limit)
    if args_at == -1:
        return (start, limit, None) if whole else None
    name = text[name_at:args_at]
    json_at = args_at + len(_ARGS)
    json_at += text.startswith("]", json_at)
    while json_at < limit and text[json_at].isspace():
        json_at += 1
    try:
        value, end = _DECODER.raw_decode(text[:limit], json_at)
    except (ValueError, RecursionError):
        return (start, limit, None) if whole else None
    return start, end, _named(name, value if isinstance(value, dict) else None)


SCANNERS: dict[str, Scanner] = {
    "qwen3_coder": Scanner(("<tool_call>", "<function="), _qwen3),
    "hermes": Scanner(("<tool_call>",), _hermes),
    "deepseek_v31": Scanner((v31.CALLS_BEGIN, v31.CALL_BEGIN), _deepseek_v31),
    "kimi_k2": Scanner(
        (kimi.SECTION_BEGIN, kimi.SECTION_BEGIN_SINGULAR, kimi.CALL_BEGIN), _kimi_k2
    ),
    "glm45": Scanner(("<tool_call>",), _glm),
    "glm47": Scanner(("<tool_call>",), _glm),
    "minimax_m2": Scanner(("<minimax:tool_call>", "<invoke name="), _minimax_m2),
    "mistral": Scanner((_TOOL_CALLS,), _mistral),
}
