"""The smallest requests that show vLLM answering streamed and unstreamed differently.

Launches the vLLM profile's engine (the tiny model, as `repro run --backend vllm` does) and
sends each request below twice at temperature 0, streamed and `stream: false`, one at a time
with nothing else in flight, then prints both answers side by side as the client saw them
(through repro's own client: the same code the stream oracle uses) and whether they agree.

    python bench/vllm_stream_twins.py [--server-python PY] [--model-path DIR]
        [--set KEY=VALUE ...] [--max-tokens 8,12,16,64] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import orjson

from repro.checkers.consistency import compare_twins
from repro.harness import resolve
from repro.harness.launch.endpoint import engine
from repro.harness.load.client import ChatClient
from repro.harness.load.request_body import as_whole
from repro.harness.load.stream_progress import StreamProgress
from repro.harness.load.watchdog import running_watchdog
from repro.spec import RunSpec

TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


def request(max_tokens: int, tool_choice: Any) -> dict[str, Any]:
    return {
        "model": "tiny",
        "messages": [{"role": "user", "content": "Read src/app.py."}],
        "tools": [TOOL],
        "tool_choice": tool_choice,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": max_tokens,
        "logprobs": True,
        "top_logprobs": 2,
    }


def side(progress: StreamProgress) -> dict[str, Any]:
    choice = progress.served().choices[0]
    return {
        "content": choice.content,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in choice.calls],
        "finish_reason": choice.finish_reason,
        "completion_tokens": progress.usage.completion_tokens,
        "tokens": [t.get("token") for t in choice.logprobs],
    }


async def ask(url: str, body: dict[str, Any]) -> StreamProgress:
    async with running_watchdog() as watchdog:
        client = ChatClient(url, watchdog, 600, tls=ssl.create_default_context())
        progress = StreamProgress(scheduled_at_s=watchdog.clock.now())
        try:
            data = orjson.dumps(body)
            if body["stream"]:
                await client.stream_chat(data, progress, deadline_s=600)
            else:
                await client.complete_chat(data, progress, deadline_s=600)
        finally:
            await client.aclose()
    return progress


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    settings = dict(item.split("=", 1) for item in args.set)
    if args.model_path:
        settings["model_path"] = args.model_path
    spec = RunSpec.build(backend="vllm", server_python=args.server_python, settings=settings)
    resolved = resolve(spec)
    rows = []
    async with engine(resolved.spec, Path(args.out) / "logs", resolved) as endpoint:
        for max_tokens in args.max_tokens:
            for choice in ("required", {"type": "function", "function": {"name": "read_file"}}):
                body = request(max_tokens, choice)
                streamed = await ask(endpoint.base_url, body)
                whole = await ask(endpoint.base_url, as_whole(body))
                verdict = compare_twins(streamed.served(), whole.served(), 1.0)
                rows.append({
                    "max_tokens": max_tokens,
                    "tool_choice": choice if isinstance(choice, str) else "named read_file",
                    "verdict": str(verdict.kind),
                    "where": verdict.message,
                    "streamed": side(streamed),
                    "unstreamed": side(whole),
                })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python")
    parser.add_argument("--model-path")
    parser.add_argument("--set", action="append", default=[], help="profile setting KEY=VALUE")
    parser.add_argument("--max-tokens", default="8,12,16,64")
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="vllm-twins-"))
    args = parser.parse_args()
    args.max_tokens = [int(n) for n in args.max_tokens.split(",")]
    rows = anyio.run(main_async, args)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    disagree = sum(r["verdict"] == "disagree" for r in rows)
    print(f"\n{disagree} of {len(rows)} requests answered differently streamed and unstreamed",
          file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main()
