"""A special token in the answer, streamed against unstreamed, on vLLM CPU (the tiny model).

A full request mix (bench/HISTORY.md, 2026-12-05) once showed the streamed reasoning holding
`<tool_response>` (a special token of the tiny model's vocabulary, id 5) where the same
request unstreamed did not. A random model writes that token rarely; `logit_bias` makes it
write it at will. Each request below goes streamed and unstreamed, one after the other with
nothing else in flight, at temperature 0; both answers are printed side by side with the
token ids' text as the logprobs name them.

    flock /tmp/repro-bench.lock python bench/vllm_special_twins.py
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_stream_twins import TOOL, ask, side

from repro.checkers.consistency import compare_twins
from repro.harness import resolve
from repro.harness.launch.endpoint import engine
from repro.harness.load.request_body import as_whole
from repro.spec import RunSpec

TOOL_RESPONSE = 5  # `<tool_response>` in the tiny model's tokenizer (special: true)


def request(thinking: bool, stop: bool, tools: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "tiny",
        "messages": [{"role": "user", "content": "Read src/app.py."}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "max_tokens": 6,
        "logprobs": True,
        "top_logprobs": 2,
        # Every other token the special one: a bias on it alone would write only it.
        "logit_bias": {str(TOOL_RESPONSE): 8},
        "chat_template_kwargs": {"enable_thinking": thinking},
    }
    if tools:
        body |= {"tools": [TOOL], "tool_choice": "auto"}
    if stop:
        body["stop"] = ["\n\n", "</tool_call>"]
    return body


async def main_async(out: Path) -> list[dict[str, Any]]:
    spec = RunSpec.build(backend="vllm")  # the profile's default reasoning parser: qwen3
    resolved = resolve(spec)
    rows = []
    async with engine(resolved.spec, out / "logs", resolved) as endpoint:
        for thinking, stop, tools in itertools.product((False, True), repeat=3):
            body = request(thinking, stop, tools)
            streamed = await ask(endpoint.base_url, body)
            whole = await ask(endpoint.base_url, as_whole(body))
            verdict = compare_twins(streamed.served(), whole.served(), 1.0)
            streamed_side, whole_side = side(streamed), side(whole)
            for name, progress in (("streamed", streamed), ("unstreamed", whole)):
                choice = progress.served().choices[0]
                target = streamed_side if name == "streamed" else whole_side
                target["reasoning"] = choice.reasoning
            rows.append({
                "thinking": thinking, "stop": stop, "tools": tools,
                "verdict": str(verdict.kind), "where": verdict.message,
                "streamed": streamed_side, "unstreamed": whole_side,
            })  # fmt: skip
    return rows


def main() -> None:
    out = Path(tempfile.mkdtemp(prefix="vllm-special-"))
    rows = anyio.run(main_async, out)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    disagree = sum(r["verdict"] == "disagree" for r in rows)
    print(f"\n{disagree} of {len(rows)} requests answered differently", file=sys.stderr)


if __name__ == "__main__":
    main()
