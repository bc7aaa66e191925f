"""User-space instructions per streamed token: the floor, repro's ChatClient alone and `repro
run`, each counted under valgrind's callgrind against the paced stream server.

CPU-seconds on this machine's VM swing by up to 2x between identical runs (bench/RESULTS.md,
peer_cost), so a difference of 20% between two clients needs many rounds to show. Instructions
swing far less: each client runs twice, with streams of `--tokens` and of three times that, and
the difference of the two counts over the difference of the tokens the server sent is what one
more token costs in the client's own process (start-up, imports and per-turn work cancel; the
kernel's share of a read is not counted). They do not cancel exactly: glibc's allocator and
dictionary lookups in the start-up move a client's figure by a few hundred instructions per
token between runs at the default lengths, less at `--tokens 320`; compare totals over repeated
runs, and read the per-function rows for work done per token. Paced slowly enough that a
client under valgrind still reads every token alone, as a paced stream arrives. A client's
per-second costs (timers, the loop probe) would count too: `--pace-ms` at three times the
default shows whether they do.

`--by-function N` also splits each client's count per token by the C function that executed
it (callgrind_annotate, exclusive counts; Python code shows as the interpreter's loop), and
prints the N functions where the last two clients named differ most: where one client's extra
instructions per token go.

    python bench/client_instructions.py [--clients floor,chatclient,repro] [--streams 16]
        [--tokens 64] [--pace-ms 40] [--by-function 15]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
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


def counted(
    argv: list[str], url: str, tokens: int, pace_ms: float, out: str = "/dev/null"
) -> tuple[int, int]:
    """(instructions the client executed, tokens the server sent it) for one run; callgrind's
    profile goes to `out`."""
    control(url, "/bench/config", {"tokens": tokens, "pace_ms": pace_ms})
    # One BLAS thread: numpy's idle pool threads would add their spinning to the count.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                          capture_output=True, text=True, env=env, cwd=REPO)  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"{argv[1]} failed under valgrind (exit {done.returncode}): {done.stderr[-800:]}")
    return int(found.group(1)), control(url, "/bench/stats")["tokens"]


# A line of callgrind_annotate's function table: "  1,234 ( 0.5%)  file.c:function'2 [/lib.so]";
# the library only where it changes, C++ names with spaces and brackets of their own.
_ANNOTATED = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.+?)(?: \[/[^\]]*\])?$")
_FILE = re.compile(r"^(?:\?\?\?|\S*?\.\w+):")  # "???:" or "path/file.c:" before the name
_RECURSION = re.compile(r"'\d+$")  # callgrind's level of a recursive call


def by_function(profile: str) -> Counter[str]:
    """Instructions per function, its recursion levels summed."""
    # --auto=no: no annotated source, whose lines look like the table's.
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100",
                                "--auto=no", profile],
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
    return parse_annotated(annotated)


def parse_annotated(annotated: str) -> Counter[str]:
    """`by_function` from callgrind_annotate's text. Named by the function alone: the same code
    is put down to different libraries from one run to the next (OpenSSL's, statically in
    pyarrow too). What no line accounts for is kept as "(not attributed)", so the counts
    always add up to the program's total."""
    counts: Counter[str] = Counter()
    total = None
    for line in annotated.splitlines():
        found = _ANNOTATED.match(line)
        if found is None:
            continue
        count = int(found.group(1).replace(",", ""))
        if found.group(2) == "PROGRAM TOTALS":
            total = count
            continue
        name = _RECURSION.sub("", _FILE.sub("", found.group(2)))
        counts[name] += count
    if total is not None and total != sum(counts.values()):
        counts["(not attributed)"] = total - sum(counts.values())
    return counts


def print_functions(per_token: dict[str, dict[str, float]], rows: int) -> None:
    """The functions where the last two clients differ most, instructions per token."""
    names = list(per_token)
    before, after = names[-2], names[-1]
    functions = set().union(*per_token.values())
    difference = {
        f: per_token[after].get(f, 0.0) - per_token[before].get(f, 0.0) for f in functions
    }
    print(f"\nInstructions per token by function; {after} minus {before}, largest first:\n")
    print("| function | " + " | ".join(names) + f" | {after} − {before} |")
    print("|---|" + "---|" * (len(names) + 1))
    for function in sorted(functions, key=lambda f: -abs(difference[f]))[:rows]:
        cells = " | ".join(f"{per_token[n].get(function, 0.0):,.0f}" for n in names)
        print(f"| {function} | {cells} | {difference[function]:+,.0f} |")
    totals = " | ".join(f"{sum(per_token[n].values()):,.0f}" for n in names)
    print(f"| all functions | {totals} | {sum(difference.values()):+,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="floor,chatclient,repro")
    parser.add_argument("--streams", type=int, default=16, help="all at once")
    parser.add_argument("--tokens", type=int, default=64, help="the short length; long is 3x")
    parser.add_argument("--pace-ms", type=float, default=40.0)
    parser.add_argument("--by-function", type=int, default=0, metavar="N",
                        help="also print the N functions where the last two clients differ most")  # fmt: skip
    args = parser.parse_args()
    clients = args.clients.split(",")
    unknown = sorted(set(clients) - {"floor", "chatclient", "repro"})
    if unknown:
        sys.exit(f"unknown client {unknown[0]!r}: the clients are floor, chatclient and repro")
    if len(set(clients)) < len(clients):
        sys.exit(f"--clients names a client twice: {args.clients}")
    if args.by_function < 0:
        sys.exit(f"--by-function takes a number of functions, 0 or more, not {args.by_function}")
    if args.by_function and len(clients) < 2:
        sys.exit("--by-function compares two clients: name at least two in --clients")
    if shutil.which("valgrind") is None:
        sys.exit("this bench needs valgrind (apt install valgrind)")
    functions: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="client-instr-") as tmp, stream_server() as (url, _):
        for client in clients:
            runs, profiles = [], []
            for i, tokens in enumerate((args.tokens, 3 * args.tokens)):
                argv = argv_of(client, url, args.streams, Path(tmp), i)
                profiles.append(
                    f"{tmp}/{client}-{i}.callgrind" if args.by_function else "/dev/null"
                )
                runs.append(counted(argv, url, tokens, args.pace_ms, profiles[-1]))
            (few, sent_few), (more, sent_more) = runs
            tokens_added = sent_more - sent_few
            per_token = (more - few) / tokens_added
            print(f"{client}: {per_token:,.0f} instructions per token "
                  f"({args.streams} streams, {args.tokens} vs {3 * args.tokens} tokens, "
                  f"paced {args.pace_ms:g} ms)", flush=True)  # fmt: skip
            if args.by_function:
                short, long = (by_function(profile) for profile in profiles)
                functions[client] = {
                    f: (long[f] - short[f]) / tokens_added for f in long.keys() | short.keys()
                }
    if args.by_function:
        print_functions(functions, args.by_function)


if __name__ == "__main__":
    main()
