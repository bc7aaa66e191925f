"""Request shapes: `--mix` read into shares (every bad entry one sentence), each turn's shape
drawn from them by seed, and the request fields each shape sends."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from repro.harness.load.request_body import as_streamed, as_whole, chat_body, twin_of
from repro.scenarios.agentic_coding import TOOLS
from repro.shapes import AXES, FULL_MIX, STOP_STRINGS, Shape, parse_mix
from repro.spec import RunSpec

MESSAGES = [{"role": "user", "content": "fix it"}]


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        (["tool_choice"], "is not AXIS=VALUE[:SHARE]"),
        (["colour=red"], "'colour' is not a request axis"),
        (["tool_choice=sometimes"], "tool_choice has no value 'sometimes'"),
        (["tool_choice=auto:0.5"], "the shares of tool_choice add up to 0.5, not 1"),
        (["tool_choice=auto:x"], "the share of tool_choice=auto is not a number"),
        (["tool_choice=auto:0"], "must be above 0 and at most 1"),
        (["tool_choice=auto,required"], "give a share to every value but at most one"),
        (["tool_choice=auto:0.5,auto:0.5"], "tool_choice=auto is given twice"),
        (["stream=off", "stream=on"], "stream is mixed twice"),
    ],
)
def test_a_bad_mix_is_one_sentence(entries: list[str], said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("[", r"\[").replace("]", r"\]")):
        parse_mix(entries)


def test_the_value_without_a_share_takes_the_rest_and_full_is_every_axis() -> None:
    mix = parse_mix(["tool_choice=required:0.3,auto"])
    assert mix.axes == {"tool_choice": (("required", 0.3), ("auto", pytest.approx(0.7)))}
    assert parse_mix(["stream=off"]).axes == {"stream": (("off", 1.0),)}
    full = parse_mix(["full"])
    # Every axis but n: repro asks at temperature 0, where vLLM refuses n > 1.
    assert set(full.axes) == set(FULL_MIX) == set(AXES) - {"n"}
    assert all(abs(sum(s for _, s in shares) - 1) < 1e-9 for shares in full.axes.values())


def test_shapes_are_drawn_by_their_shares_the_same_way_every_time() -> None:
    mix = parse_mix(["tool_choice=required:0.3,auto:0.7", "stream=off:0.5,on"])
    shapes = [mix.draw(7, s, t, TOOLS) for s in range(200) for t in range(10)]
    assert shapes == [mix.draw(7, s, t, TOOLS) for s in range(200) for t in range(10)]
    share = Counter(s["tool_choice"] for s in shapes)["required"] / len(shapes)
    assert 0.27 < share < 0.33
    assert Counter(s["stream"] for s in shapes)["off"] / len(shapes) == pytest.approx(0.5, abs=0.03)
    # An axis added to the mix never reshuffles the others.
    wider = parse_mix(["tool_choice=required:0.3,auto:0.7", "stream=off:0.5,on", "n=2:0.5,1"])
    assert [s["tool_choice"] for s in shapes] == [
        wider.draw(7, s, t, TOOLS)["tool_choice"] for s in range(200) for t in range(10)
    ]


def test_a_named_choice_names_a_declared_tool_and_a_json_answer_calls_nothing() -> None:
    named = parse_mix(["tool_choice=named"]).draw(0, 1, 2, TOOLS)
    assert named.named_tool in {t["function"]["name"] for t in TOOLS}
    json_turn = parse_mix(["tool_choice=required", "response_format=json_schema"]).draw(
        0, 1, 2, TOOLS
    )
    assert json_turn["tool_choice"] == "none" and json_turn.label.startswith("tool_choice=none")


def test_without_a_mix_the_body_is_what_it_always_was() -> None:
    spec = RunSpec.build()
    assert chat_body(spec, "m", TOOLS, MESSAGES) == chat_body(spec, "m", TOOLS, MESSAGES, Shape())
    body = chat_body(spec, "m", TOOLS, MESSAGES)
    assert body["stream"] is True and body["chat_template_kwargs"] == {"thinking": True}
    assert "tool_choice" not in body and "n" not in body and "response_format" not in body


def test_each_shape_sends_its_fields() -> None:
    spec = RunSpec.build(max_output_tokens=512)
    shape = Shape(
        {"tool_choice": "named", "max_tokens": "tight", "reasoning": "budget", "stream": "off",
         "n": "2", "logprobs": "on", "stop": "strings", "parallel_tool_calls": "false",
         "special_tokens": "kept"},
        "read_file",
    )  # fmt: skip
    body = chat_body(spec, "m", TOOLS, MESSAGES, shape)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "read_file"}}
    assert body["max_tokens"] == 16 and body["n"] == 2 and body["stop"] == list(STOP_STRINGS)
    assert body["stream"] is False and "stream_options" not in body
    assert body["chat_template_kwargs"] == {"thinking": True, "enable_thinking": True}
    assert body["thinking_token_budget"] == 32 and body["parallel_tool_calls"] is False
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert body["skip_special_tokens"] is False
    assert "skip_special_tokens" not in chat_body(spec, "m", TOOLS, MESSAGES, Shape())
    schema = chat_body(spec, "m", TOOLS, MESSAGES, Shape({"response_format": "json_schema"}))
    assert schema["response_format"]["json_schema"]["schema"]["required"] == ["summary", "done"]
    off = chat_body(spec, "m", TOOLS, MESSAGES, Shape({"reasoning": "off"}))
    assert off["chat_template_kwargs"] == {"thinking": False, "enable_thinking": False}


def test_a_twin_is_the_same_request_the_other_way() -> None:
    body = chat_body(RunSpec.build(), "m", TOOLS, MESSAGES)
    whole = twin_of(body)
    assert whole["stream"] is False and "stream_options" not in whole
    assert {k: v for k, v in whole.items() if k != "stream"} == {
        k: v for k, v in body.items() if k not in ("stream", "stream_options")
    }
    assert orjson.dumps(twin_of(whole)) == orjson.dumps(body)
    assert as_streamed(as_whole(body)) == body


def test_the_oracles_that_compare_answers_ask_for_logprobs_and_refuse_to_mix_them() -> None:
    spec = RunSpec.build(oracle="none", stream_oracle=True, top_logprobs=3)
    assert chat_body(spec, "m", TOOLS, MESSAGES)["top_logprobs"] == 3
    assert "logprobs" not in spec.request_mix().without("x").axes
    assert (
        "logprobs"
        not in RunSpec.build(oracle="none", stream_oracle=True, mix=("full",)).request_mix().axes
    )
    assert "logprobs" in RunSpec.build(mix=("full",)).request_mix().axes


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"mix": ["tool_choice=sometimes"]}, "Invalid --mix: tool_choice has no value 'sometimes'"),
        ({"oracle": "validity,divergence"}, "--oracle validity,divergence: give one of"),
        ({"oracle": "stream,stream"}, "give one of validity, divergence, both, none"),
        ({"stream_sample": "0.5"}, "--stream-sample shapes the stream oracle"),
        (
            {"oracle": "stream", "stream_sample": "2"},
            "Invalid --stream-sample: must be all or a share",
        ),
        ({"oracle": "divergence", "mix": ["logprobs=on"]}, "--mix logprobs=... varies what"),
        ({"reference_knob": ["index_k_gate=fixed"]}, "--reference-knob sets the engines"),
        ({"oracle": "divergence", "replay_concurrency": "0"}, "Invalid --replay-concurrency"),
        (
            {"oracle": "validity", "replay_concurrency": "4"},
            "--replay-concurrency shapes the divergence",
        ),
    ],
)
def test_bad_shape_and_oracle_options_are_one_sentence(options: dict, said: str) -> None:
    from repro.cli_options import build_spec
    from repro.errors import UsageError

    with pytest.raises(UsageError) as refused:
        build_spec(**options)
    assert said in str(refused.value) and str(refused.value).endswith(".")


def test_the_oracle_option_takes_stream_alone_or_beside_another() -> None:
    from repro.cli_options import build_spec

    alone = build_spec(oracle="stream")
    assert (alone.oracle, alone.stream_oracle, alone.judges_validity) == ("none", True, False)
    beside = build_spec(oracle="divergence,stream", mix=["full"])
    assert beside.judges_divergence and beside.stream_oracle and beside.compares_answers
    assert beside.oracle_label == "divergence+stream" and alone.oracle_label == "stream"
