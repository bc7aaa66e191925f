"""The shortcuts (a whole canonical turn, a whole canonical invoke) give exactly the verdict
of the tag-by-tag reading."""

from __future__ import annotations

import random

import pytest
from dsml_corruptions import corrupt
from dsml_samples import TWO_CALLS

from repro.checkers.corpus import TOOLS, samples
from repro.checkers.dsml.encode import encode_completion
from repro.checkers.dsml.stream import DsmlStream, parse_dsml
from repro.checkers.dsml.tags import KEY_MAX_CHARS
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import Verdict

TOOLSET = ToolSet.from_openai(TOOLS)
CORPUS = samples(400, seed=31)


def _texts() -> list[str]:
    rng = random.Random(2)
    texts = [s.text for s in CORPUS]
    texts += [corrupt(s.text, CORPUS[-1 - i].text, rng).text for i, s in enumerate(CORPUS)]
    texts += [corrupt(s.text, TWO_CALLS, rng).text for s in CORPUS]
    return texts


def test_shortcuts_and_tag_by_tag_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts()
    fast = [parse_dsml(t, TOOLSET) for t in texts]
    taken = {"turn": 0, "invoke": 0}
    turn, invoke = DsmlStream._read_canonical_turn, DsmlStream._read_canonical_invoke

    def counting_turn(self):
        done = turn(self)
        taken["turn"] += done
        return done

    def counting_invoke(self, at, close):
        done = invoke(self, at, close)
        taken["invoke"] += done
        return done

    monkeypatch.setattr(DsmlStream, "_read_canonical_turn", counting_turn)
    monkeypatch.setattr(DsmlStream, "_read_canonical_invoke", counting_invoke)
    assert [parse_dsml(t, TOOLSET) for t in texts] == fast
    assert taken["turn"] > 400 and taken["invoke"] > 500  # both really ran, on many texts
    monkeypatch.setattr(DsmlStream, "_read_canonical_turn", lambda self: False)
    monkeypatch.setattr(DsmlStream, "_read_canonical_invoke", lambda self, at, close: False)
    slow = [parse_dsml(t, TOOLSET) for t in texts]
    for text, a, b in zip(texts, fast, slow, strict=True):
        assert a == b, text


def _tag_by_tag(text: str) -> Verdict:
    stream = DsmlStream(TOOLSET)
    stream._read_canonical_turn = lambda: False
    stream._read_canonical_invoke = lambda at, close: False
    stream.feed(text)
    return stream.finish()


@pytest.mark.parametrize("value", ["v", True])
def test_a_parameter_name_too_long_for_the_tag_limit_is_read_tag_by_tag(value) -> None:
    """The state machine wants a parameter tag's `>` within HEAD_LIMIT_CHARS: the shortcuts
    agree on every name length around that limit."""
    for n in range(KEY_MAX_CHARS - 3, KEY_MAX_CHARS + 4):
        text = encode_completion([("run_sql", {"sql": "x", "k" * n: value})], content="Go.")
        assert parse_dsml(text, TOOLSET) == _tag_by_tag(text), n
