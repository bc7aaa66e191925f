"""The peer in bench/checker_throughput.py: SGLang's DeepSeekV32Detector on the same texts.

Run by the bench in SGLang's interpreter, pinned to the same core:
    .cache/sglang-0.5.23/bin/python bench/checker_peer_sglang.py JOB.json
JOB.json holds {"tools", "corpora": {name: [text, ...]}, "stream_turns": {name: n},
"chunk_chars", "repeats"} (streaming reads the first n texts of a corpus); the reply
on stdout is {name: {"whole_s", "stream_s"}}: the best of `repeats` runs, CPU seconds.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import time
import types
from pathlib import Path


def _import_detector():
    # SGLang's package __init__ starts its serving runtime (torch); the detector never
    # uses it, so the package is entered without running it (tests/conformance does too).
    spec = importlib.util.find_spec("sglang")
    package = types.ModuleType("sglang")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules.setdefault("sglang", package)
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.deepseekv32_detector import DeepSeekV32Detector

    return DeepSeekV32Detector, Tool


def _best(run, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    logging.disable(logging.CRITICAL)
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    detector_class, tool = _import_detector()
    tools = [tool(**t) for t in job["tools"]]
    size = job["chunk_chars"]
    reply = {}
    for name, texts in job["corpora"].items():
        streamed = texts[: job["stream_turns"][name]]
        chunked = [[t[i : i + size] for i in range(0, len(t), size)] for t in streamed]

        def whole(texts=texts):
            for text in texts:
                detector_class().detect_and_parse(text, tools)

        def stream(chunked=chunked):
            for chunks in chunked:
                detector = detector_class()
                for chunk in chunks:
                    detector.parse_streaming_increment(chunk, tools)
                detector.finish(tools)

        reply[name] = {
            "whole_s": _best(whole, job["repeats"]),
            "stream_s": _best(stream, job["repeats"]),
        }
    print(json.dumps(reply))


if __name__ == "__main__":
    main()
