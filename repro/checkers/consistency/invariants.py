"""The invariants every answer must meet, whatever the model wrote (rules.py names them).

Each check is exactly what the serving layer promised and nothing a model chooses: under
tool_choice `auto` a model may write arguments its tool's schema refuses (OpenAI says so),
so the schema is judged only where a grammar forces it; a `stop` at max_tokens is allowed
(vLLM checks the end-of-sequence token and stop strings before the length limit, so an EOS
on the last allowed token ends as `stop`); logprob entries may be fewer than the completion
tokens (SGLang sends none for a step that decoded no text when no parser holds it), never
more; usage on the chunk that carries choices is left alone (harmless to clients).

Cost: a few attribute reads per choice; the arguments of each call are parsed once; a
schema is validated only under a grammar (bench/peer_cost.py measures the whole).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.checkers.consistency.answer import Asked, ServedAnswer, ServedChoice
from repro.checkers.consistency.rules import Broken
from repro.checkers.json_codec import read_json
from repro.checkers.toolset import ToolSet, UnusableSchema, toolset_for
from repro.checkers.verdict import Defect

THINK_CLOSE = "</think>"
# The anomalies the stream notes (harness.load.stream_progress) that break a promise.
OUT_OF_ORDER = frozenset({"after_finish", "after_usage", "after_done", "call_header_repeated",
                          "call_index"})  # fmt: skip
ENDINGS = frozenset({"stop", "length", "tool_calls"})  # what the checks know how to judge


def check_answer(
    answer: ServedAnswer, asked: Asked, tools: Sequence[dict[str, Any]]
) -> list[Defect]:
    """Every invariant this answer breaks (an empty list for a sound answer)."""
    defects: list[Defect] = []
    for rule, what in answer.anomalies:
        if rule in OUT_OF_ORDER:
            defects.append(Defect(Broken.STREAM_OUT_OF_ORDER, 0, what, "stream"))
            break  # the first says enough; the rest are in the stream's own notes
    defects += _choices_present(answer, asked)
    defects += _usage(answer, asked)
    toolset: ToolSet | None = None
    strict = strict_tools(tools)
    for choice in answer.choices:
        if choice.finish_reason is not None and choice.finish_reason not in ENDINGS:
            continue  # abort, content_filter, ...: an ending these checks make no claim on
        if asked.forces_call and choice.finish_reason not in (None, "length"):
            toolset = toolset or toolset_for(tools)
        defects += _choice(choice, asked, toolset, strict)
    return defects


def strict_tools(tools: Sequence[dict[str, Any]]) -> frozenset[str]:
    """The tools declared `strict: true`: only their arguments does a grammar pin to the
    schema (OpenAI's Structured Outputs; vLLM 0.32's `--tool-strict-level auto` constrains a
    non-strict tool's call envelope, not its arguments, `tool_parsers/structural_tag_registry`)."""
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("strict") is True:
            names.add(str(function.get("name")))
    return frozenset(names)


def _choices_present(answer: ServedAnswer, asked: Asked) -> list[Defect]:
    indices = [c.index for c in answer.choices if c.content or c.reasoning or c.calls
               or c.finish_reason or c.index == 0]  # fmt: skip
    missing = sorted(set(range(asked.n)) - set(indices))
    if missing:
        return [
            Defect(
                Broken.CHOICE_MISSING,
                0,
                f"asked for n={asked.n}, got no choice {', '.join(map(str, missing))}",
                "choices",
            )
        ]
    unfinished = [c.index for c in answer.choices if c.finish_reason is None]
    if unfinished:
        return [
            Defect(
                Broken.CHOICE_MISSING,
                0,
                f"choice {unfinished[0]} ended without a finish_reason",
                f"choices[{unfinished[0]}]",
            )
        ]
    return []


def _usage(answer: ServedAnswer, asked: Asked) -> list[Defect]:
    """Usage there when asked, adding up, and agreeing with what was received."""

    def wrong(message: str) -> list[Defect]:
        return [Defect(Broken.USAGE_WRONG, 0, message, "usage")]

    if not answer.usage_events:
        if answer.streamed and not asked.include_usage:
            return []
        where = (
            "no usage chunk, though stream_options asked for one"
            if answer.streamed
            else ("no usage in the answer")
        )
        return wrong(where)
    prompt, completion, total = answer.prompt_tokens, answer.completion_tokens, answer.total_tokens
    if completion is None:
        return wrong("usage without completion_tokens")
    if prompt is not None and total is not None and total != prompt + completion:
        return wrong(f"total_tokens {total} is not prompt {prompt} + completion {completion}")
    found = []
    if completion > asked.n * asked.max_tokens:
        found.append(
            Defect(
                Broken.MAX_TOKENS_EXCEEDED,
                0,
                f"{completion} completion tokens for n={asked.n} at max_tokens {asked.max_tokens}",
                "usage",
            )
        )
    entries = sum(len(c.logprobs) for c in answer.choices)
    if entries > completion:
        found += wrong(f"{entries} logprob entries for {completion} completion tokens")
    elif completion == 0 and any(c.content or c.reasoning or c.calls for c in answer.choices):
        found += wrong("text or tool calls from 0 completion tokens")
    found += _length_claims(answer, asked, prompt, completion)
    return found


def _length_claims(
    answer: ServedAnswer, asked: Asked, prompt: int | None, completion: int
) -> list[Defect]:
    """`length` only where max_tokens (or the window) was used up."""
    cut = [c for c in answer.choices if c.finish_reason == "length"]
    if not cut or asked.window_tokens is None or prompt is None:
        return []  # without the window, a prompt near it may end early with `length`
    allowed = min(asked.max_tokens, asked.window_tokens - prompt)
    if completion < len(cut) * allowed:
        return [
            Defect(
                Broken.FINISH_REASON_LIE,
                0,
                f"finish_reason length on {len(cut)} choice(s) with {completion} completion "
                f"tokens, under the {allowed} each was allowed",
                f"choices[{cut[0].index}].finish_reason",
            )
        ]
    return []


def _choice(
    choice: ServedChoice, asked: Asked, toolset: ToolSet | None, strict: frozenset[str]
) -> list[Defect]:
    where = f"choices[{choice.index}]"
    found: list[Defect] = []
    if THINK_CLOSE in choice.reasoning:
        found.append(
            Defect(
                Broken.REASONING_UNSEPARATED,
                choice.reasoning.index(THINK_CLOSE),
                f"the reasoning holds {THINK_CLOSE}, where the reasoning parser must end it",
                "reasoning",
            )
        )
    calls = choice.calls
    ids = [c.id for c in calls]
    for i, call in enumerate(calls):
        if not call.id or not call.name:
            what = "an id" if not call.id else "a name"
            found.append(
                Defect(Broken.CALL_ID_BROKEN, 0, f"call {i} has no {what}", f"tool_calls[{i}]")
            )
            break
    else:
        if len(set(ids)) < len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            found.append(
                Defect(Broken.CALL_ID_BROKEN, 0, f"two calls share the id {twice!r}", where)
            )
    if calls and asked.tool_choice == "none":
        found.append(
            Defect(
                Broken.TOOL_CHOICE_IGNORED,
                0,
                f"{len(calls)} tool call(s) under tool_choice none",
                "tool_calls[0]",
            )
        )
    if len(calls) > 1 and not asked.parallel_tool_calls:
        found.append(
            Defect(
                Broken.PARALLEL_CALLS_IGNORED,
                0,
                f"{len(calls)} tool calls under parallel_tool_calls false",
                "tool_calls[1]",
            )
        )
    if choice.finish_reason == "tool_calls":
        found += _claimed_calls(choice)
    if asked.forces_call:
        found += _forced_call(choice, asked, toolset, strict)
    elif asked.response_format != "text" and not calls:
        found += _forced_json(choice, asked)
    return found


def _claimed_calls(choice: ServedChoice) -> list[Defect]:
    """finish_reason `tool_calls` promises whole calls: at least one, each's arguments JSON.

    Whole, not right: a JSON value other than an object (`true`, `null`, a number) is what
    the model wrote and the parser passed on faithfully; the schema is the validity oracle's
    to judge (and, for a strict tool under a forced tool choice, the grammar's)."""
    if not choice.calls:
        return [
            Defect(
                Broken.FINISH_REASON_LIE,
                0,
                "finish_reason tool_calls, and no tool call",
                f"choices[{choice.index}].finish_reason",
            )
        ]
    for i, call in enumerate(choice.calls):
        problem = _not_json(call.arguments)
        if problem:
            return [
                Defect(
                    Broken.TOOL_CALLS_UNPARSABLE,
                    0,
                    f"finish_reason tool_calls, yet {call.name or 'call ' + str(i)}'s "
                    f"arguments {problem}",
                    f"tool_calls[{i}]",
                )
            ]
    return []


def _not_json(text: str) -> str:
    """Why `text` is not one JSON value ("" when it is)."""
    try:
        read_json(text)
    except (ValueError, RecursionError) as exc:
        return f"are not JSON ({exc})" if text.strip() else "are empty"
    return ""


def _cut_short(choice: ServedChoice, asked: Asked) -> bool:
    """Cut before the grammar could finish: by max_tokens, or by a stop string asked for."""
    return choice.finish_reason == "length" or (
        bool(asked.stop) and choice.finish_reason in ("stop", "tool_calls")
    )


def _violated(choice: ServedChoice, message: str, field: str) -> list[Defect]:
    return [Defect(Broken.GRAMMAR_VIOLATED, 0, message, field)]


def _forced_call(
    choice: ServedChoice, asked: Asked, toolset: ToolSet | None, strict: frozenset[str]
) -> list[Defect]:
    """tool_choice required or named: the grammar writes whole calls to declared tools, with
    arguments that meet the tool's schema where the tool is strict."""
    if choice.finish_reason in (None, "length"):
        return []
    calls = choice.calls
    forced = f"tool_choice {asked.tool_choice}"
    if not calls:
        if _cut_short(choice, asked):
            return []  # the stop string may have cut the call before it could be parsed
        return _violated(choice, f"no tool call under {forced}", f"choices[{choice.index}]")
    for i, call in enumerate(calls):
        field = f"tool_calls[{i}]"
        if asked.tool_choice == "named" and call.name != asked.named_tool:
            return _violated(
                choice, f"a call to {call.name!r} under tool_choice {asked.named_tool!r}", field
            )
        if toolset is not None and call.name not in toolset:
            return _violated(choice, f"a call to undeclared {call.name!r} under {forced}", field)
        try:
            arguments = read_json(call.arguments)
        except (ValueError, RecursionError) as exc:
            if _cut_short(choice, asked) and i == len(calls) - 1:
                return []
            return _violated(choice, f"{call.name}: arguments are not JSON ({exc})", field)
        if call.name not in strict:
            continue  # the envelope is forced, the arguments are the model's
        if not isinstance(arguments, dict):
            return _violated(choice, f"{call.name}: arguments are not a JSON object", field)
        if toolset is None:
            continue
        try:
            violations = toolset.violations(call.name, arguments, call.arguments)
        except UnusableSchema:
            continue  # the tools' fault, not the answer's
        if violations:
            return _violated(choice, f"under {forced}: {violations[0].describe(call.name)}", field)
    return []


def _forced_json(choice: ServedChoice, asked: Asked) -> list[Defect]:
    """response_format json_object or json_schema: the content is one JSON object (meeting
    the schema)."""
    if choice.finish_reason in (None, "length"):
        return []
    text = choice.content
    try:
        value = read_json(text.strip())
    except (ValueError, RecursionError) as exc:
        if _cut_short(choice, asked):
            return []
        why = "empty" if not text.strip() else f"not JSON ({exc})"
        return _violated(
            choice, f"the content under response_format {asked.response_format} is {why}", "content"
        )
    if not isinstance(value, dict):
        return _violated(
            choice,
            f"the content under response_format {asked.response_format} is JSON "
            f"{type(value).__name__}, not an object",
            "content",
        )
    if asked.schema is not None:
        from jsonschema import Draft202012Validator

        error = next(Draft202012Validator(asked.schema).iter_errors(value), None)
        if error is not None:
            return _violated(
                choice, f"the content fails the json_schema: {error.message}", "content"
            )
    return []
