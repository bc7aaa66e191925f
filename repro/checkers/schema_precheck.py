"""A quick and certain "valid" for the JSON Schemas tools usually have; jsonschema judges the rest.

jsonschema takes tens of microseconds per call, and most calls are valid against schemas
made of a few keywords: type, properties, required, additionalProperties, items, enum,
const, bounds and lengths, anyOf/allOf. `compile_precheck` turns such a schema into nested
closures that answer True only where jsonschema finds the instance valid. False means
"ask jsonschema", which finds the errors or, for what the precheck leaves to it (an
array or object in an enum, say), none. A schema with any other keyword (`$ref`,
`pattern`, `oneOf`, ...) gets no precheck.

Instances are JSON values as the json module builds them: dict, list, str, int, float,
bool, None. Each keyword below applies to the same types and compares the same way as
jsonschema's, so the two cannot disagree on "valid".
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Drafts whose keywords below mean one thing; Draft 4's bounds and integers differ.
_DRAFTS = ("Draft6Validator", "Draft7Validator", "Draft201909Validator", "Draft202012Validator")
# jsonschema's type checker for these drafts; an integral float is an "integer".
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "object": (dict,),
    "array": (list,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int,),
}


class _Unsupported(Exception):
    """A keyword this module does not judge: the whole schema is left to jsonschema."""


def compile_precheck(validator: Any) -> Check | None:
    """A check for `validator`'s schema that is True only for instances it finds valid, or
    None if the schema holds a keyword this module does not judge."""
    import jsonschema  # imported when tools are compiled, as toolset.py does

    from repro.checkers.schema_patterns import draft_of

    if validator.format_checker is not None:
        return None
    # A draft whose pattern keywords are bounded is that draft for every keyword judged here.
    draft = draft_of(type(validator))
    if not any(draft is getattr(jsonschema, name) for name in _DRAFTS):
        return None
    try:
        return _compile(validator.schema, frozenset(validator.VALIDATORS))
    except _Unsupported:
        return None


def _always(x: Any) -> bool:
    return True


def _never(x: Any) -> bool:
    return False


def _compile(schema: Any, keywords: frozenset[str]) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    assertions = {key for key in schema if key in keywords}
    if schema.get("type") == "object" and assertions <= _OBJECT_KEYWORDS:
        return _object(schema, keywords)
    checks = []
    for key, value in schema.items():
        if key not in keywords:
            continue  # not an assertion in this draft (title, $defs, x-...): jsonschema skips it
        handler = _KEYWORDS.get(key)
        if handler is None:
            raise _Unsupported(key)
        check = handler(value, schema, keywords)
        if check is not None:
            checks.append(check)
    return _all(checks)


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def check(x: Any) -> bool:
        for c in checks:  # noqa: SIM110 (all() with a generator costs more than these checks)
            if not c(x):
                return False
        return True

    return check


_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})


def _object(schema: Mapping, keywords: frozenset[str]) -> Check:
    """An object with properties, required and additionalProperties as one closure: the
    usual shape of a tool's parameters (the same checks as the handlers below, fused)."""
    properties = {key: _compile(sub, keywords) for key, sub in schema.get("properties", {}).items()}
    needed = tuple(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    others = None if extra is False else _compile(extra, keywords)  # None: no other key

    def check(x: Any) -> bool:
        if type(x) is not dict:
            return False
        for key in needed:  # a loop over a few names beats a set comparison
            if key not in x:
                return False
        for key, value in x.items():
            c = properties.get(key, others)
            if c is None or not c(value):
                return False
        return True

    return check


def _type(types: str | list[str], schema: Mapping, keywords: frozenset[str]) -> Check:
    names = [types] if isinstance(types, str) else types
    exact = frozenset(t for name in names for t in _TYPES[name])
    integral_floats = "integer" in names
    if len(exact) == 1 and not integral_floats:
        (only,) = exact
        return lambda x: type(x) is only

    def check(x: Any) -> bool:
        t = type(x)
        return t in exact or (integral_floats and t is float and x.is_integer())

    return check


def _one_of_values(values: list[Any]) -> Check:
    """jsonschema's `equal` for scalars: `1 == 1.0`, but True is not 1. Arrays and objects
    are left to jsonschema."""
    strings = frozenset(v for v in values if type(v) is str)
    numbers = frozenset(v for v in values if type(v) is int or type(v) is float)
    flags = frozenset(v for v in values if type(v) is bool)
    null = any(v is None for v in values)

    def check(x: Any) -> bool:
        t = type(x)
        if t is str:
            return x in strings
        if t is int or t is float:
            return x in numbers
        if t is bool:
            return x in flags
        return null and x is None

    return check


def _enum(values: list[Any], schema: Mapping, keywords: frozenset[str]) -> Check:
    return _one_of_values(values)


def _const(value: Any, schema: Mapping, keywords: frozenset[str]) -> Check:
    return _one_of_values([value])


def _properties(properties: Mapping, schema: Mapping, keywords: frozenset[str]) -> Check:
    checks = {key: _compile(sub, keywords) for key, sub in properties.items()}

    def check(x: Any) -> bool:
        if type(x) is not dict:
            return True
        for key, value in x.items():
            c = checks.get(key)
            if c is not None and not c(value):
                return False
        return True

    return check


def _required(names: list[str], schema: Mapping, keywords: frozenset[str]) -> Check:
    needed = frozenset(names)
    return lambda x: type(x) is not dict or x.keys() >= needed


def _additional(extra: Any, schema: Mapping, keywords: frozenset[str]) -> Check | None:
    # Also what patternProperties matches, but that keyword is not judged here.
    known = frozenset(schema.get("properties", {}))
    if extra is False:
        return lambda x: type(x) is not dict or x.keys() <= known
    sub = _compile(extra, keywords)
    if sub is _always:
        return None

    def check(x: Any) -> bool:
        if type(x) is not dict:
            return True
        return all(sub(v) for k, v in x.items() if k not in known)

    return check


def _items(items: Any, schema: Mapping, keywords: frozenset[str]) -> Check:
    if not isinstance(items, Mapping | bool):
        raise _Unsupported("items as a list of schemas")
    sub = _compile(items, keywords)
    return lambda x: type(x) is not list or all(map(sub, x))


def _bound(compare: Callable[[Any, Any], bool]) -> Callable[..., Check]:
    def handler(limit: Any, schema: Mapping, keywords: frozenset[str]) -> Check:
        return lambda x: (type(x) is not int and type(x) is not float) or compare(x, limit)

    return handler


def _size(of: type, compare: Callable[[Any, Any], bool]) -> Callable[..., Check]:
    def handler(limit: int, schema: Mapping, keywords: frozenset[str]) -> Check:
        return lambda x: type(x) is not of or compare(len(x), limit)

    return handler


def _any_of(schemas: list[Any], schema: Mapping, keywords: frozenset[str]) -> Check:
    checks = [_compile(s, keywords) for s in schemas]
    return lambda x: any(c(x) for c in checks)


def _all_of(schemas: list[Any], schema: Mapping, keywords: frozenset[str]) -> Check:
    return _all([_compile(s, keywords) for s in schemas])


def _format(name: str, schema: Mapping, keywords: frozenset[str]) -> None:
    return None  # asserted only with a format checker, and compile_precheck wants none


_KEYWORDS: dict[str, Callable[..., Check | None]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "minimum": _bound(operator.ge),
    "maximum": _bound(operator.le),
    "exclusiveMinimum": _bound(operator.gt),
    "exclusiveMaximum": _bound(operator.lt),
    "minLength": _size(str, operator.ge),
    "maxLength": _size(str, operator.le),
    "minItems": _size(list, operator.ge),
    "maxItems": _size(list, operator.le),
    "minProperties": _size(dict, operator.ge),
    "maxProperties": _size(dict, operator.le),
    "anyOf": _any_of,
    "allOf": _all_of,
    "format": _format,
}
