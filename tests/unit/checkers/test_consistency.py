"""The consistency invariants and the stream oracle's comparison: each rule fires on the answer
that breaks it, and stays quiet on the answers the engines legitimately give (a stop at
max_tokens, fewer logprob entries than tokens, arguments a model got wrong under auto)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from repro.checkers.consistency import (
    Asked,
    Broken,
    ServedAnswer,
    ServedCall,
    ServedChoice,
    TwinKind,
    check_answer,
    compare_twins,
    rules_markdown,
)
from repro.scenarios.agentic_coding import TOOLS
from repro.shapes import ANSWER_SCHEMA

REPO = Path(__file__).resolve().parents[3]
READ = ServedCall("c1", "read_file", '{"path": "src/a.py", "start_line": 1}')
ASKED = Asked(max_tokens=64, window_tokens=65536)


def choice(**fields: object) -> ServedChoice:
    base = {"index": 0, "content": "", "reasoning": "", "calls": (), "finish_reason": "stop"}
    return ServedChoice(**(base | fields))  # type: ignore[arg-type]


def answer(
    *choices: ServedChoice, completion: int = 10, prompt: int = 100, **fields: object
) -> ServedAnswer:
    base = {
        "streamed": True,
        "choices": choices or (choice(content="ok"),),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "usage_events": 1,
    }
    return ServedAnswer(**(base | fields))  # type: ignore[arg-type]


def kinds(found: list) -> list[str]:
    return [d.kind for d in found]


SOUND = [
    (answer(), ASKED),
    (answer(choice(calls=(READ,), finish_reason="tool_calls")), ASKED),
    # A stop on the last allowed token: EOS or a stop string ended it (vLLM checks both first).
    (answer(choice(content="x"), completion=64), ASKED),
    (answer(choice(content="x", finish_reason="length"), completion=64), ASKED),
    # The window left less than max_tokens: length is right at 36 tokens.
    (answer(choice(content="x", finish_reason="length"), completion=36, prompt=65500), ASKED),
    # Under auto a model may call with arguments its schema refuses (OpenAI: validate them).
    (answer(choice(calls=(ServedCall("c1", "read_file", '{"nope": 1}'),), finish_reason="tool_calls")), ASKED),
    # Under auto with finish stop the engine claims no whole call: a cut one is no lie.
    (answer(choice(calls=(ServedCall("c1", "read_file", '{"pa'),))), ASKED),
    # Fewer logprob entries than tokens (SGLang drops those of a step with no text).
    (answer(choice(content="x", logprobs=({"token": "x"},)), completion=3), ASKED),
    # Named tool choice: OpenAI's finish_reason is stop.
    (answer(choice(calls=(READ,))), dataclasses.replace(ASKED, tool_choice="named", named_tool="read_file")),
    # A grammar cut by max_tokens is no violation.
    (answer(choice(content='{"summ', finish_reason="length"), completion=64),
     dataclasses.replace(ASKED, response_format="json_schema", schema=ANSWER_SCHEMA)),
    # A stop string may cut a forced call before it could be parsed.
    (answer(choice(content="")), dataclasses.replace(ASKED, tool_choice="required", stop=("\n\n",))),
    (answer(choice(content='{"summary": "s", "done": true}')),
     dataclasses.replace(ASKED, response_format="json_schema", schema=ANSWER_SCHEMA)),
    (answer(choice(content="x"), choice(index=1, content="y"), completion=20), dataclasses.replace(ASKED, n=2)),
    # No usage chunk where none was asked for.
    (answer(usage_events=0), dataclasses.replace(ASKED, include_usage=False)),
    # The length rule makes no claim without the model's window.
    (answer(choice(content="x", finish_reason="length"), completion=5), dataclasses.replace(ASKED, window_tokens=None)),
    # An ending the checks make no claim on.
    (answer(choice(content="", finish_reason="abort"), completion=0), ASKED),
]  # fmt: skip


@pytest.mark.parametrize(("served", "asked"), SOUND)
def test_what_the_engines_legitimately_answer_breaks_nothing(
    served: ServedAnswer, asked: Asked
) -> None:
    assert check_answer(served, asked, TOOLS) == []


BROKEN = [
    (answer(choice(content="x", finish_reason="tool_calls")), ASKED, Broken.FINISH_REASON_LIE),
    (answer(choice(content="x", finish_reason="length"), completion=20), ASKED, Broken.FINISH_REASON_LIE),
    (answer(choice(calls=(ServedCall("c1", "read_file", '{"path": "a"}{"path": "a"}'),),
                   finish_reason="tool_calls")), ASKED, Broken.TOOL_CALLS_UNPARSABLE),
    # vLLM 0.32's hermes parser re-serialises a number past float range (1e999) as Infinity.
    (answer(choice(calls=(ServedCall("c1", "read_file", '{"n": Infinity}'),), finish_reason="tool_calls")),
     ASKED, Broken.TOOL_CALLS_UNPARSABLE),
    (answer(choice(content="no call")), dataclasses.replace(ASKED, tool_choice="required"),
     Broken.GRAMMAR_VIOLATED),
    (answer(choice(calls=(READ,))), dataclasses.replace(ASKED, tool_choice="named", named_tool="run_tests"),
     Broken.GRAMMAR_VIOLATED),
    (answer(choice(calls=(ServedCall("c1", "delete_all", "{}"),), finish_reason="tool_calls")),
     dataclasses.replace(ASKED, tool_choice="required"), Broken.GRAMMAR_VIOLATED),
    (answer(choice(content="sure: {}")), dataclasses.replace(ASKED, response_format="json_object"),
     Broken.GRAMMAR_VIOLATED),
    (answer(choice(content='{"summary": 3, "done": true}')),
     dataclasses.replace(ASKED, response_format="json_schema", schema=ANSWER_SCHEMA), Broken.GRAMMAR_VIOLATED),
    (answer(choice(calls=(READ,), finish_reason="tool_calls")), dataclasses.replace(ASKED, tool_choice="none"),
     Broken.TOOL_CHOICE_IGNORED),
    (answer(choice(calls=(READ, dataclasses.replace(READ, id="c2")), finish_reason="tool_calls")),
     dataclasses.replace(ASKED, parallel_tool_calls=False), Broken.PARALLEL_CALLS_IGNORED),
    (answer(choice(calls=(READ, READ), finish_reason="tool_calls")), ASKED, Broken.CALL_ID_BROKEN),
    (answer(choice(calls=(dataclasses.replace(READ, id=""),), finish_reason="tool_calls")), ASKED,
     Broken.CALL_ID_BROKEN),
    (answer(anomalies=(("after_finish", "choice 0: text after its finish_reason"),)), ASKED,
     Broken.STREAM_OUT_OF_ORDER),
    (answer(anomalies=(("call_header_repeated", "..."),)), ASKED, Broken.STREAM_OUT_OF_ORDER),
    (answer(usage_events=0), ASKED, Broken.USAGE_WRONG),
    (answer(usage_events=0, streamed=False), dataclasses.replace(ASKED, streamed=False), Broken.USAGE_WRONG),
    (answer(total_tokens=5), ASKED, Broken.USAGE_WRONG),
    (answer(choice(content="x", logprobs=({"token": "x"},) * 4), completion=3), ASKED, Broken.USAGE_WRONG),
    (answer(choice(content="text"), completion=0), ASKED, Broken.USAGE_WRONG),
    (answer(completion=65), ASKED, Broken.MAX_TOKENS_EXCEEDED),
    (answer(choice(content="x")), dataclasses.replace(ASKED, n=2), Broken.CHOICE_MISSING),
    (answer(choice(content="x", finish_reason=None)), ASKED, Broken.CHOICE_MISSING),
    (answer(choice(content="x", reasoning="a</think>b")), ASKED, Broken.REASONING_UNSEPARATED),
]  # fmt: skip


@pytest.mark.parametrize(("served", "asked", "kind"), BROKEN)
def test_each_broken_promise_is_its_kind(served: ServedAnswer, asked: Asked, kind: Broken) -> None:
    assert kind in kinds(check_answer(served, asked, TOOLS))


@pytest.mark.parametrize("arguments", ['{"path": 5}', "true", "null", "[1]"])
def test_a_forced_calls_arguments_are_the_grammars_only_for_a_strict_tool(arguments: str) -> None:
    """vLLM 0.32 (`--tool-strict-level auto`) forces a non-strict tool's call envelope under
    required or a named function, not its arguments: the tiny model wrote `"arguments": true`
    in 40 of 602 turns (2026-12-05). What the model chose is no broken promise; for a tool
    declared `strict: true` the grammar pins the schema, and a violation is."""
    served = answer(
        choice(calls=(ServedCall("c1", "read_file", arguments),), finish_reason="tool_calls")
    )
    for forced in (
        dataclasses.replace(ASKED, tool_choice="required"),
        dataclasses.replace(ASKED, tool_choice="named", named_tool="read_file"),
    ):
        assert check_answer(served, forced, TOOLS) == []
        strict = [dict(t, function=dict(t["function"], strict=True)) for t in TOOLS]
        assert Broken.GRAMMAR_VIOLATED in kinds(check_answer(served, forced, strict))


def test_an_anomaly_that_breaks_no_promise_is_left_alone() -> None:
    served = answer(anomalies=(("usage_repeated", "two usage chunks"),))
    assert check_answer(served, ASKED, TOOLS) == []


def test_the_kinds_table_is_the_docs_page_s() -> None:
    page = (REPO / "docs" / "consistency.md").read_text(encoding="utf-8")
    assert rules_markdown() in page
    assert {str(k) for k in Broken} == {
        line.split("`")[1] for line in rules_markdown().splitlines()[2:]
    }


TOKENS = ({"token": "a", "logprob": -0.1, "top_logprobs": [{"token": "a", "logprob": -0.1},
                                                           {"token": "b", "logprob": -0.5}]},)  # fmt: skip


def test_twins_agree_on_the_same_calls_however_their_arguments_are_spaced() -> None:
    spaced = choice(calls=(ServedCall("c1", "read_file", '{"start_line": 1, "path": "src/a.py"}'),),
                    finish_reason="tool_calls")  # fmt: skip
    tight = choice(calls=(ServedCall("x9", "read_file", '{"path":"src/a.py","start_line":1}'),),
                   finish_reason="tool_calls")  # fmt: skip
    verdict = compare_twins(answer(spaced), answer(tight, streamed=False), 1.0)
    assert verdict.kind is TwinKind.AGREE


@pytest.mark.parametrize(
    ("streamed", "whole", "where"),
    [
        (answer(choice(content="a")), answer(choice(content="b")), "choices[0].content"),
        (answer(choice(content="a")), answer(choice(content="a", finish_reason="length")),
         "choices[0].finish_reason"),
        (answer(prompt=100), answer(prompt=101), "usage.prompt_tokens"),
        (answer(completion=10), answer(completion=11), "usage.completion_tokens"),
        (answer(choice(calls=(READ,), finish_reason="tool_calls")),
         answer(choice(content=READ.arguments)), "choices[0].content"),
        (answer(choice(content="a"), choice(index=1, content="b")), answer(choice(content="a")), "choices"),
        # The same tokens written as different text: the output path, whatever the margins.
        (answer(choice(content="a", logprobs=TOKENS)), answer(choice(content="A", logprobs=TOKENS)),
         "choices[0].content"),
    ],
)  # fmt: skip
def test_twins_that_disagree_say_where(
    streamed: ServedAnswer, whole: ServedAnswer, where: str
) -> None:
    verdict = compare_twins(streamed, dataclasses.replace(whole, streamed=False), 1.0)
    assert verdict.kind is TwinKind.DISAGREE and verdict.where == where and verdict.counts
    assert verdict.defect().kind == Broken.STREAM_DISAGREES


def test_twins_that_part_at_a_near_tie_are_numerical_and_not_counted() -> None:
    mine = ({"token": "b", "logprob": -0.5, "top_logprobs": [{"token": "b", "logprob": -0.5},
                                                            {"token": "a", "logprob": -0.6}]},)  # fmt: skip
    verdict = compare_twins(
        answer(choice(content="b", logprobs=mine), completion=1),
        answer(choice(content="a", logprobs=TOKENS), completion=1, streamed=False),
        1.0,
    )
    assert verdict.kind is TwinKind.NUMERICAL and not verdict.counts


def test_twins_whose_calls_parse_alike_from_other_tokens_are_judged_by_the_tokens() -> None:
    """vLLM CPU, 2026-12-05: `926e-933262626262323262930` streamed and `0.0` unstreamed, both
    the number 0.0, from 53 and 59 tokens. The usage is not the difference: the tokens are,
    and at a near tie they are numerical."""

    def scored(token: str, other: str) -> dict:
        return {"token": token, "logprob": -1.0,
                "top_logprobs": [{"token": token, "logprob": -1.0}, {"token": other, "logprob": -1.2}]}  # fmt: skip

    def zero(arguments: str, first: str, other: str) -> ServedChoice:
        call = ServedCall("c1", "read_file", arguments)
        return choice(calls=(call,), finish_reason="tool_calls", logprobs=(scored(first, other),))

    streamed = answer(zero("926e-933262626262323262930", "926", "0"), completion=53)
    whole = answer(zero("0.0", "0", "926"), completion=59, streamed=False)
    verdict = compare_twins(streamed, whole, 1.0)
    assert verdict.kind is TwinKind.NUMERICAL and not verdict.counts
    far = answer(zero("0.0", "0", "926"), completion=59, streamed=False)
    far.choices[0].logprobs[0]["top_logprobs"][1]["logprob"] = -9.0
    assert compare_twins(streamed, far, 1.0).kind is TwinKind.DISAGREE
