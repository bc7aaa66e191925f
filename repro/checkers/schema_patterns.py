"""Regular expressions from tool schemas, evaluated with a bound (docs/checkers.md, "Patterns").

jsonschema evaluates `pattern`, `patternProperties` and, through them, which properties are
additional with Python's `re`, which has no bound: `^(a|a)*$` takes minutes on a
40-character value. The validator classes here extend each draft's with the same keywords
evaluated by the `regex` package, which reads a pattern as `re` does and takes a timeout.
A pattern it cannot evaluate within the bound raises PatternUnjudged, which stops the
validation there (toolset.py keeps what was found before it).
"""

from __future__ import annotations

import contextlib
import re
import re._parser as re_parser  # Python's own reading of a pattern, before regex compiles it
import time
import warnings
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

MATCH_TIMEOUT_S = 0.1  # one search; a sane pattern takes microseconds on any arguments
CALL_BUDGET_S = 0.5  # every search of one call together
MAX_UNROLLED = 50_000  # units `regex` may unroll a pattern's fixed repeats into when compiling
STRIKES = 3  # timeouts after which a pattern is not tried again
_CACHE_SIZE = 1024

_deadline: ContextVar[float | None] = ContextVar("pattern_deadline", default=None)
_compiled: dict[str, Any] = {}  # pattern -> compiled, or why it cannot be evaluated
_strikes: dict[str, int] = {}


class PatternUnjudged(Exception):
    """What could not be evaluated within the bound (`subject`: a pattern, or the keyword
    that needs one) and why, as the two halves of a sentence."""

    def __init__(self, subject: str, why: str) -> None:
        super().__init__(f"{subject}: {why}")
        self.subject = subject
        self.why = why


def _unjudged(pattern: str, why: str) -> PatternUnjudged:
    shown = pattern if len(pattern) <= 80 else pattern[:79] + "…"
    return PatternUnjudged(f"pattern {shown!r}", why)


@contextlib.contextmanager
def call_budget(seconds: float = CALL_BUDGET_S) -> Iterator[None]:
    """Bound the searches made inside the block to `seconds` together."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def search(pattern: str, text: str) -> bool:
    """`re.search(pattern, text) is not None`, in bounded time; raises PatternUnjudged."""
    compiled = _compiled.get(pattern)
    if compiled is None:
        compiled = _compile(pattern)
        if len(_compiled) >= _CACHE_SIZE:
            _compiled.clear()
        _compiled[pattern] = compiled
    if isinstance(compiled, str):
        raise _unjudged(pattern, compiled)
    if _strikes.get(pattern, 0) >= STRIKES:
        raise _unjudged(pattern, f"it ran past the bound {STRIKES} times already")
    timeout = MATCH_TIMEOUT_S
    deadline = _deadline.get()
    if deadline is not None:
        timeout = min(timeout, deadline - time.monotonic())
        if timeout <= 0:
            raise _unjudged(pattern, "the call's time for patterns ran out")
    try:
        return compiled.search(text, timeout=timeout) is not None
    except TimeoutError:
        _strikes[pattern] = _strikes.get(pattern, 0) + 1
        raise _unjudged(
            pattern, f"it ran past {timeout:.2g} s on a {len(text):,}-character value"
        ) from None


def _compile(pattern: str) -> Any:
    """The compiled pattern, or why it cannot be evaluated (a string)."""
    try:
        # Python's own parser: `re` and the regex package read a pattern alike except for
        # the sets `re` warns about ([[:alpha:]] is a POSIX class to regex only).
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            parsed = re_parser.parse(pattern)
    except FutureWarning:
        return "it holds a set that re and the regex package read differently"
    except (re.error, RecursionError, OverflowError) as exc:
        return f"it is not a regular expression Python reads ({exc})"
    unrolled = _unrolled(parsed)
    if unrolled > MAX_UNROLLED:
        # The regex package writes a fixed repeat out in full: x{4294967294} takes gigabytes.
        return f"its fixed repeats come to {unrolled:,} units, past {MAX_UNROLLED:,}"
    import regex  # 11 ms: loaded with the first schema that has a pattern

    try:
        return regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError, MemoryError) as exc:
        return f"the regex package cannot read it ({exc})"


def _unrolled(parsed: Any) -> int:
    """Units of a parsed pattern with each repeat's minimum count written out."""
    total = 0
    for op, av in parsed:
        if op in (re_parser.MAX_REPEAT, re_parser.MIN_REPEAT, re_parser.POSSESSIVE_REPEAT):
            low, _high, sub = av
            total += max(low, 1) * _unrolled(sub)
        else:
            total += 1 + sum(_unrolled(s) for s in _subpatterns(av))
        if total > MAX_UNROLLED:
            return total  # enough to refuse it; no need to multiply further
    return total


def _subpatterns(value: Any) -> Iterator[Any]:
    if isinstance(value, re_parser.SubPattern):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _subpatterns(item)


# --- the keywords, as jsonschema's (jsonschema/_keywords.py) with `search` for `re.search` ---


def _pattern(validator: Any, patrn: str, instance: Any, schema: Mapping) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Any, pattern_properties: Mapping, instance: Any, schema: Mapping
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(original: Any) -> Any:
    def keyword(validator: Any, ap: Any, instance: Any, schema: Mapping) -> Iterator[Any]:
        if "patternProperties" not in schema or not validator.is_type(instance, "object"):
            yield from original(validator, ap, instance, schema)
            return
        from jsonschema.exceptions import ValidationError

        properties = schema.get("properties", {})
        patterns = schema["patternProperties"]
        # Each pattern on its own: jsonschema joins them with '|', the same test.
        extras = {
            key
            for key in instance
            if key not in properties and not any(search(p, key) for p in patterns)
        }
        if validator.is_type(ap, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], ap, path=extra)
        elif not ap and extras:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")

    return keyword


def _unevaluated_properties(original: Any) -> Any:
    """jsonschema finds the properties some patternProperties evaluated with `re` itself, in
    code no keyword reaches: where the schema has patternProperties, that is not judged."""

    def keyword(validator: Any, up: Any, instance: Any, schema: Mapping) -> Iterator[Any]:
        if validator.is_type(instance, "object") and instance:
            raise PatternUnjudged(
                "unevaluatedProperties",
                "jsonschema would evaluate the schema's patternProperties for it without a bound",
            )
        yield from original(validator, up, instance, schema)

    return keyword


_classes: dict[tuple[type, bool], type] = {}
_drafts: dict[type, type] = {}  # each bounded class -> the draft it extends


def bounded_validator_class(draft: type, schema: Any) -> type:
    """`draft`'s validator class with its pattern keywords bounded, for `schema`."""
    guard = _has_pattern_properties(schema)
    key = (draft, guard)
    if key not in _classes:
        from jsonschema.validators import extend

        keywords = draft.VALIDATORS
        changed: dict[str, Any] = {}
        if "pattern" in keywords:
            changed["pattern"] = _pattern
        if "patternProperties" in keywords:
            changed["patternProperties"] = _pattern_properties
        if "additionalProperties" in keywords:
            changed["additionalProperties"] = _additional_properties(
                keywords["additionalProperties"]
            )
        if guard and "unevaluatedProperties" in keywords:
            changed["unevaluatedProperties"] = _unevaluated_properties(
                keywords["unevaluatedProperties"]
            )
        bounded = extend(draft, validators=changed)
        _classes[key] = bounded
        _drafts[bounded] = draft
    return _classes[key]


def draft_of(validator_class: type) -> type:
    """The jsonschema draft class a bounded class extends (itself for any other class)."""
    return _drafts.get(validator_class, validator_class)


def _has_pattern_properties(schema: Any) -> bool:
    """Whether any object in the schema document has a non-empty patternProperties."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, Mapping):
            if isinstance(node.get("patternProperties"), Mapping) and node["patternProperties"]:
                return True
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False
