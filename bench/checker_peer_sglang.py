"""The peer in bench/checker_throughput.py: SGLang's detector for the format, on the same texts.

Run by the bench in SGLang's interpreter, on the same core:
    .cache/sglang-0.5.23/bin/python bench/checker_peer_sglang.py JOB.json
JOB.json holds {"tools", "corpora": {name: [text, ...]}, "stream_turns": {name: n},
"chunk_chars"} and, for a format other than DSML, "detector": [module, class] in
sglang.srt.function_call. Then each stdin line {"corpus": name, "mode": "whole" | "stream"} is one
timed run, answered by a line {"cpu_s": seconds}: the bench alternates these with its own
runs, so a burst of load on the shared machine hits both sides alike.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import time
import types
from pathlib import Path


def _import_detector(module: str, name: str):
    # SGLang's package __init__ starts its serving runtime (torch); the detector never
    # uses it, so the package is entered without running it (tests/conformance does too).
    spec = importlib.util.find_spec("sglang")
    package = types.ModuleType("sglang")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules.setdefault("sglang", package)
    from sglang.srt.entrypoints.openai.protocol import Tool

    detector = importlib.import_module(f"sglang.srt.function_call.{module}")
    return getattr(detector, name), Tool


def main() -> None:
    logging.disable(logging.CRITICAL)
    job = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    # Another format's detector when the job names one (bench/checker_throughput.py --formats).
    module, name = job.get("detector", ("deepseekv32_detector", "DeepSeekV32Detector"))
    detector_class, tool = _import_detector(module, name)
    tools = [tool(**t) for t in job["tools"]]
    size = job["chunk_chars"]
    texts = job["corpora"]
    chunked = {
        name: [[t[i : i + size] for i in range(0, len(t), size)] for t in corpus[:n]]
        for (name, corpus), n in zip(texts.items(), job["stream_turns"].values(), strict=True)
    }

    def whole(name: str) -> None:
        for text in texts[name]:
            detector_class().detect_and_parse(text, tools)

    def stream(name: str) -> None:
        for chunks in chunked[name]:
            detector = detector_class()
            for chunk in chunks:
                detector.parse_streaming_increment(chunk, tools)
            detector.finish(tools)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        run = whole if request["mode"] == "whole" else stream
        start = time.process_time()
        run(request["corpus"])
        print(json.dumps({"cpu_s": time.process_time() - start}), flush=True)


if __name__ == "__main__":
    main()
