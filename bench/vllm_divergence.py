"""Issue 13's false-positive runs: the real vLLM server on CPU, judged by the divergence oracle.

Each row is one exact `repro run --backend vllm` command with the profile's defaults
(scripted history to about 41k tokens, 64-token answers, every turn replayed alone on the
same engine after the load); its figures come from the run's summary.json, with the 1-minute
load average beside it. Then every `numerical` divergence, with its margins.

    python bench/vllm_divergence.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from divergence_oracle import row, run

VLLM = ["run", "--backend", "vllm", "--replay-sample", "all"]
RUNS: dict[str, list[str]] = {
    "vllm-32": [*VLLM, "--sessions", "32"],
    "vllm-64": [*VLLM, "--sessions", "64"],
    "vllm-128-at-64": [*VLLM, "--sessions", "128", "--concurrency", "64", "--seed", "1"],
    "vllm-64-seed-2": [*VLLM, "--sessions", "64", "--seed", "2"],
}


def numerical_lines(name: str, result: dict) -> list[str]:
    listed = (result.get("divergence") or {}).get("numerical") or []
    return [
        f"| {name} | {n['session_id']} | {n['turn']} | {n['token_offset']} | "
        f"{n['gap_nats']:.5f} | {n['reference_margin']:.5f} |"
        for n in listed
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument(
        "--out", type=Path, default=Path("/tmp/repro-vllm-divergence") / time.strftime("%H%M%S")
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("| command | exit | sessions corrupted [95% CI] | turns corrupted | verdicts "
          "| replay | load wall | max prompt | load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    numerical: list[str] = []
    for name, run_args in RUNS.items():
        if args.only and name not in args.only:
            continue
        result = run(name, run_args, args.out)
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
        print(row(result), flush=True)
        numerical += numerical_lines(name, result)
    print("\nNumerical divergences (near-ties, not counted): the reference's logprob of the "
          "loaded token below its own choice (gap), and its top-2 margin there.\n")  # fmt: skip
    print("| run | session | turn | token | gap (nats) | reference top-2 margin (nats) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(numerical) or "| (none) | | | | | |")


if __name__ == "__main__":
    main()
