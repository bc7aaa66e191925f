"""The other tool-call formats in bench/checker_throughput.py: each format's validator against
SGLang's detector for the same format, on the same texts, pinned to the same core.

    python bench/checker_throughput.py --formats all [--repeats 3] [--record bench/HISTORY.md]

Corpora per format, written by its encoder (repro.toolformats): "agent turns" are the DSML
corpus's calls and prose (tests/dsml_corpus.py, as the DSML bench uses them); "long turns"
are the DSML bench's long turns (write_file calls carrying 2-20 KB of standard-library
source, docstring prose, CJK text). Ours is `Family.check` on the whole text and
`FamilyStream` fed 4-character chunks; the peer runs `detect_and_parse` and
`parse_streaming_increment` (bench/checker_peer_sglang.py). DSML is measured in the same run
for scale: this shared machine's speed drifts.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bench.checker_throughput import (
    CHUNK_CHARS,
    REFERENCE_LOOP,
    SGLANG_PYTHON,
    STREAM_TURNS,
    TARGET_MB_S,
    Peer,
    _cpu_model,
    _mb,
    agent_turns,
    long_turns,
    reference_loop_s,
)
from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.families import FAMILIES
from repro.checkers.toolset import ToolSet
from repro.checkers.verdict import AssistantOutput
from repro.dsml.markers import BLOCK_LEAD_IN, EOS
from repro.toolformats import ENCODERS
from tests.conformance.family_sglang_driver import DETECTORS
from tests.dsml_corpus import TOOLS, samples
from tests.formats_corpus import fits

SECTION = ("<!-- checker_formats:start -->", "<!-- checker_formats:end -->")
TITLE = "## Tool-call formats beside DSML: checker throughput"


def format_corpora(family: str) -> dict[str, list[str]]:
    encode = ENCODERS[family]
    agent = []
    for sample in samples(4000, seed=1):
        calls = sample.calls[:1] if family == "harmony" else sample.calls
        if fits(family, calls, sample.content):
            agent.append(encode(calls, sample.content, None))
        if len(agent) == 2000:
            break
    # The DSML bench's long turns, their calls and prose written in this format.
    long = [encode(calls, content, None) for calls, content in _long_parts()]
    return {"agent turns": agent, "long turns": long}


def _long_parts() -> list[tuple[tuple, str]]:
    """The DSML long corpus's turns as (calls, content), read back from their DSML."""
    tools = ToolSet.from_openai(TOOLS)
    parts = []
    for text in long_turns():
        calls = tuple((c.name, json.loads(c.arguments)) for c in parse_dsml(text, tools).calls)
        block = text.find(BLOCK_LEAD_IN)
        content = (text if block == -1 else text[:block]).removesuffix(EOS)
        parts.append((calls, content))
    return parts


def _ours_cpu_s(family: str, texts: list[str], mode: str) -> float:
    tools = ToolSet.from_openai(TOOLS)  # schema verdicts start cold in every run
    f = FAMILIES[family]
    if mode == "stream":
        chunked = [[t[i : i + CHUNK_CHARS] for i in range(0, len(t), CHUNK_CHARS)] for t in texts]
        start = time.process_time()
        for chunks in chunked:
            stream = f.stream(tools)
            for chunk in chunks:
                stream.feed(chunk)
            stream.finish()
        return time.process_time() - start
    outputs = [AssistantOutput(content=t) for t in texts]
    start = time.process_time()
    for output in outputs:
        f.check(output, tools)
    return time.process_time() - start


def _dsml_cpu_s(texts: list[str]) -> float:
    tools = ToolSet.from_openai(TOOLS)
    start = time.process_time()
    for text in texts:
        parse_dsml(text, tools)
    return time.process_time() - start


def measure(family: str, corpora: dict[str, list[str]], repeats: int, python: Path):
    """Best CPU seconds per corpus and mode, ours and SGLang's detector's taken in turn."""
    peer = Peer(python, corpora, DETECTORS[family])
    mine: dict[str, dict[str, float]] = {n: {} for n in corpora}
    theirs: dict[str, dict[str, float]] = {n: {} for n in corpora}
    try:
        for _ in range(repeats):
            for name, texts in corpora.items():
                streamed = texts[: STREAM_TURNS[name]]
                runs = (("whole_s", "whole", texts), ("stream_s", "stream", streamed))
                for key, mode, sample in runs:
                    took = _ours_cpu_s(family, sample, mode)
                    mine[name][key] = min(mine[name].get(key, float("inf")), took)
                    took = peer.run(name, mode)
                    theirs[name][key] = min(theirs[name].get(key, float("inf")), took)
    finally:
        peer.close()
    return mine, theirs


def report(results, dsml, loads, reference, command: str) -> str:
    lines = [
        TITLE,
        "",
        SECTION[0],
        f"`{command}` — {time.strftime('%Y-%m-%d')}, {_cpu_model()}, {os.cpu_count()} CPUs, "
        f"pinned to one core; load average {loads[0]:.2f} before, {loads[1]:.2f} after; core "
        f"speed: a {REFERENCE_LOOP / 1e6:.0f}M-step Python loop took "
        f"{min(reference) * 1000:.0f}-{max(reference) * 1000:.0f} ms across the formats.",
        "",
        "| format | corpus | turns | MB | ours whole MB/s | µs/turn | SGLang whole MB/s | ratio "
        "| ours streamed MB/s | SGLang streamed MB/s | ratio | both corpora, ours MB/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = []
    for family, (corpora, mine, theirs) in results.items():
        total_mb = sum(_mb(t) for t in corpora.values())
        total_s = sum(m["whole_s"] for m in mine.values())
        if total_mb / total_s >= TARGET_MB_S:
            met.append(family)
        for i, (name, texts) in enumerate(corpora.items()):
            mb, stream_mb = _mb(texts), _mb(texts[: STREAM_TURNS[name]])
            a, b = mine[name], theirs[name]
            both = f"{total_mb / total_s:.1f}" if i == 0 else ""
            lines.append(
                f"| {family} | {name} | {len(texts)} | {mb:.2f} | {mb / a['whole_s']:.1f} | "
                f"{a['whole_s'] / len(texts) * 1e6:.0f} | {mb / b['whole_s']:.1f} | "
                f"{b['whole_s'] / a['whole_s']:.2f} | {stream_mb / a['stream_s']:.1f} | "
                f"{stream_mb / b['stream_s']:.2f} | {b['stream_s'] / a['stream_s']:.0f} | {both} |"
            )
    dsml_mb = sum(_mb(t) for t in dsml[0].values())
    lines += [
        "",
        f"Target {TARGET_MB_S:.0f} MB/s over both corpora met by: {', '.join(met) or 'none'}. "
        f"DSML (parse_dsml) in the same run, same corpora: agent turns "
        f"{_mb(dsml[0]['agent turns']) / dsml[1]['agent turns']:.1f} MB/s, long turns "
        f"{_mb(dsml[0]['long turns']) / dsml[1]['long turns']:.1f} MB/s, both "
        f"{dsml_mb / sum(dsml[1].values()):.1f} MB/s.",
        "",
        "Ratio = our speed ÷ SGLang's (above 1: faster); ours validates every call against its "
        "JSON Schema and scans every text, SGLang's detectors only parse. MB are UTF-8 "
        "megabytes. Streamed: 4-character chunks, on the first "
        + " and ".join(f"{n} {name}" for name, n in STREAM_TURNS.items())
        + " (SGLang's streaming detectors re-read their buffer).",
        SECTION[1],
    ]
    return "\n".join(lines) + "\n"


def record(path: Path, section: str) -> None:
    """Write this bench's block over an earlier one (between its markers) or at the end, as
    bench/RESULTS.md asks of benches that record (into bench/HISTORY.md)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = text.find(TITLE), text.find(SECTION[1])
    if start != -1 and end != -1:
        text = text[:start] + section + text[end + len(SECTION[1]) :].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text, encoding="utf-8")


def run_formats(args: argparse.Namespace, load_before: float) -> None:
    chosen = list(FAMILIES) if args.formats == "all" else args.formats.split(",")
    results, reference = {}, []
    for family in chosen:
        corpora = format_corpora(family)
        tools = ToolSet.from_openai(TOOLS)
        for name, texts in corpora.items():  # time the healthy path, not error handling
            check = FAMILIES[family].check
            dirty = [t for t in texts if not check(AssistantOutput(content=t), tools).clean]
            assert len(dirty) <= 1, f"{family} {name}: {len(dirty)} turns with defects"
            corpora[name] = [t for t in texts if t not in dirty]
        reference.append(reference_loop_s())
        mine, theirs = measure(family, corpora, args.repeats, args.sglang_python)
        results[family] = (corpora, mine, theirs)
        print(f"{family}: measured", flush=True)
    dsml_corpora = {"agent turns": agent_turns(), "long turns": long_turns()}
    dsml_s = {n: min(_dsml_cpu_s(t) for _ in range(args.repeats)) for n, t in dsml_corpora.items()}
    command = f"python bench/checker_throughput.py --formats {args.formats}" + (
        f" --repeats {args.repeats}" if args.repeats != 5 else ""
    )
    if args.sglang_python != SGLANG_PYTHON:
        command += f" --sglang-python {args.sglang_python}"
    section = report(
        results, (dsml_corpora, dsml_s), (load_before, os.getloadavg()[0]), reference, command
    )
    print(section)
    if args.record:
        record(args.record, section)
