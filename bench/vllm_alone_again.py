"""A run's corrupt divergences, asked again alone on a fresh engine: which answer repeats?

The divergence oracle compares a turn's loaded answer with a reference; a turn whose
reference was given with others in flight, or that another oracle flagged, is decided by a
reference asked alone at the very end of the replay. This takes a finished run folder
(`--oracle divergence`), rebuilds the requests of its `corrupt` turns exactly as the load
sent them (the replay's own rebuild, checked by sha256), launches the run's engine afresh
(its spec.json), and asks each request alone, `--times` times in the load's order, then
prints where each answer parts from the loaded tokens and from the end-of-replay
reference's choice at the token where those two parted.

    flock /tmp/repro-bench.lock python bench/vllm_alone_again.py RUN_DIR [--times 2] [--model tiny]
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
from vllm_batch_probe import tokens
from vllm_stream_twins import ask

from repro.harness import resolve
from repro.harness.launch.endpoint import engine
from repro.harness.lifecycle.replay import Replay
from repro.harness.load.loaded_log import read_loaded
from repro.scenarios import get_scenario
from repro.spec import RunSpec


def corrupt_turns(run: Path) -> dict[tuple[int, int], dict[str, Any]]:
    rows = (json.loads(line) for line in (run / "divergence.jsonl").open())
    return {(r["session_id"], r["turn"]): r for r in rows if r["kind"] == "corrupt"}


def first_part(loaded: list[str], answer: list[str]) -> int | None:
    for i, (a, b) in enumerate(zip(loaded, answer, strict=False)):
        if a != b:
            return i
    return None if len(loaded) == len(answer) else min(len(loaded), len(answer))


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    run = Path(args.run)
    spec = RunSpec.model_validate(json.loads((run / "spec.json").read_text())["spec"])
    resolved = resolve(spec)
    wanted = corrupt_turns(run)
    replay = Replay(spec, get_scenario(spec.scenario), args.model, run, lambda: [])
    turns = [t for t in read_loaded(run) if (t.session_id, t.turn) in wanted]
    rows = []
    async with engine(resolved.spec, Path(args.out) / "logs", resolved) as endpoint:
        for loaded in turns:
            request, _, streamed = replay.rebuild(loaded)
            verdict = wanted[(loaded.session_id, loaded.turn)]
            mine = [t.token for t in loaded.tokens]
            for attempt in range(args.times):
                answer = [t for t, _, _ in tokens(await ask(endpoint.base_url, request))]
                k = verdict["token_offset"]
                rows.append({
                    "turn": [loaded.session_id, loaded.turn], "attempt": attempt,
                    "streamed": streamed,
                    "parts_from_loaded_at": first_part(mine, answer),
                    "at_the_verdict's_token": [
                        answer[k] if k < len(answer) else None,
                        f"loaded {verdict.get('loaded_token')!r}",
                        f"end-of-replay reference {verdict.get('reference_token')!r}",
                    ],
                })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a run folder of `repro run --oracle divergence`")
    parser.add_argument("--times", type=int, default=2)
    parser.add_argument("--model", default="tiny", help="the model name the run sent")
    parser.add_argument("--out", default=tempfile.mkdtemp(prefix="vllm-alone-"))
    args = parser.parse_args()
    rows = anyio.run(main_async, args)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    same = sum(r["parts_from_loaded_at"] is None for r in rows)
    print(json.dumps({"answers": len(rows), "the loaded tokens again": same}))


if __name__ == "__main__":
    main()
