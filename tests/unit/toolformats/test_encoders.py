"""Each family's encoder writes what its model's chat template renders, byte for byte (the
expected strings follow the templates cited in each repro/toolformats module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from repro.toolformats import ENCODERS

CALLS = (("search", {"query": "x", "topn": 3}), ("get_date", {}))
REPO = Path(__file__).resolve().parents[3]

EXPECTED = {
    "qwen3_coder": (
        "Hi.\n\n<tool_call>\n<function=search>\n<parameter=query>\nx\n</parameter>\n"
        "<parameter=topn>\n3\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_date>\n</function>\n</tool_call>"
    ),
    "hermes": (
        'Hi.\n<tool_call>\n{"name": "search", "arguments": {"query": "x", "topn": 3}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_date", "arguments": {}}\n</tool_call>'
    ),
    "deepseek_v31": (
        "Hi.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>"
        '{"query": "x", "topn": 3}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_date'
        "<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    ),
    "kimi_k2": (
        "Hi.<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0"
        '<|tool_call_argument_begin|>{"query": "x", "topn": 3}<|tool_call_end|>'
        "<|tool_call_begin|>functions.get_date:1<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>"
    ),
    "glm45": (
        "\nHi.\n<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x</arg_value>\n"
        "<arg_key>topn</arg_key>\n<arg_value>3</arg_value>\n</tool_call>\n"
        "<tool_call>get_date\n</tool_call>"
    ),
    "glm47": (
        "Hi.<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>"
        "<arg_key>topn</arg_key><arg_value>3</arg_value></tool_call>"
        "<tool_call>get_date</tool_call>"
    ),
    "minimax_m2": (
        'Hi.\n<minimax:tool_call>\n<invoke name="search">\n<parameter name="query">x</parameter>\n'
        '<parameter name="topn">3</parameter>\n</invoke>\n<invoke name="get_date">\n</invoke>\n'
        "</minimax:tool_call>"
    ),
    "mistral": '[TOOL_CALLS]search[ARGS]{"query": "x", "topn": 3}[TOOL_CALLS]get_date[ARGS]{}',
}


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_the_template_bytes(family: str) -> None:
    content = "" if family == "mistral" else "Hi."
    assert ENCODERS[family](CALLS, content) == EXPECTED[family]


def test_harmony_one_call_per_completion_and_its_channels() -> None:
    text = ENCODERS["harmony"](CALLS[:1], "Hi.", "Think.")
    assert text == (
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant"
        "<|channel|>commentary<|message|>Hi.<|end|><|start|>assistant"
        "<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
        '{"query": "x", "topn": 3}<|call|>'
    )
    assert ENCODERS["harmony"]((), "Done.") == "<|channel|>final<|message|>Done.<|return|>"
    with pytest.raises(ValueError, match="at most one"):
        ENCODERS["harmony"](CALLS)


@pytest.mark.parametrize(
    ("family", "head"),
    [
        ("qwen3_coder", "R\n</think>\n\n"),
        ("hermes", "<think>\nR\n</think>\n\n"),
        ("deepseek_v31", "R</think>"),
        ("kimi_k2", "<think>R</think>"),
        ("glm45", "\n<think>R</think>"),
        ("glm47", "R</think>"),
        ("minimax_m2", "R\n</think>\n\n"),
        ("mistral", "[THINK]R[/THINK]"),
    ],
)
def test_the_reasoning_as_each_template_writes_it(family: str, head: str) -> None:
    assert ENCODERS[family]((), "", "R") == head


def test_values_are_raw_strings_or_tojson() -> None:
    text = ENCODERS["glm47"]([("f", {"s": "a\nb", "o": {"k": [1, None]}, "b": False})])
    assert "<arg_value>a\nb</arg_value>" in text
    assert '<arg_value>{"k": [1, null]}</arg_value>' in text
    assert "<arg_value>false</arg_value>" in text


def test_the_formats_import_nothing_else_of_repro() -> None:
    """They sit below the engine and the checkers, beside repro/dsml (whose markers they may
    name: the prose cut knows DSML's opener too)."""
    for path in (REPO / "repro" / "toolformats").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("repro"):
                assert node.module.startswith(("repro.toolformats", "repro.dsml")), (
                    path.name,
                    node.module,
                )
