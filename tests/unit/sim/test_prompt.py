"""Prompt rendering and measurement: deterministic, prefix-stable, about 4 bytes a token."""

from __future__ import annotations

from repro.sim.prompt import render_parts, render_prompt

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def _conversation(turns: int) -> list[dict]:
    messages: list[dict] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "The test fails."},
    ]
    for i in range(turns):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        }
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "look",
                "tool_calls": [call],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x = 1\n" * 200})
    return messages


def test_prompt_grows_with_history_and_keeps_its_prefix_keys() -> None:
    short = render_prompt(_conversation(2), TOOLS, thinking=True)
    long = render_prompt(_conversation(3), TOOLS, thinking=True)
    assert long.prompt_tokens > short.prompt_tokens + 300  # a 1.2 KB tool result is ~300 tokens
    assert long.boundary_keys[: len(short.boundary_keys)] == short.boundary_keys
    assert render_prompt(_conversation(3), TOOLS, thinking=True) == long


def test_layout_follows_the_encoder() -> None:
    parts = render_parts(_conversation(1), TOOLS, thinking=True)
    assert parts[0].startswith("<｜begin▁of▁sentence｜>You fix bugs.\n\n## Tools")
    assert parts[1] == "<｜User｜>The test fails.<｜Assistant｜><think>"
    assert parts[2].startswith("look</think>\n\n<｜DSML｜function_calls>") and parts[2].endswith(
        "<｜end▁of▁sentence｜>"
    )
    assert parts[3].startswith("\n\n<function_results>\n<result>x = 1") and parts[3].endswith(
        "</function_results>\n\n<think>"
    )
    assert render_parts(_conversation(0), TOOLS, thinking=False)[1].endswith(
        "<｜Assistant｜></think>"
    )
