"""The parser differential: the engine's parsed calls against repro's parse of the raw text.

The embedded engine stands in for a serving engine (its parsers are the engines' lenient
ones, its planted bug a parser latch that drops later calls): the same tokens rendered with
its parser on and off must come out alike, and the bug must be corruption.
"""

from __future__ import annotations

import json

import pytest

from repro.checkers.differential import canonical
from repro.checkers.divergence import Answer, DivergenceKind, ScoredToken, compare
from repro.scenarios import PlannedCall, PlannedTurn, get_scenario
from repro.sim.formats import MODEL_FORMATS, tool_parser
from repro.sim.response import TurnRenderer

TOOLS = get_scenario("agentic-coding").tools()
NAMES = frozenset(t["function"]["name"] for t in TOOLS)
TWO_CALLS = PlannedTurn(
    "Both files are named in the trace.",
    "",
    (
        PlannedCall("read_file", {"path": "src/a.py", "start_line": 1, "end_line": 60}),
        PlannedCall("search_code", {"query": "window", "max_results": 200}),
    ),
)
ANSWER = PlannedTurn("All green.", "The fix is in: tests/test_a.py::test_x passes now.", ())


def _answer(fmt_name: str, turn: PlannedTurn, parser: bool, bug: bool = False) -> Answer:
    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(turn, True))
    renderer = TurnRenderer(
        "rid", "m", 0, split_reasoning=True, tool_names=NAMES if parser else None, fmt=fmt,
        parser=tool_parser("auto", fmt_name) if parser else None, tools=TOOLS, parser_bug=bug,
    )  # fmt: skip
    for i in range(0, len(tokens), 8):
        renderer.feed(tokens[i : i + 8])
    renderer.finish()
    calls = [{"name": c.name, "arguments": c.arguments} for c in renderer.calls]
    scored = tuple(ScoredToken(t, -0.01, 5.0) for t in tokens[:-1])  # EOS is never text
    return Answer(
        "".join(renderer.reasoning_parts),
        "".join(renderer.content_parts),
        json.dumps(calls, ensure_ascii=False),
        scored,
    )


# DSML's SGLang-like detector strips string values, as SGLang does (an engine defect the
# differential reports: docs/checkers.md); these turns have none to strip.
@pytest.mark.parametrize("turn", [TWO_CALLS, ANSWER], ids=["calls", "answer"])
@pytest.mark.parametrize("fmt_name", sorted(MODEL_FORMATS))
def test_a_healthy_parser_agrees_with_repros_parse_of_the_raw_text(fmt_name, turn):
    parsed, raw = _answer(fmt_name, turn, parser=True), _answer(fmt_name, turn, parser=False)
    if turn.calls:
        assert parsed != raw  # the engine reshaped the turn...
    mine, theirs = canonical(parsed, TOOLS, fmt_name), canonical(raw, TOOLS, fmt_name)
    assert mine == theirs  # ...and it is the same turn
    assert compare(mine, theirs, 1.0).kind is DivergenceKind.IDENTICAL


@pytest.mark.parametrize("fmt_name", sorted(set(MODEL_FORMATS) - {"harmony"}))
def test_a_parser_that_drops_a_call_is_corruption_of_the_output_path(fmt_name):
    buggy = _answer(fmt_name, TWO_CALLS, parser=True, bug=True)
    raw = _answer(fmt_name, TWO_CALLS, parser=False)
    assert len(json.loads(buggy.tool_calls)) == 1  # well formed: validity cannot see it
    verdict = compare(canonical(buggy, TOOLS, fmt_name), canonical(raw, TOOLS, fmt_name), 1.0)
    assert verdict.kind is DivergenceKind.CORRUPT and verdict.counts
    assert verdict.field == "tool_calls" and "output path" in verdict.note


def test_the_engine_stripping_string_values_is_caught_too():
    turn = PlannedTurn(
        "Fix the bound.", "", (PlannedCall("edit_file", {"path": "src/a.py", "old_text": "    x <= y", "new_text": "    x < y"}),)
    )  # fmt: skip
    parsed, raw = _answer("dsml-v32", turn, parser=True), _answer("dsml-v32", turn, parser=False)
    verdict = compare(canonical(parsed, TOOLS, "dsml-v32"), canonical(raw, TOOLS, "dsml-v32"), 1.0)
    assert verdict.kind is DivergenceKind.CORRUPT and verdict.field == "tool_calls"
