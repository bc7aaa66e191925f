"""Properties: healthy calls pass, corruptions that change the calls are caught, markup in a
value is flagged."""

from __future__ import annotations

import json
import random
import re

from dsml_corruptions import corrupt
from dsml_strategies import healthy_text, tools_and_calls
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.toolset import ToolSet
from repro.dsml.encode import encode_completion
from repro.dsml.markers import BLOCK_START, EOS, PARAM_CLOSE
from tests.dsml_corpus import TOOLS, samples

_CORPUS = samples(300, seed=21)
_CORPUS_TOOLS = ToolSet.from_openai(TOOLS)


@settings(max_examples=100, deadline=None)
@given(tools_and_calls(), healthy_text, st.booleans())
def test_valid_calls_for_random_schemas_have_no_defect(tools_calls, content, eos) -> None:
    tools, calls = tools_calls
    text = encode_completion(calls, content=content, eos=eos)
    verdict = parse_dsml(text, ToolSet.from_openai(tools))
    if not calls and not content.strip():
        assert [d.kind for d in verdict.defects] == ["empty_turn"]
        return
    assert verdict.defects == ()
    assert [(c.name, c.arguments) for c in verdict.calls] == [
        (name, json.dumps(args, ensure_ascii=False)) for name, args in calls
    ]


def _content_of(text: str) -> str:
    at = text.find(BLOCK_START)
    return text.removesuffix(EOS) if at == -1 else text[:at]


_JSON_VALUE = re.compile(f'(string="false">)(.*?)({re.escape(PARAM_CLOSE)})', re.DOTALL)


def _respelled(m: re.Match) -> str:
    try:
        value = json.dumps(json.loads(m[2]), ensure_ascii=False)
    except ValueError:
        return m[0]
    return m[1] + value + m[3]


def _round_trips(text: str, calls: list[tuple[str, dict]]) -> bool:
    """True if `text` is what the encoder writes for these calls: a valid output.

    A `string="false"` value may be spelled otherwise than json.dumps spells it (a token
    dropped from `1e-05` leaves `1e05`, JSON for 100000.0): still a valid output.
    """
    encoded = encode_completion(calls, content=_content_of(text), eos=text.endswith(EOS))
    return encoded == text or encoded == _JSON_VALUE.sub(_respelled, text)


@settings(max_examples=800, deadline=None)
@given(st.integers(0, len(_CORPUS) - 1), st.integers(0, len(_CORPUS) - 1), st.integers(0, 2**32))
def test_a_corruption_that_changes_the_calls_is_flagged(index: int, other: int, seed: int) -> None:
    sample = _CORPUS[index]
    bad = corrupt(sample.text, _CORPUS[other].text, random.Random(seed))
    verdict = parse_dsml(bad.text, _CORPUS_TOOLS, bad.finish_reason)
    if verdict.defects:
        return
    read = [(c.name, json.loads(c.arguments)) for c in verdict.calls]
    # Clean means: the same calls, or text that is itself a valid output of other calls
    # (a corruption inside a value or the prose that no checker could tell from intent).
    assert read == list(sample.calls) or _round_trips(bad.text, read), bad


_MARKUP = (
    '<｜DSML｜invoke name="get_date">',
    "</｜DSML｜invoke>",
    '<｜DSML｜parameter name="k" string="true">',
    "<｜DSML｜function_calls>",
    "</｜DSML｜function_calls>",
    "｜DSML｜",
    "<｜DSML｜tool_calls>",
    "<｜DSML｜param",
    EOS,
    "<｜begin▁of▁sentence｜>",
    "<｜User｜>",
    "<think>",
    "</think>",
    "<|DSML|invoke",
    "<｜｜DSML｜｜invoke",
    "< ｜DSML｜invoke",
    '<invoke name="get_date">',
    '<parameter name="k" string="true">',
    "<function_calls>",
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(_MARKUP),
    healthy_text,
    healthy_text,
    st.sampled_from(["path", "content", "nested"]),
)
def test_markup_inside_a_value_is_flagged_where_it_is(markup, before, after, where) -> None:
    value = "⟦" + before + markup + after
    if where == "nested":
        call = ("create_ticket", {"title": "t", "reporter": {"name": value}})
    else:
        call = (
            "write_file",
            {"path": "a.txt", "content": value}
            if where == "content"
            else {"path": value, "content": ""},
        )
    text = encode_completion([call], content="Writing it.")
    verdict = parse_dsml(text, _CORPUS_TOOLS)
    assert verdict.defects, text
    # Inside a JSON value the quotes are escaped; the markup's start is still literal.
    start = text.index(markup.split('"')[0], text.index("⟦"))
    assert any(start - 2 <= d.offset <= start + len(markup) for d in verdict.defects), (
        text,
        verdict.defects,
    )
