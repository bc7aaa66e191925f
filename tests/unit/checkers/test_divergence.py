"""The divergence verdict: identical, numerical (a flipped near-tie) or corrupt, and where."""

from __future__ import annotations

import pytest

from repro.checkers.divergence import Answer, DivergenceKind, compare, scored_tokens


def item(token: str, *top: tuple[str, float]) -> dict:
    """A logprobs item: the token, its logprob (from `top`) and `top` in the order given."""
    return {
        "token": token,
        "logprob": dict(top)[token],
        "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top],
    }


REFERENCE = [
    item("I", ("I", -0.01), ("We", -6.0)),
    item(" read", (" Read", -0.7), (" read", -0.6), (" open", -5.0)),  # a near-tie
    item(" it", ("it", -9.0), (" it", -0.02), (" this", -4.0)),
]


def answer(tokens: list[dict], content: str = "") -> Answer:
    text = "".join(t["token"] for t in tokens)
    return Answer(reasoning=text, content=content, tokens=scored_tokens(tokens))


def test_the_same_tokens_and_text_are_identical() -> None:
    verdict = compare(answer(REFERENCE), answer(REFERENCE), 1.0)
    assert verdict.kind is DivergenceKind.IDENTICAL and not verdict.counts


def test_a_flipped_near_tie_is_numerical_and_not_counted() -> None:
    loaded = [REFERENCE[0], item(" Read", (" Read", -0.55), (" read", -0.62)), REFERENCE[2]]
    verdict = compare(answer(loaded), answer(REFERENCE), 1.0)
    assert verdict.kind is DivergenceKind.NUMERICAL and not verdict.counts
    assert verdict.token_offset == 1 and (verdict.field, verdict.char_offset) == ("reasoning", 2)
    assert verdict.loaded_token == " Read" and verdict.reference_token == " read"
    assert verdict.loaded_logprob == -0.55 and verdict.loaded_margin == pytest.approx(0.07)
    assert verdict.reference_logprob == -0.6 and verdict.reference_margin == pytest.approx(0.1)
    assert verdict.gap_nats == pytest.approx(0.1) and "0.10 nats below" in verdict.describe()


def test_a_token_the_reference_scored_far_below_or_not_at_all_is_corrupt() -> None:
    far = [
        REFERENCE[0],
        item(" open", (" open", -0.01), (" read", -7.0)),
        REFERENCE[2],
    ]  # 4.4 below
    verdict = compare(answer(far), answer(REFERENCE), 1.0)
    assert verdict.kind is DivergenceKind.CORRUPT and verdict.counts
    assert verdict.gap_nats == pytest.approx(4.4) and "4.40 nats below" in verdict.describe()
    spliced = [REFERENCE[0], item("｜DSML｜", ("｜DSML｜", -0.02)), REFERENCE[2]]
    alien = compare(answer(spliced), answer(REFERENCE), 1.0)
    assert alien.kind is DivergenceKind.CORRUPT and alien.reference_logprob_of_loaded is None
    assert "not among its top choices" in alien.describe()
    # A wider setting calls the same gap numerical: the margin is the user's to set.
    assert compare(answer(far), answer(REFERENCE), 5.0).kind is DivergenceKind.NUMERICAL


def test_a_token_missing_from_a_flat_top_k_proves_nothing_and_is_not_counted() -> None:
    """A random model's first token (measured on vLLM CPU, 2026-12-05): five alternatives
    within 0.6 nats, the loaded token not among them. It may lie just below the fifth."""
    flat = item("a", ("a", -3.9), ("b", -4.15), ("c", -4.3), ("d", -4.4), ("e", -4.5))
    loaded = [item("z", ("z", -3.56), ("y", -4.27))]
    verdict = compare(answer(loaded), answer([flat]), 1.0)
    assert verdict.kind is DivergenceKind.NUMERICAL and not verdict.counts
    assert "top 5, which lie within 0.60 nats" in verdict.note
    # The same absence from a top-k that spans the margin is corrupt: it lies further below.
    steep = item("a", ("a", -0.1), ("b", -2.5))
    assert compare(answer(loaded), answer([steep]), 1.0).kind is DivergenceKind.CORRUPT


def test_an_answer_cut_short_or_running_on_is_corrupt() -> None:
    short = compare(answer(REFERENCE[:2]), answer(REFERENCE), 1.0)
    assert short.kind is DivergenceKind.CORRUPT and short.token_offset == 2
    assert short.loaded_token is None and "the loaded answer ended" in short.note
    long = compare(answer([*REFERENCE, REFERENCE[2]]), answer(REFERENCE), 1.0)
    assert long.kind is DivergenceKind.CORRUPT and long.reference_token is None


def test_same_tokens_different_text_is_corrupt_output_path() -> None:
    verdict = compare(answer(REFERENCE, "x"), answer(REFERENCE, "y"), 1.0)
    assert verdict.kind is DivergenceKind.CORRUPT and verdict.field == "content"
    assert "output path" in verdict.note


def test_without_logprobs_every_divergence_counts_and_says_where() -> None:
    reference = Answer(
        "thinking", "call", '[{"name": "read_file", "arguments": "{\\"path\\": \\"a\\"}"}]'
    )
    assert compare(reference, reference, 1.0).kind is DivergenceKind.IDENTICAL
    loaded = Answer(
        "thinking", "call", '[{"name": "read_file", "arguments": "{\\"path\\": \\"b\\"}"}]'
    )
    verdict = compare(loaded, reference, 1.0)
    assert verdict.kind is DivergenceKind.DIVERGED and verdict.counts
    assert verdict.field == "tool_calls" and verdict.char_offset == reference.tool_calls.index(
        'a\\"}'
    )
    # One side with logprobs is not enough to class it.
    half = compare(answer(REFERENCE), Answer(reasoning="I read that"), 1.0)
    assert half.kind is DivergenceKind.DIVERGED


def test_malformed_logprobs_mean_no_logprobs() -> None:
    assert scored_tokens([{"token": "a", "logprob": -1}, {"logprob": -2}]) == ()
    (token,) = scored_tokens(
        [{"token": "a", "logprob": float("nan"), "top_logprobs": [{"token": "a", "logprob": -1}]}]
    )
    assert token.logprob is None and token.margin is None and token.top == (("a", -1.0),)


def test_text_changed_before_a_later_near_tie_is_still_corrupt() -> None:
    """A splice on the output path, then a flipped near-tie further on: the first token
    difference is numerical, but the text already parted where the tokens were the same
    (measured through vLLM: 2 of 46 injected splices hid this way)."""
    tie = item(" it", (" it", -0.5), (" this", -0.6))
    reference = answer([*REFERENCE[:2], tie])
    flipped = [*REFERENCE[:2], item(" this", (" this", -0.55), (" it", -0.6))]
    spliced = Answer(reasoning="Ixx read this", tokens=scored_tokens(flipped))
    verdict = compare(spliced, reference, 1.0)
    assert verdict.kind is DivergenceKind.CORRUPT and verdict.counts
    assert (verdict.field, verdict.char_offset, verdict.token_offset) == ("reasoning", 1, 2)
    assert "output path" in verdict.note
    assert compare(answer(flipped), reference, 1.0).kind is DivergenceKind.NUMERICAL
    # Where the reference's text is not its tokens written out (a parser reshaped it), the
    # shared tokens decide nothing and the near-tie stays numerical.
    reshaped = Answer(reasoning="(I read) it", tokens=reference.tokens)
    unspliced = Answer(reasoning="(I read) this", tokens=scored_tokens(flipped))
    assert compare(unspliced, reshaped, 1.0).kind is DivergenceKind.NUMERICAL


def test_calls_parsed_on_one_side_only_are_judged_at_the_first_token_that_differs() -> None:
    """vLLM's whole-answer hermes parser returns every call as content when the last one is
    cut by max_tokens: the same first tokens, one side calls, the other raw text. The texts
    part at character 0, yet the answers part only where a token does (here a near tie)."""
    shared = [item("<tool_call>", ("<tool_call>", -0.01), ("x", -6.0))]
    tie = item(" a", (" a", -0.5), (" b", -0.6))
    reference = Answer(content="<tool_call> a", tokens=scored_tokens([*shared, tie]))
    flipped = item(" b", (" b", -0.55), (" a", -0.6))
    loaded = Answer(
        tool_calls='[{"name": "f", "arguments": "{}"}]', tokens=scored_tokens([*shared, flipped])
    )
    verdict = compare(loaded, reference, 1.0)
    assert verdict.kind is DivergenceKind.NUMERICAL and verdict.token_offset == 1
