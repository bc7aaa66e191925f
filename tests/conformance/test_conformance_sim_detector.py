"""The embedded engine's tool parser returns what SGLang's own returns for corrupted output.

The index-K race splices another request's tokens into an answer (repro.sim.faults.splice);
with `tool_parser=on` the engine's SGLang-like detector turns that into what the client sees.
Here SGLang 0.5.23's detector reads the same spliced answers, streamed in the same chunks, and
both must return the same content and the same calls: the parser mode's defects (dropped
calls, markup in content, a final answer cut short) are SGLang's, not the model's.
"""

from __future__ import annotations

import json

from repro.checkers.verdict import ToolCall
from repro.dsml.encode import encode_completion
from repro.scenarios import get_scenario, script_for
from repro.sim.detector import DsmlDetector, parse_completion
from repro.sim.faults import splice
from repro.sim.tokens import split_tokens

SCENARIO = get_scenario("agentic-coding")
TOOLS = SCENARIO.tools()
STREAM_INTERVAL = 8  # tokens per chunk, the engine's default


def planned_answers(session_id: int) -> list[str]:
    """The raw text (after the reasoning) of every turn of one scripted session."""
    session = SCENARIO.session(session_id, 0, 40_000)
    script = script_for(TOOLS)
    messages, answers = session.opening(), []
    for turn in range(60):
        plan = script(messages, TOOLS)
        calls = [(c.name, c.arguments) for c in plan.calls]
        answers.append(encode_completion(calls, content=plan.content, eos=False))
        ids = [f"c{turn}_{i}" for i in range(len(calls))]
        messages.append({"role": "assistant", "content": plan.content,
                         "tool_calls": [{"id": i, "type": "function", "function": {
                             "name": n, "arguments": json.dumps(a)}}
                             for i, (n, a) in zip(ids, calls, strict=True)]})  # fmt: skip
        if not calls:
            return answers
        as_calls = [ToolCall(n, json.dumps(a)) for n, a in calls]
        messages += session.respond(as_calls, ids, 2_000 * (turn + 1), 100)
    return answers


def spliced_cases() -> list[list[str]]:
    """Answers with a donor's tokens spliced in as the race does, cut in the engine's chunks."""
    mine, donors = planned_answers(3), planned_answers(4)
    cases = []
    for i, answer in enumerate(mine):
        tokens = split_tokens(answer)
        for key in range(i * 7919, i * 7919 + 16):
            donor = split_tokens(donors[key % len(donors)])
            out = "".join(splice(tokens, donor, key))
            chunks = split_tokens(out)
            cases.append(
                [
                    "".join(chunks[k : k + STREAM_INTERVAL])
                    for k in range(0, len(chunks), STREAM_INTERVAL)
                ]
            )
    return cases


def simulated(chunks: list[str]) -> dict:
    detector = DsmlDetector()
    parsed = [detector.feed(c) for c in chunks] + [detector.finish()]
    calls = [[c.name, c.arguments] for p in parsed for c in p.calls]
    return {"normal_text": "".join(p.content for p in parsed), "calls": calls}


def test_sglang_and_the_engine_parse_spliced_answers_alike(sglang) -> None:
    cases = spliced_cases()
    final = [c for c in cases if "".join(c).startswith("The bug was")]
    assert len(cases) > 200 and len(final) >= 12  # tool-call turns and final answers
    theirs = sglang.ask("stream", [{"chunks": c, "tools": TOOLS} for c in cases])
    for chunks, their in zip(cases, theirs, strict=True):
        ours = simulated(chunks)
        assert ours["normal_text"] == their["normal_text"], "".join(chunks)
        assert [n for n, _ in ours["calls"]] == [n for n, _ in their["calls"]], "".join(chunks)
        for (_, mine), (_, other) in zip(ours["calls"], their["calls"], strict=True):
            assert json.loads(mine) == json.loads(other), "".join(chunks)
    # Some final answers lose their tail to the detector, as in the parser mode's runs.
    planned = planned_answers(3)[-1]
    assert any(len(simulated(c)["normal_text"]) < len(planned) for c in final)


def test_sglang_and_the_engine_read_whole_spliced_answers_alike(sglang) -> None:
    """The one-shot path (a non-streamed response): SGLang's detect_and_parse."""
    texts = ["".join(c) for c in spliced_cases()]
    names = [t["function"]["name"] for t in TOOLS]
    theirs = sglang.ask("detect", [{"text": t, "tools": TOOLS} for t in texts])
    for text, their in zip(texts, theirs, strict=True):
        ours = parse_completion(text, names)
        assert ours.content == their["normal_text"], text
        assert [[c.name, c.arguments] for c in ours.calls] == their["calls"], text
