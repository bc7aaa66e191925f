"""The request's tools, compiled once: which names exist and each one's JSON Schema validator.

Compiling a schema costs far more than checking one call, and a run sends the same tools
with every request, so compiled sets are cached by the tools' JSON. Regular expressions in
the schemas are evaluated with a bound (schema_patterns.py).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from repro.checkers.schema_patterns import (
    PatternUnjudged,
    bounded_validator_class,
    call_budget,
)
from repro.checkers.schema_precheck import Check, compile_precheck

_CACHE_SIZE = 64
_MESSAGE_CHARS = 200
_MAX_VIOLATIONS = 8  # per call: enough to see the pattern, bounded for a garbage object
_MEMO_SIZE = 4096
_NOTES = 64  # distinct notes kept: one per tool and pattern is the usual case


class UnusableSchema(ValueError):
    """A tool's schema that cannot be applied to a call (a `$ref` that cannot be resolved):
    the tools' fault, not the turn's."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a call's arguments fail its schema; `path` leads from the arguments object."""

    path: tuple[str | int, ...]
    message: str

    def describe(self, tool: str) -> str:
        """`search.filters.lang: 5 is not of type 'string'`: the tool, the path, the error."""
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)
        return f"{tool}{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class ToolSet:
    """Declared tool names, each with its compiled validator (None: no `parameters`).

    A call first meets its tool's precheck (schema_precheck.py), which confirms most valid
    calls in a microsecond or two; jsonschema judges the rest, and its verdicts are
    remembered per arguments text: a run's sessions repeat the same calls.

    A schema's pattern that cannot be evaluated within the bound ends that call's schema
    check where it was met: the violations found before it stand, none is invented after it
    (so it is never a defect on its own), and `unjudged` keeps a note saying so.
    """

    validators: Mapping[str, Any]
    prechecks: Mapping[str, Check] = field(default_factory=dict, compare=False, repr=False)
    _memo: dict[tuple[str, str], tuple[Violation, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    unjudged: dict[str, None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_openai(cls, tools: Sequence[Mapping[str, Any]]) -> ToolSet:
        """Compile an OpenAI `tools` list (bare function objects are accepted too).

        Raises ValueError, in one sentence, for a tool without a name, a duplicate name or
        a `parameters` that is not a valid JSON Schema.
        """
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        if not isinstance(tools, Sequence) or isinstance(tools, str | bytes):
            raise ValueError("the tools must be a JSON list of OpenAI tool objects")
        validators: dict[str, Any] = {}
        for i, tool in enumerate(tools):
            function = tool.get("function", tool) if isinstance(tool, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            if not isinstance(name, str) or not name:
                raise ValueError(f"tool #{i} has no function name")
            if name in validators:
                raise ValueError(f"tool {name!r} is declared twice")
            schema = function.get("parameters")
            if schema is None:
                validators[name] = None
                continue
            if not isinstance(schema, Mapping | bool):
                raise ValueError(f"tool {name!r}: parameters must be a JSON Schema object")
            draft = validator_for(schema, default=Draft202012Validator)
            validator_class = bounded_validator_class(draft, schema)
            try:
                with warnings.catch_warnings():
                    # The metaschema's "regex" format compiles each pattern with `re`, which
                    # warns of sets it may read differently one day ([[): schema_patterns
                    # says so in its note; a warning here would only be noise (or an error).
                    warnings.simplefilter("ignore", FutureWarning)
                    validator_class.check_schema(schema)
            except SchemaError as e:
                raise ValueError(
                    f"tool {name!r}: parameters is not a valid JSON Schema ({e.message})"
                ) from None
            validators[name] = validator_class(schema)
        prechecks = {}
        for name, validator in validators.items():
            check = None if validator is None else compile_precheck(validator)
            if check is not None:
                prechecks[name] = check
        return cls(validators, prechecks)

    def __contains__(self, name: object) -> bool:
        return name in self.validators

    def violations(
        self, name: str, arguments: Mapping[str, Any], text: str | None = None
    ) -> tuple[Violation, ...]:
        """How `arguments` fail tool `name`'s schema; empty when valid or the tool is unknown.

        `text`, the arguments' JSON, lets an identical call reuse the last verdict.
        """
        validator = self.validators.get(name)
        if validator is None:
            return ()
        precheck = self.prechecks.get(name)
        if precheck is not None and precheck(arguments):
            return ()  # as quick as looking the verdict up: not remembered
        if text is not None:
            known = self._memo.get((name, text))
            if known is not None:
                return known
        found = self._check(name, validator, arguments)
        if text is not None:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[(name, text)] = found
        return found

    def _check(
        self, name: str, validator: Any, arguments: Mapping[str, Any]
    ) -> tuple[Violation, ...]:
        from referencing.exceptions import Unresolvable

        found = []
        try:
            with call_budget():
                for error in validator.iter_errors(arguments):
                    message = error.message
                    if len(message) > _MESSAGE_CHARS:
                        message = message[: _MESSAGE_CHARS - 1] + "…"
                    found.append(Violation(tuple(error.absolute_path), message))
                    if len(found) == _MAX_VIOLATIONS:
                        break
        except Unresolvable as e:  # a bad tool definition, not a defect of the turn
            raise UnusableSchema(
                f"tool {name!r}: its schema has a $ref that cannot be resolved ({e})"
            ) from None
        except PatternUnjudged as e:
            # Each violation yielded so far was computed without it; one after it might
            # hang on its outcome (under `not`, `oneOf`, ...), so the check stops here.
            if len(self.unjudged) < _NOTES:
                self.unjudged[
                    f"tool {name!r}: {e.subject} not evaluated ({e.why}); arguments judged"
                    " against its schema only up to it"
                ] = None
        return tuple(found)


_cache: OrderedDict[bytes, ToolSet] = OrderedDict()
# The same list object, asked again: the load generator passes one tools list with every turn,
# and serialising it for the JSON key cost more than checking a short turn. The list is held,
# so its id cannot be reused by another; a list is taken as unchanged once it has been seen.
_by_identity: OrderedDict[int, tuple[Sequence[Mapping[str, Any]], ToolSet]] = OrderedDict()
_IDENTITY_SIZE = 8


def toolset_for(tools: Sequence[Mapping[str, Any]]) -> ToolSet:
    """The compiled ToolSet for a tools list: by the list's identity when it was seen before,
    else from a small LRU cache keyed by its JSON."""
    seen = _by_identity.get(id(tools))
    if seen is not None and seen[0] is tools:
        return seen[1]
    found = _by_json(tools)
    _by_identity[id(tools)] = (tools, found)
    if len(_by_identity) > _IDENTITY_SIZE:
        _by_identity.popitem(last=False)
    return found


def _by_json(tools: Sequence[Mapping[str, Any]]) -> ToolSet:
    key = orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)
    found = _cache.get(key)
    if found is None:
        found = ToolSet.from_openai(tools)
        _cache[key] = found
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    return found
