"""Server-parsed OpenAI `tool_calls`: each must name a declared tool with a JSON-object
`arguments` string that its schema accepts and that carries no markup.

Offsets point into each call's `arguments` text (field `tool_calls[i]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from repro.checkers.json_codec import read_json
from repro.checkers.json_strings import offset_in_json, strings_in
from repro.checkers.kinds import Kind
from repro.checkers.markup_scan import Where, scan_markup, snippet
from repro.checkers.text_watch import TextWatch
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import Defect, ToolCall

_CONSTANT = re.compile(r"-?Infinity|NaN")


def check_parsed_calls(
    calls: Sequence[ToolCall], tools: ToolSet, finish_reason: str | None = None
) -> list[Defect]:
    defects: list[Defect] = []
    for i, call in enumerate(calls):
        field = f"tool_calls[{i}]"
        known = call.name in tools
        if not known:
            defects.append(
                Defect(
                    Kind.UNKNOWN_TOOL,
                    0,
                    f"tool {call.name!r} is not among the request's tools",
                    field,
                )
            )
        try:
            arguments = read_json(call.arguments)
        except (ValueError, RecursionError) as e:
            cut = finish_reason == "length" and i == len(calls) - 1
            kind = Kind.TRUNCATED_CALL if cut else Kind.INVALID_ARGUMENTS
            offset = getattr(e, "pos", None)
            if offset is None:  # NaN or Infinity, refused after a successful scan
                constant = _CONSTANT.search(call.arguments)
                offset = constant.start() if constant else 0
            why = "generation hit the length limit" if cut else "arguments are not JSON"
            defects.append(Defect(kind, offset, f"{call.name}: {why}: {e}", field))
            continue
        if not isinstance(arguments, dict):
            message = f"{call.name}: arguments are JSON {type(arguments).__name__}, not an object"
            defects.append(Defect(Kind.INVALID_ARGUMENTS, 0, message, field))
            continue
        defects += _string_defects(call, arguments, field)
        watch = TextWatch()
        watch.advance(call.arguments, 0, final=True)
        defects += watch.defects(field)
        if known:
            for v in tools.violations(call.name, arguments, call.arguments):
                offset = _key_offset(call.arguments, v.path[0]) if v.path else 0
                defects.append(Defect(Kind.SCHEMA_VIOLATION, offset, v.describe(call.name), field))
    return defects


def _string_defects(call: ToolCall, arguments: dict, field: str) -> list[Defect]:
    """Markup inside any string of the arguments (keys included), at its place in the text."""
    found = []
    for s in strings_in(arguments):
        for f in scan_markup(s, Where.VALUE):
            offset = offset_in_json(call.arguments, s, f.start)
            message = f"{call.name}: {f.message} (in `{snippet(s)}`)"
            found.append(Defect(f.kind, offset, message, field))
    return found


def _key_offset(raw: str, key: str | int) -> int:
    at = raw.find(json.dumps(key, ensure_ascii=False)) if isinstance(key, str) else -1
    return max(at, 0)
