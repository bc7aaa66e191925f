"""Does a forced request answer differently when its own twin is in flight? (issue 43)

In the full request mix on vLLM CPU, the divergence oracle counted `corrupt` at forced
positions (`<` then `tool` against `t`, `_c` against `_ca`) almost only in turns whose
stream-oracle twin (the same request, the other way) was sent at the same moment: 13 of 92
forced turns with a twin, 0 of 331 without. This sends the scenario's own requests (the
agentic-coding sessions' first turns, `tool_choice` required, as `repro run` builds them) to
the vLLM profile's engine, nothing else in flight:

- `alone`: the request by itself, twice (must be the same both times);
- `twin`: the request and its streamed twin at the same moment (what the stream oracle does);
- `copy`: the request and an identical unstreamed copy at the same moment;
- `other`: the request and another session's forced request at the same moment;
- `crowd`: the request and every other session's forced request at the same moment (a batch
  as wide as the load's);

and prints, per request and case, where the answer parts from `alone` (token, both choices
and logprobs), then a count per case.

    flock /tmp/repro-bench.lock python bench/vllm_twin_probe.py [--sessions 24]
        [--rounds 2] [--cases twin,copy,other,crowd] [--tool-choice required|named]
        [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_batch_probe import parted, tokens
from vllm_stream_twins import ask

from repro.harness import resolve
from repro.harness.launch.endpoint import engine
from repro.harness.load.request_body import as_streamed, chat_body
from repro.scenarios import get_scenario
from repro.shapes.shape import Shape
from repro.spec import RunSpec

CASES = ("twin", "copy", "other", "crowd")


def first_turns(spec: RunSpec, sessions: int, tool_choice: str) -> list[dict[str, Any]]:
    """Each session's first request as the load sends it, with logprobs for the comparison."""
    scenario = get_scenario(spec.scenario)
    bodies = []
    for session_id in range(sessions):
        history = scenario.scripted(session_id, spec.seed, spec.context_max_tokens, spec.thinking)
        tools = history.session.tools
        named = tools[session_id % len(tools)]["function"]["name"]
        shape = Shape({"tool_choice": tool_choice, "stream": "off"}, named_tool=named)
        body = chat_body(spec, "tiny", tools, history.messages, shape)
        bodies.append(body | {"logprobs": True, "top_logprobs": 5, "max_tokens": 24})
    return bodies


async def together(url: str, *bodies: dict[str, Any]) -> list[Any]:
    """The answers to `bodies`, all sent at the same moment."""
    answers: list[Any] = [None] * len(bodies)

    async def one(i: int) -> None:
        answers[i] = tokens(await ask(url, bodies[i]))

    async with anyio.create_task_group() as group:
        for i in range(len(bodies)):
            group.start_soon(one, i)
    return answers


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings = dict(item.split("=", 1) for item in args.set)
    spec = RunSpec.build(backend="vllm", settings=settings)
    resolved = resolve(spec)
    bodies = first_turns(resolved.spec, args.sessions, args.tool_choice)
    rows: list[dict[str, Any]] = []
    async with engine(resolved.spec, Path(args.out) / "logs", resolved) as endpoint:
        url = endpoint.base_url
        for i, body in enumerate(bodies):
            alone = tokens(await ask(url, body))
            again = tokens(await ask(url, body))
            rows.append({"session": i, "case": "alone", "parted": parted(alone, again)})
            besides = {
                "twin": [as_streamed(body)],
                "copy": [body],
                "other": [bodies[(i + 1) % len(bodies)]],
                "crowd": bodies[:i] + bodies[i + 1 :],
            }
            for _ in range(args.rounds):
                for case in args.cases.split(","):
                    got, *_ = await together(url, body, *besides[case])
                    rows.append({"session": i, "case": case, "parted": parted(alone, got)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", default=",".join(CASES[:3]), help="of " + ",".join(CASES))
    parser.add_argument("--tool-choice", default="required", choices=["required", "named"])
    parser.add_argument("--set", action="append", default=[], help="profile setting KEY=VALUE")
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="vllm-twin-"))
    args = parser.parse_args()
    rows = anyio.run(main_async, args)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    parted_by = Counter(r["case"] for r in rows if r["parted"])
    asked = Counter(r["case"] for r in rows)
    print(json.dumps({case: f"{parted_by[case]}/{asked[case]} parted" for case in asked}))


if __name__ == "__main__":
    main()
