"""The shortcuts (a clean turn confirmed whole, a canonical invoke read whole) give exactly
the verdict of the tag-by-tag reading, and the clean-turn one answers for healthy turns."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from dsml_corruptions import corrupt
from dsml_samples import TOOLSET as SAMPLE_TOOLS
from dsml_samples import TWO_CALLS
from dsml_strategies import healthy_text, tools_and_calls
from hypothesis import given, settings
from hypothesis import strategies as st

from repro.checkers.dsml import stream as stream_module
from repro.checkers.dsml.clean_turn import read_clean_turn
from repro.checkers.dsml.stream import DsmlStream, parse_dsml
from repro.checkers.dsml.tags import KEY_MAX_CHARS
from repro.checkers.repetition import MIN_RUN_CHARS
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import Verdict
from repro.dsml.encode import encode_completion
from repro.dsml.markers import EOS
from tests.dsml_corpus import PROSE, TOOLS, samples

TOOLSET = ToolSet.from_openai(TOOLS)
CORPUS = samples(400, seed=31)
DUPLICATE = '<｜DSML｜parameter name="location" string="true">Paris</｜DSML｜parameter>\n'


def _texts() -> list[str]:
    rng = random.Random(2)
    texts = [s.text for s in CORPUS]
    texts += [corrupt(s.text, CORPUS[-1 - i].text, rng).text for i, s in enumerate(CORPUS)]
    texts += [corrupt(s.text, TWO_CALLS, rng).text for s in CORPUS]
    return texts


@contextmanager
def _without(clean_turn: bool, invoke: bool) -> Iterator[pytest.MonkeyPatch]:
    """A context in which the named shortcuts are off."""
    with pytest.MonkeyPatch.context() as mp:
        if clean_turn:
            mp.setattr(stream_module, "read_clean_turn", lambda text, tools, dialect: None)
        if invoke:
            mp.setattr(DsmlStream, "_read_canonical_invoke", lambda self, at, close: False)
        yield mp


def _tag_by_tag(text: str, tools: ToolSet = TOOLSET, finish_reason: str | None = None) -> Verdict:
    with _without(clean_turn=True, invoke=True):
        return parse_dsml(text, tools, finish_reason)


def test_shortcuts_and_tag_by_tag_agree() -> None:
    texts = _texts()
    fast = [parse_dsml(t, TOOLSET) for t in texts]
    confirmed = sum(read_clean_turn(t, TOOLSET) is not None for t in texts)
    assert confirmed >= 400  # every corpus turn, and corruptions that leave a clean turn
    with _without(clean_turn=True, invoke=False) as mp:
        taken = 0
        invoke = DsmlStream._read_canonical_invoke

        def counting_invoke(self, at, close):
            nonlocal taken
            done = invoke(self, at, close)
            taken += done
            return done

        mp.setattr(DsmlStream, "_read_canonical_invoke", counting_invoke)
        assert [parse_dsml(t, TOOLSET) for t in texts] == fast
        assert taken > 500  # the invoke shortcut really ran, on many texts
    for text, verdict in zip(texts, fast, strict=True):
        assert _tag_by_tag(text) == verdict, text


def test_a_clean_turn_ends_the_same_way_whatever_the_finish_reason() -> None:
    for sample in CORPUS[:100]:
        assert parse_dsml(sample.text, TOOLSET, "length") == _tag_by_tag(
            sample.text, finish_reason="length"
        )


@settings(max_examples=150, deadline=None)
@given(tools_and_calls(), healthy_text, st.booleans(), st.integers(0, 2**32))
def test_random_schemas_and_their_corruptions(tools_calls, content, eos, seed) -> None:
    """Valid calls for random schemas are confirmed whole; corrupted, whatever the clean-turn
    reading says is what the tag-by-tag reading says."""
    tools, calls = tools_calls
    toolset = ToolSet.from_openai(tools)
    text = encode_completion(calls, content=content, eos=eos)
    bad = corrupt(text, TWO_CALLS, random.Random(seed))
    if calls or content.strip():
        assert read_clean_turn(text, toolset) == _tag_by_tag(text, toolset)
    for t in (text, bad.text):
        verdict = read_clean_turn(t, toolset)
        assert verdict is None or verdict == _tag_by_tag(t, toolset, bad.finish_reason), t


# Text that only looks like markup: each trigger of markup_scan, none a finding.
_LOOKALIKES = [
    "The DSML format wraps calls in tags; the <parameter> element holds one value.",
    "<invoke/> and <parameter>30</parameter> are plain XML",
    "I think> so; see function_calls> and tool_calls> in the docs",
    "DSML_tool",
    "DSML, a | b and 名称｜数量",
]
_MARKUP = [
    "<｜DSML｜invoke",
    "｜DSML｜",
    "|DSML|",
    "｜｜DSML｜｜",
    "DSML｜",
    "<｜User｜>",
    EOS,
    "<think>",
    "</think>",
    '<invoke name="x">',
    '<parameter name="k" string="true">',
    "<function_calls>",
    "</｜DSML｜parameter>",
    "/｜DSML｜parameter",
    "<｜",
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_LOOKALIKES + _MARKUP),
    st.sampled_from(["content", "string", "json", "nested", "name", "key"]),
    st.booleans(),
)
def test_text_that_looks_like_markup_or_is_markup(piece, where, eos) -> None:
    """Where a trigger sits (content, a raw value, a JSON value, a name) the clean-turn
    reading agrees with the tag-by-tag one, and confirms the turn when it is clean."""
    content, name, key = "Here.", "write_file", "content"
    args: dict = {"path": "a.txt", "content": "x"}
    if where == "content":
        content = f"Note: {piece} ok"
    elif where == "string":
        args["content"] = f"a {piece} b"
    elif where == "json":
        extra = {"note": [piece, '"quoted"']}  # escapes: the decoded strings are scanned
        name, args = "create_ticket", {"title": "t", "reporter": {"name": "n"}, "extra": extra}
    elif where == "nested":
        name, args = "create_ticket", {"title": "t", "reporter": {"name": piece}}
    elif where == "name":
        name = piece
    else:  # run_sql takes any other argument, whatever its name
        name, key = "run_sql", piece
        args = {"sql": "x", key: "v"}
    text = encode_completion([(name, args)], content=content, eos=eos)
    verdict = read_clean_turn(text, TOOLSET)
    assert verdict is None or verdict == _tag_by_tag(text), text
    if piece in _LOOKALIKES and where in ("content", "string", "json", "nested"):
        assert verdict is not None, text


@pytest.mark.parametrize(
    "text",
    [
        "",
        EOS,
        "   \n" + EOS,
        "Hi." + EOS + EOS,
        "Hi." + EOS + "more",
        TWO_CALLS.replace("\n\n<｜DSML", "<｜DSML"),
        TWO_CALLS.replace("\n\n<｜DSML", "\n<｜DSML"),
        TWO_CALLS.removeprefix("Let me check."),
        TWO_CALLS.removeprefix("Let me check.\n"),
        TWO_CALLS + "x",
        TWO_CALLS.removesuffix(EOS) + "\n" + EOS,
        TWO_CALLS + TWO_CALLS,
        TWO_CALLS.replace("San Francisco", "San Ã© Francisco"),
        TWO_CALLS.replace("San Francisco", "loop " * (MIN_RUN_CHARS // 4)),
        TWO_CALLS.replace("get_date", "no_such_tool"),
        TWO_CALLS.replace('">\n\n</｜DSML｜invoke', '">\n</｜DSML｜invoke'),
        TWO_CALLS.replace("San Francisco", "a <｜ b"),
        TWO_CALLS.replace("</｜DSML｜parameter>\n<", "</｜DSML｜parameter>\n" + DUPLICATE + "<", 1),
        "Prose that ends inside a token <｜end▁of",
        PROSE[10] + "\n\n" + PROSE[13],
    ],
)
def test_edges_of_a_turn(text: str) -> None:
    verdict = read_clean_turn(text, SAMPLE_TOOLS)
    assert verdict is None or verdict == _tag_by_tag(text, SAMPLE_TOOLS)
    assert parse_dsml(text, SAMPLE_TOOLS) == _tag_by_tag(text, SAMPLE_TOOLS)
    assert read_clean_turn(TWO_CALLS, SAMPLE_TOOLS) is not None  # the unspoilt turn is


@pytest.mark.parametrize("value", ["v", True])
def test_a_parameter_name_too_long_for_the_tag_limit_is_read_tag_by_tag(value) -> None:
    """The state machine wants a parameter tag's `>` within HEAD_LIMIT_CHARS: the shortcuts
    agree on every name length around that limit."""
    for n in range(KEY_MAX_CHARS - 3, KEY_MAX_CHARS + 4):
        text = encode_completion([("run_sql", {"sql": "x", "k" * n: value})], content="Go.")
        assert parse_dsml(text, TOOLSET) == _tag_by_tag(text), n
        with _without(clean_turn=True, invoke=False):
            assert parse_dsml(text, TOOLSET) == _tag_by_tag(text), n


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (r'{"a": "\u003c\uff5cUser\uff5c>"}', False),
        (r'{"a": "\uff5c\u0044SML\uff5c"}', False),
        (r'{"\u003c\uff5cUser\uff5c>": 1}', False),
        (r'{"a": "<\/think>"}', False),
        (r'{"a": "<parameter name=\"k\" string=\"true\">"}', False),
        (r'{"a": "line\nbreak \"quoted\" back\\slash \t"}', True),
        (r'{"a": "\u00e9t\u00e9"}', True),
        (r'{"a": "a\/b"}', True),
    ],
)
def test_markup_behind_json_escapes(raw: str, clean: bool) -> None:
    """A string="false" value is scanned once decoded wherever an escape could hide markup."""
    text = encode_completion([("create_ticket", {"title": "t", "reporter": {"name": "n"}})])
    text = text.replace(
        "</｜DSML｜invoke>",
        f'<｜DSML｜parameter name="extra" string="false">{raw}</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>",
    )
    verdict = _tag_by_tag(text)
    assert verdict.clean == clean, verdict
    assert parse_dsml(text, TOOLSET) == verdict
    assert (read_clean_turn(text, TOOLSET) is not None) == clean
