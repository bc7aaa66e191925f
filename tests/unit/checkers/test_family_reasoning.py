"""Where each family's reasoning ends, and whether a call may open before it does."""

from __future__ import annotations

import pytest

from repro.checkers.families import FAMILIES
from repro.checkers.families.reader import ReasoningRule
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from repro.toolformats import ENCODERS
from tests.formats_corpus import TOOLS

TOOLSET = ToolSet.from_openai(TOOLS)
CALL = (("get_date", {}),)
IMPLICIT_END = {"qwen3_coder", "kimi_k2"}


def check(family: str, text: str, reasoning: str = ""):
    return FAMILIES[family].check(AssistantOutput(content=text, reasoning=reasoning), TOOLSET)


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "harmony"])
def test_each_family_has_its_rule(family: str) -> None:
    rule = FAMILIES[family].reader.rule
    expected = ReasoningRule.IMPLICIT_END if family in IMPLICIT_END else ReasoningRule.FORBIDDEN
    assert rule is expected


SPECIAL = {"deepseek_v31": "<｜User｜>", "minimax_m2": "]~b]", "mistral": "[INST]"}


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "harmony"])
def test_a_special_token_in_the_reasoning_is_found_there(family: str) -> None:
    special = SPECIAL.get(family, "<|im_start|>")
    text = ENCODERS[family](CALL, "", f"I think {special} so.")
    verdict = check(family, text)
    assert [(d.kind, d.field) for d in verdict.defects] == [("special_token", "content")]
    assert verdict.defects[0].offset == text.index(special)
    assert verdict.calls[0].name == "get_date"


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "harmony"])
def test_a_call_before_the_reasoning_closes(family: str) -> None:
    reader = FAMILIES[family].reader
    call = ENCODERS[family](CALL, "", None)
    text = f"{reader.think_open}Let me look.{call}"  # no close: the call ends the reasoning
    verdict = check(family, text)
    if family in IMPLICIT_END:
        assert verdict.clean, verdict.defects
    else:
        kinds = [(d.kind, d.offset) for d in verdict.defects]
        assert ("call_in_reasoning", text.index(call.lstrip("\n")[:4])) in kinds


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "harmony"])
def test_a_reasoning_close_after_the_calls(family: str) -> None:
    reader = FAMILIES[family].reader
    call = ENCODERS[family](CALL, "", None)
    text = f"Let me look.{call}{reader.think_close}Done."
    kinds = {d.kind for d in check(family, text).defects}
    expected = "stray_marker" if family in IMPLICIT_END else "call_in_reasoning"
    assert expected in kinds


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_call_in_the_separately_returned_reasoning_is_lost_to_the_client(family: str) -> None:
    call = ENCODERS[family](CALL, "", None)
    verdict = check(family, "The date is below.", reasoning=f"I will call {call}")
    # Harmony has no call-opening marker of its own (a call is a header's recipient).
    kind = "markup_in_reasoning" if family == "harmony" else "call_in_reasoning"
    assert [(d.kind, d.field) for d in verdict.defects][:1] == [(kind, "reasoning")]


def test_harmony_reasoning_is_its_analysis_channel() -> None:
    text = ENCODERS["harmony"]((), "Done.", "See <|im_start|> here.")
    verdict = check("harmony", text)
    assert [(d.kind, d.field) for d in verdict.defects] == [("special_token", "content")]
