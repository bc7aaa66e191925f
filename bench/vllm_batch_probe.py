"""Does vLLM on CPU answer a request the same alone and in a batch? The smallest test.

The divergence oracle compares a turn answered under load with the same request answered
alone, and counts a token the alone answer scored far below its own choice. That is sound
only where the engine is batch-invariant at the oracle's margin. This launches the vLLM
profile's engine (the tiny model, as `repro run --backend vllm` does) and sends one request
at temperature 0 with logprobs, first alone (three times: must be identical), then at the
same moment as --others other requests (plain ones, or forced ones: each a different
tool_choice), three rounds each, and prints each answer's first tokens with their logprobs
beside the alone answer's, and where they part by how many nats.

    flock /tmp/repro-bench.lock python bench/vllm_batch_probe.py [--tool-choice required]
        [--others 16] [--max-tokens 16] [--lines 0] [--set KEY=VALUE ...]

`--lines 2000` puts about 30k tokens before the question: prefilled in chunks whose
boundaries depend on what else is in flight.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_stream_twins import TOOL, ask

from repro.harness import resolve
from repro.harness.launch.endpoint import engine
from repro.harness.load.request_body import as_streamed
from repro.harness.load.stream_progress import StreamProgress
from repro.spec import RunSpec

SECOND_TOOL = {
    "type": "function",
    "function": {
        "name": "search_code",
        "description": "Search the code.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def body(text: str, tool_choice: Any, max_tokens: int) -> dict[str, Any]:
    return {
        "model": "tiny",
        "messages": [{"role": "user", "content": text}],
        "tools": [TOOL, SECOND_TOOL],
        "tool_choice": tool_choice,
        "stream": False,
        "temperature": 0,
        "max_tokens": max_tokens,
        "logprobs": True,
        "top_logprobs": 5,
    }


def tokens(progress: StreamProgress) -> list[tuple[str, float, list[tuple[str, float]]]]:
    items = progress.served().choices[0].logprobs
    return [
        (t["token"], t["logprob"], [(a["token"], a["logprob"]) for a in t.get("top_logprobs", [])])
        for t in items
    ]


def parted(alone: list, other: list) -> dict[str, Any] | None:
    """Where `other` parts from `alone`: the token, both sides' choices and logprobs."""
    for i, (a, b) in enumerate(zip(alone, other, strict=False)):
        if a[0] != b[0] or abs(a[1] - b[1]) > 1e-6:
            of_b = dict(a[2]).get(b[0])
            return {
                "token": i,
                "alone": [a[0], round(a[1], 4)],
                "batched": [b[0], round(b[1], 4)],
                "alone_scored_batched_choice": None if of_b is None else round(of_b, 4),
                "gap_nats": None if of_b is None else round(a[1] - of_b, 3),
            }
    return None if len(alone) == len(other) else {"token": min(len(alone), len(other))}


async def batched(url: str, probe: dict, others: list[dict]) -> StreamProgress:
    results: dict[int, StreamProgress] = {}

    async def one(i: int, b: dict) -> None:
        results[i] = await ask(url, b)

    async with anyio.create_task_group() as group:
        group.start_soon(one, 0, probe)
        for i, b in enumerate(others, 1):
            group.start_soon(one, i, b)
    return results[0]


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings = dict(item.split("=", 1) for item in args.set)
    spec = RunSpec.build(backend="vllm", settings=settings)
    resolved = resolve(spec)
    choice: Any = args.tool_choice
    if choice == "named":
        choice = {"type": "function", "function": {"name": "read_file"}}
    # A long prompt is prefilled in chunks, whose boundaries depend on what else is running.
    filler = " ".join(f"line {i}: value_{i % 97} = compute(x{i % 13})" for i in range(args.lines))
    probe = body(f"{filler}\nRead src/app.py and tell me what it does.", choice, args.max_tokens)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    plain = [
        body(f"Summarise {' '.join(words[i % 10 :] + words[: i % 10]) * (1 + i % 4)}", "auto", 48)
        for i in range(args.others)
    ]
    forced = [
        body(f"Find {words[i % 10]} in the code.", "required" if i % 2 else "none", 48)
        for i in range(args.others)
    ]
    rows = []
    async with engine(resolved.spec, Path(args.out) / "logs", resolved) as endpoint:
        url = endpoint.base_url
        alone = tokens(await ask(url, probe))
        for run in range(2):
            again = tokens(await ask(url, probe))
            rows.append({"with": "nothing", "round": run, "parted": parted(alone, again)})
        # The stream oracle's twin: the same request, streamed, sent at the same moment.
        same = [as_streamed(probe)] * min(args.others, 1) + [probe] * max(0, args.copies - 1)
        groups = [("plain requests", plain), ("forced and none", forced)]
        if args.copies:
            groups.append(("copies of itself (one streamed)", same))
        for name, others in groups:
            for run in range(3):
                got = tokens(await batched(url, probe, others))
                rows.append({"with": f"{len(others)} {name}", "round": run,
                             "parted": parted(alone, got)})  # fmt: skip
        rows.append({"alone_first_tokens": [[t, round(lp, 3)] for t, lp, _ in alone[:8]]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool-choice", default="required", choices=["auto", "required", "named"])
    parser.add_argument("--others", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--lines", type=int, default=0, help="filler lines before the question")
    parser.add_argument("--copies", type=int, default=0, help="also beside N copies of itself")
    parser.add_argument("--set", action="append", default=[], help="profile setting KEY=VALUE")
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="vllm-batch-"))
    args = parser.parse_args()
    for row in anyio.run(main_async, args):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
