"""Issue 13's false-positive runs: the real vLLM server on CPU, judged by the divergence oracle.

Each row is one exact `repro run --backend vllm` command with the profile's defaults
(scripted history to about 41k tokens, 64-token answers, every turn replayed alone on the
same engine after the load); its figures come from the run's summary.json, with the 1-minute
load average beside it. Then every `numerical` divergence, with its margins.

    python bench/vllm_divergence.py [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from divergence_oracle import run_rows

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
    numerical: list[str] = []
    for name, result in run_rows(RUNS, Path("/tmp/repro-vllm-divergence")):
        numerical += numerical_lines(name, result)
    print("\nNumerical divergences (near-ties, not counted): the reference's logprob of the "
          "loaded token below its own choice (gap), and its top-2 margin there.\n")  # fmt: skip
    print("| run | session | turn | token | gap (nats) | reference top-2 margin (nats) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(numerical) or "| (none) | | | | | |")


if __name__ == "__main__":
    main()
