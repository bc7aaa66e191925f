"""The tokenizer model: special tokens are single, text is ~4 bytes a token."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from repro.dsml.encode import encode_completion
from repro.dsml.markers import DSML, EOS, THINK_CLOSE
from repro.sim.tokens import count_tokens, split_tokens


def test_special_tokens_are_single_tokens() -> None:
    text = encode_completion([("read_file", {"path": "a.py"})], reasoning="why")
    tokens = split_tokens(text)
    assert "".join(tokens) == text
    assert tokens.count(DSML) == text.count(DSML) == 6
    assert tokens[-1] == EOS and THINK_CLOSE in tokens


def test_plain_text_is_four_bytes_a_token() -> None:
    assert split_tokens("abcdefghij") == ["abcd", "efgh", "ij"]
    assert count_tokens("x" * 4000) == 1000
    # a multi-byte character is never split; each piece has at least 4 bytes but the last
    pieces = split_tokens("ééééé")
    assert "".join(pieces) == "ééééé" and all(len(p.encode()) >= 4 for p in pieces[:-1])


@given(st.lists(st.sampled_from(["a", "é", " ", "\n", DSML, EOS, "<", "｜", "xyz"]), max_size=40))
def test_count_agrees_with_split(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert "".join(split_tokens(text)) == text
    assert count_tokens(text) == len(split_tokens(text))
