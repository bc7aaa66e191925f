"""Drive the embedded engine with agentic-coding sessions, without the harness.

Measures what repro.sim costs and what its fault model yields, independently of `repro run`:
starts single or pd (prefill + decode + repro's router) on loopback, runs N sessions with
ramp-up, and reports wall time, turns, prompt sizes and corrupted sessions. A turn is
"malformed" when its raw DSML does not equal the reference encoding of what the lenient
detector parsed from it (a healthy engine emits exactly the encoder's bytes), and
"semantic" when the scenario's oracle rejects a parsed call.

    python bench/sim_load.py --topology pd --sessions 80 -- --enable-hierarchical-cache --index-k-dtype bf16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from repro.checkers.verdict import ToolCall
from repro.dsml.encode import encode_completion
from repro.scenarios.agentic_coding import TOOLS, AgenticCoding
from repro.sim.detector import parse_completion


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Tally:
    turns: int = 0
    malformed_turns: int = 0
    semantic_turns: int = 0
    errors: int = 0
    max_prompt_tokens: int = 0
    corrupted_sessions: set[int] = field(default_factory=set)
    semantic_sessions: set[int] = field(default_factory=set)
    examples: list[str] = field(default_factory=list)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)


def launch(
    topology: str, extra: list[str], log_dir: str
) -> tuple[str, list[subprocess.Popen], list[str]]:
    py = sys.executable
    procs = []

    def start(name: str, argv: list[str]) -> None:
        log = open(os.path.join(log_dir, f"{name}.log"), "wb")  # noqa: SIM115
        procs.append(
            subprocess.Popen(
                [py, "-m", "repro.sim", *argv], stdout=log, stderr=log, start_new_session=True
            )
        )

    if topology == "single":
        port = free_port()
        start("single", ["serve", "--port", str(port), "--reasoning-parser", "deepseek-v3", *extra])
        return f"http://127.0.0.1:{port}", procs, [f"http://127.0.0.1:{port}"]
    pp, bp, dp, rp = free_port(), free_port(), free_port(), free_port()
    start(
        "prefill",
        [
            "serve",
            "--disaggregation-mode",
            "prefill",
            "--port",
            str(pp),
            "--disaggregation-bootstrap-port",
            str(bp),
            *extra,
        ],
    )
    start(
        "decode",
        [
            "serve",
            "--disaggregation-mode",
            "decode",
            "--port",
            str(dp),
            "--reasoning-parser",
            "deepseek-v3",
            *extra,
        ],
    )
    start(
        "router",
        [
            "router",
            "--pd-disaggregation",
            "--prefill",
            f"http://127.0.0.1:{pp}",
            str(bp),
            "--decode",
            f"http://127.0.0.1:{dp}",
            "--port",
            str(rp),
        ],
    )
    urls = [f"http://127.0.0.1:{p}" for p in (pp, dp, rp)]
    return f"http://127.0.0.1:{rp}", procs, urls


async def wait_healthy(url: str, deadline_s: float = 30.0) -> None:
    async with httpx.AsyncClient() as client:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                if (await client.get(url + "/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} not healthy")


async def one_turn(client: httpx.AsyncClient, url: str, messages: list) -> dict:
    body = orjson.dumps(
        {
            "model": "m",
            "messages": messages,
            "tools": TOOLS,
            "stream": True,
            "stream_options": {"include_usage": True},
            "chat_template_kwargs": {"thinking": True},
            "max_tokens": 2048,
        }
    )
    reasoning, content, usage = [], [], {}
    async with client.stream(
        "POST",
        url + "/v1/chat/completions",
        content=body,
        headers={"content-type": "application/json"},
    ) as response:
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {(await response.aread())[:200]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = orjson.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices", ()):
                delta = choice["delta"]
                if delta.get("reasoning_content"):
                    reasoning.append(delta["reasoning_content"])
                if delta.get("content"):
                    content.append(delta["content"])
    return {"reasoning": "".join(reasoning), "content": "".join(content), "usage": usage}


async def session(sid: int, args, url: str, client: httpx.AsyncClient, tally: Tally) -> None:
    scenario = AgenticCoding()
    s = scenario.session(sid, args.seed, args.context_max)
    messages = s.opening()
    names = {t["function"]["name"] for t in TOOLS}
    for _ in range(args.max_turns):
        try:
            turn = await one_turn(client, url, messages)
        except (httpx.HTTPError, RuntimeError) as exc:
            tally.errors += 1
            tally.examples.append(
                f"error after {tally.turns} turns: {exc!r} {traceback.format_exc()[-600:]}"
            )
            return
        tally.turns += 1
        prompt_tokens = turn["usage"].get("prompt_tokens", 0)
        tally.max_prompt_tokens = max(tally.max_prompt_tokens, prompt_tokens)
        raw = turn["content"]
        parsed = parse_completion(raw, names, strip_strings=False)
        calls = [ToolCall(c.name, c.arguments) for c in parsed.calls]
        expected = encode_completion(
            [(c.name, json.loads(c.arguments)) for c in parsed.calls],
            content=parsed.content,
            eos=False,
        )
        if expected != raw:
            tally.malformed_turns += 1
            tally.corrupted_sessions.add(sid)
            if len(tally.examples) < 3:
                tally.examples.append(raw[:400])
        if s.semantic_defects(calls):
            tally.semantic_turns += 1
            tally.semantic_sessions.add(sid)
        if not calls or s.finished(prompt_tokens):
            return
        ids = [f"call_{sid}_{tally.turns}_{i}" for i in range(len(calls))]
        messages.append(
            {
                "role": "assistant",
                "content": parsed.content or None,
                "reasoning_content": turn["reasoning"],
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for i, c in zip(ids, calls, strict=True)
                ],
            }
        )
        messages.extend(
            s.respond(calls, ids, prompt_tokens, turn["usage"].get("completion_tokens", 0))
        )


async def drive(args, url: str) -> Tally:
    tally = Tally()
    limits = httpx.Limits(
        max_connections=args.sessions + 8, max_keepalive_connections=args.sessions + 8
    )
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(300.0), limits=limits, trust_env=False
    ) as client:

        async def delayed(i: int) -> None:
            await asyncio.sleep(args.ramp_up * i / max(1, args.sessions))
            await session(i, args, url, client, tally)

        await asyncio.gather(*(delayed(i) for i in range(args.sessions)))
    return tally


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topology", choices=("single", "pd"), default="pd")
    parser.add_argument("--sessions", type=int, default=80)
    parser.add_argument("--context-max", type=int, default=80_000)
    parser.add_argument("--max-turns", type=int, default=100)
    parser.add_argument("--ramp-up", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-dir", default="/tmp/simruns/bench")
    parser.add_argument("--url", default=None)
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    os.makedirs(args.log_dir, exist_ok=True)
    procs: list[subprocess.Popen] = []
    url = args.url
    urls = [url]
    if url is None:
        url, procs, urls = launch(
            args.topology, [*args.extra, "--seed", str(args.seed)], args.log_dir
        )
    try:
        for each in urls:
            asyncio.run(wait_healthy(each))
        started = time.monotonic()
        tally = asyncio.run(drive(args, url))
        wall_s = time.monotonic() - started
        cpu_s = {
            str(p.args[3] if p.args[3] != "--disaggregation-mode" else p.args[4]): cpu_seconds(
                p.pid
            )
            for p in procs
        }
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
    load = os.getloadavg()[0]
    print(
        json.dumps(
            {
                "topology": args.topology,
                "extra": args.extra,
                "sessions": args.sessions,
                "context_max": args.context_max,
                "wall_s": round(wall_s, 1),
                "turns": tally.turns,
                "max_prompt_tokens": tally.max_prompt_tokens,
                "errors": tally.errors,
                "malformed_turns": tally.malformed_turns,
                "semantic_turns": tally.semantic_turns,
                "corrupted_sessions": len(tally.corrupted_sessions),
                "semantic_sessions": len(tally.semantic_sessions),
                "load_1m": load,
                "engine_cpu_s": cpu_s if procs else {},
            }
        )
    )
    for example in tally.examples[:8]:
        print("example:", example.replace("\n", "\\n")[:400])


if __name__ == "__main__":
    main()
