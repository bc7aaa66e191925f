"""DeepSeek's golden fixtures: our encoder writes DeepSeek's bytes; our parser, DeepSeek's
parser and SGLang's detector all read the calls back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.toolset import ToolSet
from repro.dsml.encode import encode_completion
from repro.dsml.markers import EOS, THINK_CLOSE

FIXTURES = Path(__file__).with_name("fixtures") / "deepseek-v3.2"
GOLDEN_INPUT = json.loads((FIXTURES / "test_input.json").read_text(encoding="utf-8"))
GOLDEN_OUTPUT = (FIXTURES / "test_output.txt").read_text(encoding="utf-8")
SEARCH = json.loads((FIXTURES / "search_turns.json").read_text(encoding="utf-8"))


def _assistant_turns() -> list[tuple[str, list[tuple[str, dict]], str]]:
    """(completion as DeepSeek renders it, calls, content) per assistant message with calls."""
    messages = GOLDEN_INPUT["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    turns = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m["tool_calls"]
        ]
        # Thinking mode keeps the reasoning only after the last user message (dsml.md §1.3).
        reasoning = m.get("reasoning_content") if i > last_user else None
        completion = encode_completion(calls, content=m.get("content") or "", reasoning=reasoning)
        turns.append((completion, calls, m.get("content") or ""))
    return turns


TURNS = _assistant_turns()


def test_the_fixture_holds_the_turns_we_test() -> None:
    assert len(TURNS) == 3 and sum(len(c) for _, c, _ in TURNS) == 5


@pytest.mark.parametrize("turn", TURNS, ids=range(len(TURNS)))
def test_our_encoder_writes_deepseeks_bytes(turn) -> None:
    completion, _, _ = turn
    assert completion in GOLDEN_OUTPUT


def _content(completion: str) -> str:
    return completion.split(THINK_CLOSE, 1)[-1]


def test_our_parser_reads_the_golden_turns() -> None:
    tools = ToolSet.from_openai(GOLDEN_INPUT["tools"])
    for completion, calls, _ in TURNS:
        verdict = parse_dsml(_content(completion), tools)
        assert verdict.defects == ()
        assert [(c.name, json.loads(c.arguments)) for c in verdict.calls] == calls
    tools = ToolSet.from_openai(SEARCH["tools"])
    for turn in SEARCH["turns"]:
        verdict = parse_dsml(turn["completion"], tools)
        assert verdict.defects == ()
        assert [[c.name, json.loads(c.arguments)] for c in verdict.calls] == turn["calls"]
        calls = [(n, a) for n, a in turn["calls"]]
        assert encode_completion(calls) == turn["completion"]


def test_deepseek_and_sglang_read_the_same_calls(sglang) -> None:
    completions = [(c, calls) for c, calls, _ in TURNS]
    completions += [(t["completion"], [tuple(x) for x in t["calls"]]) for t in SEARCH["turns"]]
    parsed = sglang.ask(
        "deepseek_parse",
        [
            {"text": c, "thinking_mode": "thinking" if THINK_CLOSE in c else "chat"}
            for c, _ in completions
        ],
    )
    for (_, calls), result in zip(completions, parsed, strict=True):
        assert result["ok"], result
        read = [
            (t["function"]["name"], json.loads(t["function"]["arguments"]))
            for t in result["message"]["tool_calls"]
        ]
        assert read == [tuple(c) for c in calls]
    detected = sglang.ask(
        "detect",
        [
            {"text": _content(c).removesuffix(EOS), "tools": GOLDEN_INPUT["tools"]}
            for c, _, _ in TURNS
        ]
        + [{"text": t["completion"], "tools": SEARCH["tools"]} for t in SEARCH["turns"]],
    )
    for (_, calls), result in zip(completions, detected, strict=True):
        assert [(n, json.loads(a)) for n, a in result["calls"]] == [tuple(c) for c in calls]


def test_sglangs_encoder_matches_the_golden_conversation(sglang) -> None:
    """SGLang's copy drops the blank lines of the tools block (dsml.md §1.5); from the first
    user turn on, its bytes are DeepSeek's."""
    messages = [dict(m) for m in GOLDEN_INPUT["messages"]]
    messages[0]["tools"] = GOLDEN_INPUT["tools"]
    [prompt] = sglang.ask("encode", [{"messages": messages, "thinking_mode": "thinking"}])
    marker = "<｜User｜>"
    assert prompt[prompt.index(marker) :] == GOLDEN_OUTPUT[GOLDEN_OUTPUT.index(marker) :].rstrip(
        "\n"
    )
    assert prompt[: prompt.index(marker)] != GOLDEN_OUTPUT[: GOLDEN_OUTPUT.index(marker)]
