"""How the checkers read and write JSON: strict reading, SGLang's way of writing arguments.

`json.loads`/`json.dumps` with any option build a new decoder or encoder on every call;
these are built once, which matters at one call per parameter.
"""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


# NaN and Infinity are Python's extensions, not JSON (SGLang refuses them too).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
# SGLang serialises parsed arguments with json.dumps(..., ensure_ascii=False).
_ENCODER = json.JSONEncoder(ensure_ascii=False)


_LITERALS: dict[str, object] = {"true": True, "false": False, "null": None}


def read_json(text: str) -> object:
    """Parse strict JSON; raises ValueError (or RecursionError when absurdly deep).

    The most common parameter values, literals and plain non-negative integers, are read
    directly: the decoder's Python-level setup costs more than they do.
    """
    literal = _LITERALS.get(text, text)
    if literal is not text:
        return literal
    if text.isdigit() and text.isascii() and (text[0] != "0" or text == "0"):
        return int(text)
    # The decoder's own scanner, as decode() calls it, when the value fills the text;
    # decode() itself for whitespace around it and for the error message.
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    return value if end == len(text) else _DECODER.decode(text)


_SCAN = _DECODER.scan_once


# json.dumps builds its C encoder afresh on every call; the same encoder, built once. It
# skips the check for circular references: arguments are parsed JSON, which has none.
_ENCODE = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _ENCODER.default, encode_basestring, None, ": ", ", ", False, False, True
    )
)


def arguments_text(arguments: dict) -> str:
    """Arguments as SGLang writes them for the client, byte for byte."""
    if not arguments:
        return "{}"  # a zero-argument call, as common as any other: no encoder needed
    if _ENCODE is None:
        return _ENCODER.encode(arguments)
    return "".join(_ENCODE(arguments, 0))
