"""The embedded engine's model in every tool-call format: what it writes, how it is tokenized,
split and parsed, read back by repro's strict readers (the engine itself never imports them).
"""

from __future__ import annotations

import json
import random

import pytest

from repro.checkers import AssistantOutput, check_turn
from repro.checkers.verdict import ToolCall
from repro.dsml.markers import DSML, EOS
from repro.scenarios import PlannedCall, PlannedTurn, get_scenario
from repro.sim.faults import splice
from repro.sim.formats import DSML_FORMAT, MODEL_FORMATS, tool_parser
from repro.sim.model import earlier_calls, encode_turn
from repro.sim.prompt import render_prompt
from repro.sim.response import TurnRenderer
from repro.toolformats import ENCODERS

TOOLS = get_scenario("agentic-coding").tools()
NAMES = frozenset(t["function"]["name"] for t in TOOLS)
FORMATS = sorted(MODEL_FORMATS)
TURNS = {
    "two-reads": PlannedTurn(
        "The search points at src/a/parse.py line 31 and src/b.py line 9. I'll read both.",
        "",
        (
            PlannedCall("read_file", {"path": "src/a/parse.py", "start_line": 19, "end_line": 91}),
            PlannedCall("read_file", {"path": "src/b.py", "start_line": 1, "end_line": 69}),
        ),
    ),
    "edit": PlannedTurn(
        "Line 40 compares with <=; that is the off-by-one.",
        "",
        (
            PlannedCall(
                "edit_file",
                {
                    "path": "src/a/parse.py",
                    "old_text": "    if idx <= len(buf):\n        return buf[idx]",
                    "new_text": "    if idx < len(buf):\n        return buf[idx]",
                    "reason": {"summary": "off-by-one", "risk": "low", "lines": [40, 41]},
                },
            ),
        ),
    ),
    "answer": PlannedTurn("All green.", "The fix is in: tests/test_a.py::test_x passes.", ()),
}


def _render(fmt_name: str, tokens: list[str], *, thinking: bool, parser: bool, step: int,
            bug: bool = False) -> TurnRenderer:  # fmt: skip
    fmt = MODEL_FORMATS[fmt_name]
    renderer = TurnRenderer(
        "rid", "model", 0, split_reasoning=thinking,
        tool_names=NAMES if parser else None, fmt=fmt,
        parser=tool_parser("auto", fmt_name) if parser else None, tools=TOOLS, parser_bug=bug,
    )  # fmt: skip
    for i in range(0, len(tokens), step):
        renderer.feed(tokens[i : i + step])
    renderer.finish()
    return renderer


def _output(renderer: TurnRenderer, calls: bool) -> AssistantOutput:
    return AssistantOutput(
        content="".join(renderer.content_parts),
        reasoning="".join(renderer.reasoning_parts),
        tool_calls=tuple(ToolCall(c.name, c.arguments) for c in renderer.calls),
        finish_reason="tool_calls" if calls else "stop",
    )


def _meant(fmt_name: str, turn: PlannedTurn) -> list[tuple[str, dict]]:
    calls = [(c.name, c.arguments) for c in turn.calls]
    return calls[:1] if MODEL_FORMATS[fmt_name].one_call else calls


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_the_completion_is_the_family_encoder_and_its_markers_are_single_tokens(fmt_name):
    fmt = MODEL_FORMATS[fmt_name]
    turn = TURNS["two-reads"]
    text = encode_turn(turn, True, fmt, calls_before=3)
    assert text.endswith(EOS)
    if fmt_name != "dsml-v32":
        calls = _meant(fmt_name, turn)
        kwargs = {"first_index": 3} if fmt_name == "kimi_k2" else {}
        if fmt_name == "harmony":
            kwargs = {"stop": False}
        assert text == ENCODERS[fmt_name](calls, turn.content, turn.reasoning, **kwargs) + EOS
    tokens = fmt.tokenizer.split(text)
    assert "".join(tokens) == text and fmt.tokenizer.count(text) == len(tokens)
    assert fmt.think_close in tokens and tokens[-1] == EOS
    for special in fmt.tokenizer.specials:
        assert tokens.count(special) == text.count(special)


def test_dsml_is_written_and_tokenized_as_before():
    turn = TURNS["edit"]
    text = encode_turn(turn, True)
    assert text == DSML_FORMAT.completion(turn, True)
    tokens = DSML_FORMAT.tokenizer.split(text)
    assert DSML_FORMAT.calls_at(tokens) == tokens.index(DSML)


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no-thinking"])
@pytest.mark.parametrize("turn_name", sorted(TURNS))
@pytest.mark.parametrize("fmt_name", FORMATS)
def test_raw_output_is_what_repro_reads_as_the_calls_meant(fmt_name, turn_name, thinking):
    turn = TURNS[turn_name]
    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(turn, thinking))
    step = random.Random(f"{fmt_name}{turn_name}").randint(1, 9)
    renderer = _render(fmt_name, tokens, thinking=thinking, parser=False, step=step)
    verdict = check_turn(_output(renderer, bool(turn.calls)), TOOLS, format=fmt_name)
    assert verdict.defects == ()
    assert [(c.name, json.loads(c.arguments)) for c in verdict.calls] == _meant(fmt_name, turn)
    if thinking:
        assert "".join(renderer.reasoning_parts).strip() == turn.reasoning


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("turn_name", sorted(TURNS))
@pytest.mark.parametrize("fmt_name", sorted(set(FORMATS) - {"dsml-v32"}))
def test_the_tool_parser_returns_the_calls_meant(fmt_name, turn_name, streamed):
    turn = TURNS[turn_name]
    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(turn, True))
    for step in (1, 3, 8, len(tokens)):
        renderer = _render(fmt_name, tokens, thinking=True, parser=True, step=step)
        if streamed:
            calls, content = renderer.calls, "".join(renderer.content_parts)
        else:
            message = renderer.whole_choice("stop")["message"]
            calls = [
                ToolCall(c["function"]["name"], c["function"]["arguments"])
                for c in message["tool_calls"] or ()
            ]
            content = message["content"] or ""
        assert [(c.name, json.loads(c.arguments)) for c in calls] == _meant(fmt_name, turn)
        assert content.strip() == turn.content
        verdict = check_turn(_output(renderer, bool(turn.calls)), TOOLS, format=fmt_name)
        assert verdict.defects == ()


def test_sglang_dsml_detector_strips_string_values_as_sglang_does():
    tokens = DSML_FORMAT.tokenizer.split(DSML_FORMAT.completion(TURNS["edit"], False))
    renderer = _render("dsml-v32", tokens, thinking=False, parser=True, step=8)
    (call,) = renderer.calls
    assert json.loads(call.arguments)["old_text"] == "if idx <= len(buf):\n        return buf[idx]"


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_the_planted_parser_bug_drops_every_call_after_the_first(fmt_name):
    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(TURNS["two-reads"], True))
    renderer = _render(fmt_name, tokens, thinking=True, parser=True, step=8, bug=True)
    assert [c.index for c in renderer.calls] == [0]
    whole = renderer.whole_choice("stop")["message"]["tool_calls"]
    assert len(whole) == 1
    # Well formed: the validity oracle cannot see it.
    assert check_turn(_output(renderer, True), TOOLS, format=fmt_name).defects == ()


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_a_splice_lands_where_the_calls_begin_or_after(fmt_name):
    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(TURNS["two-reads"], True))
    donor = fmt.tokenizer.split(fmt.completion(TURNS["edit"], True))
    at = fmt.calls_at(tokens)
    assert at is not None and "".join(tokens[at:]).startswith(fmt.call_opener[:1])
    assert "".join(tokens[at:]).find(fmt.call_opener) == 0 or fmt_name == "dsml-v32"
    for key in range(0, 500, 7):
        spliced = splice(tokens, donor, key, at)
        assert spliced[:at] == tokens[:at]  # the reasoning and the prose are untouched
        assert len(spliced) > len(tokens) and spliced[-1] == EOS
    answer = fmt.tokenizer.split(fmt.completion(TURNS["answer"], True))
    assert fmt.calls_at(answer) is None


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_a_spliced_call_turn_is_mostly_caught_by_the_format_reader(fmt_name):
    """What the checker can see of a stale read, by format (docs/sim.md): most splices into
    a call leave markup the strict reader flags."""
    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(TURNS["two-reads"], True))
    donor = fmt.tokenizer.split(fmt.completion(TURNS["edit"], True))
    caught = 0
    keys = random.Random(fmt_name).sample(range(10**6), 150)
    for key in keys:
        spliced = splice(tokens, donor, key, fmt.calls_at(tokens))
        renderer = _render(fmt_name, spliced, thinking=True, parser=False, step=8)
        caught += bool(check_turn(_output(renderer, True), TOOLS, format=fmt_name).defects)
    assert caught >= 0.8 * len(keys)


def test_kimi_ids_count_the_conversations_calls():
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "x", "arguments": "{}"}}] * 2},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]  # fmt: skip
    assert earlier_calls(messages) == 2
    text = encode_turn(TURNS["two-reads"], False, MODEL_FORMATS["kimi_k2"], earlier_calls(messages))
    assert "functions.read_file:2" in text and "functions.read_file:3" in text


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_the_prompt_writes_earlier_turns_in_the_family_format(fmt_name):
    fmt = MODEL_FORMATS[fmt_name]
    call = {"id": "c0", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "src/a.py"}'}}  # fmt: skip
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "The test fails."},
        {"role": "assistant", "content": "", "reasoning_content": "Look first.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "1\tx = 1"},
    ]  # fmt: skip
    prompt = render_prompt(messages, TOOLS, True, fmt)
    assert len(prompt.part_tokens) == len(messages)
    history = fmt.history([("read_file", {"path": "src/a.py"})], "", "Look first.", 0)
    assert prompt.part_tokens[2] == fmt.tokenizer.count(history)
    if fmt is DSML_FORMAT:
        assert prompt == render_prompt(messages, TOOLS, True)


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_flipped_near_ties_stay_plain_reasoning_text_in_every_format(fmt_name):
    """The near-tie switch flips reasoning word pieces only, never the family's opening
    marker: validity sees nothing, whatever the format (docs/sim.md, near-tie switch)."""
    from repro.sim.logprobs import LogprobModel, runner_up

    fmt = MODEL_FORMATS[fmt_name]
    tokens = fmt.tokenizer.split(fmt.completion(TURNS["two-reads"], True))
    flipped_any = False
    for key in range(40):
        model = LogprobModel(key, tokens, 0, fmt.think_close, fmt.think_open)
        flipped = [runner_up(t) if model.near_tie(i) else t for i, t in enumerate(tokens)]
        flipped_any |= flipped != tokens
        renderer = _render(fmt_name, flipped, thinking=True, parser=False, step=8)
        assert check_turn(_output(renderer, True), TOOLS, format=fmt_name).defects == ()
    assert flipped_any
