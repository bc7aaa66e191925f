"""User-space instructions per streamed token: the floor, repro's ChatClient alone and `repro
run`, each counted under valgrind's callgrind against the paced stream server.

CPU-seconds on this machine's VM swing by up to 2x between identical runs (bench/RESULTS.md,
peer_cost), so a difference of 20% between two clients needs many rounds to show. Instructions
do not swing: each client runs twice, with streams of `--tokens` and of three times that, and
the difference of the two counts over the difference of the tokens the server sent is what one
more token costs in the client's own process (start-up, imports and per-turn work cancel; the
kernel's share of a read is not counted). Paced slowly enough that a client under valgrind
still reads every token alone, as a paced stream arrives. A client's per-second costs (timers,
the loop probe) would count too: `--pace-ms` at three times the default shows whether they do.

    python bench/client_instructions.py [--clients floor,chatclient,repro] [--streams 16]
        [--tokens 64] [--pace-ms 40]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.common import REPO, control, stream_server


def argv_of(client: str, url: str, streams: int, workdir: Path, run: int) -> list[str]:
    """The client's command, as bench/peer_cost.py runs it."""
    if client == "floor":
        return [sys.executable, str(REPO / "bench" / "peers" / "floor_client.py"), "--url", url,
                "--streams", str(streams), "--concurrency", str(streams)]  # fmt: skip
    if client == "chatclient":
        return [sys.executable, str(REPO / "bench" / "peers" / "chatclient_only.py"), "--url",
                url, "--streams", str(streams), "--concurrency", str(streams)]  # fmt: skip
    return [sys.executable, "-m", "repro", "run", "--url", url, "--model", "bench",
            "--sessions", str(streams), "--concurrency", str(streams), "--ramp-up", "0",
            "--out", str(workdir / f"run-{run}")]  # fmt: skip


def counted(argv: list[str], url: str, tokens: int, pace_ms: float) -> tuple[int, int]:
    """(instructions the client executed, tokens the server sent it) for one run."""
    control(url, "/bench/config", {"tokens": tokens, "pace_ms": pace_ms})
    # One BLAS thread: numpy's idle pool threads would add their spinning to the count.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          capture_output=True, text=True, env=env, cwd=REPO)  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"{argv[1]} failed under valgrind (exit {done.returncode}): {done.stderr[-800:]}")
    return int(found.group(1)), control(url, "/bench/stats")["tokens"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="floor,chatclient,repro")
    parser.add_argument("--streams", type=int, default=16, help="all at once")
    parser.add_argument("--tokens", type=int, default=64, help="the short length; long is 3x")
    parser.add_argument("--pace-ms", type=float, default=40.0)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("this bench needs valgrind (apt install valgrind)")
    with tempfile.TemporaryDirectory(prefix="client-instr-") as tmp, stream_server() as (url, _):
        for client in args.clients.split(","):
            runs = []
            for i, tokens in enumerate((args.tokens, 3 * args.tokens)):
                argv = argv_of(client, url, args.streams, Path(tmp), i)
                runs.append(counted(argv, url, tokens, args.pace_ms))
            (few, sent_few), (more, sent_more) = runs
            per_token = (more - few) / (sent_more - sent_few)
            print(f"{client}: {per_token:,.0f} instructions per token "
                  f"({args.streams} streams, {args.tokens} vs {3 * args.tokens} tokens, "
                  f"paced {args.pace_ms:g} ms)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
