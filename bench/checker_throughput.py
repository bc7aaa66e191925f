"""Checker throughput on one core, whole-text and streamed, against SGLang's detector.

    python bench/checker_throughput.py [--repeats 5] [--record bench/RESULTS.md]
    python bench/checker_throughput.py --formats all [--repeats 3] [--record bench/HISTORY.md]

The second form measures the other tool-call formats (bench/checker_formats.py), each
against SGLang's detector for the same format.

Both sides read the same texts with the same tools, pinned to the same CPU, one after the
other: ours is `parse_dsml` (whole) and `DsmlStream` fed 4-character chunks (about a token
each); the peer is SGLang 0.5.23's `DeepSeekV32Detector.detect_and_parse` and
`parse_streaming_increment`, run in SGLang's interpreter (bench/checker_peer_sglang.py).
Each figure is the best of `--repeats` runs in CPU seconds, our runs and the peer's taken
in turn so that load from the shared machine falls on both; our JSON Schema verdicts start
cold in every run. The peer only parses; we also validate schemas and scan the text, so
the table also shows us without the schemas.

Corpora: "agent turns" is the checkers' zero-false-positive corpus (tests/dsml_corpus.py:
prose and one to four calls, about 650 characters a turn); "long turns" are write_file calls
carrying 2-20 KB of this interpreter's standard-library source, prose from its docstrings,
and CJK text.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the corpus is test data: tests/dsml_corpus.py

from repro.checkers.dsml.stream import DsmlStream, parse_dsml  # noqa: E402
from repro.checkers.toolset import ToolSet  # noqa: E402
from repro.dsml.encode import encode_completion  # noqa: E402
from tests.dsml_corpus import TOOLS, samples  # noqa: E402

SGLANG_PYTHON = REPO / ".cache" / "sglang-0.5.23" / "bin" / "python"
PEER = REPO / "bench" / "checker_peer_sglang.py"
CHUNK_CHARS = 4
# SGLang's streaming parser re-reads its growing buffer at every chunk (quadratic in the
# text), so streaming is timed on the first turns of each corpus only, on both sides.
STREAM_TURNS = {"agent turns": 400, "long turns": 6}
TARGET_MB_S = 20.0
REFERENCE_LOOP = 5_000_000
SECTION = ("<!-- checker_throughput:start -->", "<!-- checker_throughput:end -->")


def agent_turns() -> list[str]:
    return [s.text for s in samples(2000, seed=1)]


def long_turns() -> list[str]:
    rng = random.Random(7)
    library = Path(sysconfig.get_paths()["stdlib"])
    sources = [
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(library.glob("*.py"))
    ]
    texts = []
    for source in rng.sample(sources, 60):
        start = rng.randrange(max(1, len(source) - 20_000))
        chunk = source[start : start + rng.randint(2_000, 20_000)]
        call = ("write_file", {"path": "src/module.py", "content": chunk})
        texts.append(encode_completion([call], content="Writing the module now."))
    modules = ("os", "re", "json", "typing", "argparse", "subprocess", "logging", "pathlib")
    docs = [inspect.getdoc(__import__(m)) or "" for m in modules]
    for _ in range(40):
        prose = "\n\n".join(rng.choice(docs) for _ in range(3))
        calls = [("search", {"query": prose[:80], "topn": 5})] if rng.random() < 0.5 else []
        texts.append(encode_completion(calls, content=prose))
    for _ in range(20):
        cjk = "".join(
            chr(rng.randint(0x4E00, 0x9FA5)) if rng.random() < 0.92 else "，" for _ in range(8_000)
        )
        texts.append(encode_completion([], content=cjk))
    return texts


# The same tools without their schemas: the parser and text checks alone, to compare with
# a peer that validates no arguments.
NAMES_ONLY = [{"name": t["function"]["name"]} for t in TOOLS]


class Peer:
    """SGLang's detector in its own interpreter, timing one run per request."""

    def __init__(
        self, python: Path, corpora: dict[str, list[str]], detector: tuple[str, str] | None = None
    ) -> None:
        job = {
            "tools": TOOLS,
            "corpora": corpora,
            "stream_turns": {name: STREAM_TURNS[name] for name in corpora},
            "chunk_chars": CHUNK_CHARS,
        }
        if detector is not None:
            job["detector"] = detector
        with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8", delete=False) as f:
            json.dump(job, f)
        self._job = Path(f.name)
        self._process = subprocess.Popen(
            [str(python), str(PEER), f.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert json.loads(self._readline())["ready"]

    def _readline(self) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the SGLang peer died; run it by hand to see why")
        return line

    def run(self, corpus: str, mode: str) -> float:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps({"corpus": corpus, "mode": mode}) + "\n")
        self._process.stdin.flush()
        return json.loads(self._readline())["cpu_s"]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=60)
        self._job.unlink()


def _ours_cpu_s(texts: list[str], mode: str) -> float:
    if mode == "stream":
        tools = ToolSet.from_openai(TOOLS)
        chunked = [[t[i : i + CHUNK_CHARS] for i in range(0, len(t), CHUNK_CHARS)] for t in texts]
        start = time.process_time()
        for chunks in chunked:
            s = DsmlStream(tools)
            for chunk in chunks:
                s.feed(chunk)
            s.finish()
        return time.process_time() - start
    # Compiled outside the clock; schema verdicts start cold in every run.
    tools = ToolSet.from_openai(NAMES_ONLY if mode == "no_schema" else TOOLS)
    start = time.process_time()
    for text in texts:
        parse_dsml(text, tools)
    return time.process_time() - start


def reference_loop_s() -> float:
    """CPU seconds for a fixed pure-Python loop: this shared machine's speed drifts (we saw
    1.8x between minutes), so each table says how fast the core was while it was measured."""
    started, total = time.process_time(), 0
    for i in range(REFERENCE_LOOP):
        total += i
    return time.process_time() - started


def measure(
    corpora: dict[str, list[str]], repeats: int, python: Path
) -> tuple[dict, dict, list[float]]:
    """Best CPU seconds per corpus and mode, ours and the peer's runs taken in turn, and the
    reference loop's time at each repeat."""
    peer = Peer(python, corpora)
    mine: dict[str, dict[str, float]] = {n: {} for n in corpora}
    theirs: dict[str, dict[str, float]] = {n: {} for n in corpora}
    reference: list[float] = []
    try:
        for _ in range(repeats):
            reference.append(reference_loop_s())
            for name, texts in corpora.items():
                streamed = texts[: STREAM_TURNS[name]]
                runs = {
                    "whole_s": lambda texts=texts: _ours_cpu_s(texts, "whole"),
                    "no_schema_s": lambda texts=texts: _ours_cpu_s(texts, "no_schema"),
                    "stream_s": lambda streamed=streamed: _ours_cpu_s(streamed, "stream"),
                }
                for key, run in runs.items():
                    mine[name][key] = min(mine[name].get(key, float("inf")), run())
                for key, mode in (("whole_s", "whole"), ("stream_s", "stream")):
                    took = peer.run(name, mode)
                    theirs[name][key] = min(theirs[name].get(key, float("inf")), took)
    finally:
        peer.close()
    return mine, theirs, reference


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _mb(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def report(corpora, mine, theirs, loads, reference: list[float], command: str) -> str:
    lines = [
        "## Checker throughput",
        "",
        SECTION[0],
        f"`{command}` — {time.strftime('%Y-%m-%d')}, {_cpu_model()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, pinned to one core; load average "
        f"{loads[0]:.2f} before, {loads[1]:.2f} after; core speed: a "
        f"{REFERENCE_LOOP / 1e6:.0f}M-step Python loop took {min(reference) * 1000:.0f}-"
        f"{max(reference) * 1000:.0f} ms across the repeats.",
        "",
        "| corpus | turns | MB | ours whole MB/s | µs/turn | without schemas MB/s | "
        "SGLang whole MB/s | ratio | ours streamed MB/s | SGLang streamed MB/s | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, texts in corpora.items():
        mb = _mb(texts)
        stream_mb = _mb(texts[: STREAM_TURNS[name]])
        a, b = mine[name], theirs[name]
        lines.append(
            f"| {name} | {len(texts)} | {mb:.2f} | {mb / a['whole_s']:.1f} | "
            f"{a['whole_s'] / len(texts) * 1e6:.0f} | {mb / a['no_schema_s']:.1f} | "
            f"{mb / b['whole_s']:.1f} | "
            f"{b['whole_s'] / a['whole_s']:.2f} | {stream_mb / a['stream_s']:.1f} | "
            f"{stream_mb / b['stream_s']:.2f} | {b['stream_s'] / a['stream_s']:.0f} |"
        )
    total_mb = sum(_mb(texts) for texts in corpora.values())
    total_s = sum(m["whole_s"] for m in mine.values())
    met = [
        name for name, texts in corpora.items() if _mb(texts) / mine[name]["whole_s"] >= TARGET_MB_S
    ]
    short = mine["agent turns"]
    schema_share = (short["whole_s"] - short["no_schema_s"]) / short["whole_s"]
    lines += [
        "",
        f"Whole-text target ({TARGET_MB_S:.0f} MB/s) met on: {', '.join(met) or 'none'}. On short "
        f"turns the cost is per turn, not per byte: {schema_share:.0%} of it is the JSON Schema "
        "check (schema_precheck.py confirms these calls; jsonschema judges only what it cannot), "
        "the rest Python per tag.",
        "",
        f"All corpora together, whole text: {total_mb / total_s:.1f} MB/s "
        f"(target {TARGET_MB_S:.0f} MB/s). Ratio = our speed ÷ SGLang's (above 1: faster), "
        "ours with schemas; SGLang's detector validates no arguments. "
        "MB are UTF-8 megabytes. Streamed: 4-character chunks, on the first "
        + " and ".join(f"{n} {name}" for name, n in STREAM_TURNS.items())
        + " (SGLang's streaming parser is quadratic in the text).",
        SECTION[1],
    ]
    return "\n".join(lines) + "\n"


def record(path: Path, section: str) -> None:
    """Replace this bench's section of RESULTS.md (between its markers), keep the rest."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    start, end = text.find("## Checker throughput"), text.find(SECTION[1])
    if start != -1 and end != -1:
        text = text[:start] + section + text[end + len(SECTION[1]) :].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sglang-python", type=Path, default=SGLANG_PYTHON)
    parser.add_argument("--record", type=Path, help="write the results section into this file")
    parser.add_argument(
        "--formats",
        help="the other tool-call formats instead of DSML: `all` or names, comma-separated "
        "(bench/checker_formats.py)",
    )
    args = parser.parse_args()
    if not args.sglang_python.exists():
        sys.exit(f"No SGLang interpreter at {args.sglang_python}; run scripts/build-sglang-env.")
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})  # the peer inherits the same single core
    before = os.getloadavg()[0]
    if before > 1.0:
        print(f"warning: load average {before:.2f}; figures will be low, rerun when idle")
    if args.formats:
        from bench.checker_formats import run_formats

        run_formats(args, before)
        return
    corpora = {"agent turns": agent_turns(), "long turns": long_turns()}
    tools = ToolSet.from_openai(TOOLS)
    for name, texts in corpora.items():  # time the healthy path, not error handling
        assert not any(parse_dsml(t, tools).defects for t in texts), f"{name}: a defect"
    mine, theirs, reference = measure(corpora, args.repeats, args.sglang_python)
    command = "python bench/checker_throughput.py" + (
        f" --repeats {args.repeats}" if args.repeats != 5 else ""
    )
    section = report(corpora, mine, theirs, (before, os.getloadavg()[0]), reference, command)
    print(section)
    if args.record:
        record(args.record, section)


if __name__ == "__main__":
    main()
