"""SGLang's tool-call detectors on the format corpus, run inside SGLang's interpreter.

Reads one JSON request per line on stdin, `{"cases": [...]}`, each case `{"family", "text",
"tools", "splits": [[chunk, ...], ...]}`; writes one line `{"results": [...]}` (or
`{"error": ...}`). A result is `{"whole": PARSE, "streams": [PARSE, ...]}`, a PARSE being
`{"calls": [[name, arguments], ...], "normal": text, "error": text or null}`:
`detect_and_parse` for the whole text, `parse_streaming_increment` per chunk and then
`finish()` for each split. Streamed items are grouped into calls by order of first
appearance (an item with a name opens a call; research/toolformats.md §2.1 warns that
`tool_index` is not to be trusted).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import types

# The repro format name -> the detector SGLang's --tool-call-parser name selects
# (FunctionCallParser.ToolCallParserEnum: qwen3_coder, hermes, deepseekv31, kimi_k2, glm45,
# glm47, gpt-oss, minimax-m2, mistral), by module: importing the registry itself pulls in
# every detector, and some need packages this environment lacks.
DETECTORS = {
    "qwen3_coder": ("qwen3_coder_detector", "Qwen3CoderDetector"),
    "hermes": ("hermes_detector", "HermesDetector"),
    "deepseek_v31": ("deepseekv31_detector", "DeepSeekV31Detector"),
    "kimi_k2": ("kimik2_detector", "KimiK2Detector"),
    "glm45": ("glm4_moe_detector", "Glm4MoeDetector"),
    "glm47": ("glm47_moe_detector", "Glm47MoeDetector"),
    "harmony": ("gpt_oss_detector", "GptOssDetector"),
    "minimax_m2": ("minimax_m2", "MinimaxM2Detector"),
    "mistral": ("mistral_detector", "MistralDetector"),
}
_parts = None


def _sglang():
    global _parts
    if _parts is None:
        # SGLang's package __init__ starts its runtime (torch); the detectors never use it.
        spec = importlib.util.find_spec("sglang")
        package = types.ModuleType("sglang")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        sys.modules.setdefault("sglang", package)
        from sglang.srt.entrypoints.openai.protocol import Tool

        _parts = Tool
    return _parts


def _detector_class(family: str):
    module, name = DETECTORS[family]
    return getattr(importlib.import_module(f"sglang.srt.function_call.{module}"), name)


def _grouped(items, calls: list[list[str]], by_index: dict[int, list[str]]) -> None:
    for item in items:
        if item.name:
            entry = [item.name, item.parameters or ""]
            calls.append(entry)
            by_index[item.tool_index] = entry
        elif item.parameters:
            entry = by_index.get(item.tool_index) or (calls[-1] if calls else None)
            if entry is None:  # arguments with no call opened: keep them visible
                entry = ["", ""]
                calls.append(entry)
                by_index[item.tool_index] = entry
            entry[1] += item.parameters


def _whole(detector_class, text: str, tools) -> dict:
    try:
        result = detector_class().detect_and_parse(text, tools)
    except Exception as e:  # an engine crash is an answer too
        return {"calls": [], "normal": "", "error": f"{type(e).__name__}: {e}"}
    return {
        "calls": [[c.name or "", c.parameters or ""] for c in result.calls],
        "normal": result.normal_text,
        "error": None,
    }


def _streamed(detector_class, chunks: list[str], tools) -> dict:
    detector = detector_class()
    calls: list[list[str]] = []
    by_index: dict[int, list[str]] = {}
    normal = ""
    try:
        for chunk in chunks:
            result = detector.parse_streaming_increment(chunk, tools)
            normal += result.normal_text
            _grouped(result.calls, calls, by_index)
        result = detector.finish(tools)
        normal += result.normal_text
        _grouped(result.calls, calls, by_index)
    except Exception as e:
        return {"calls": calls, "normal": normal, "error": f"{type(e).__name__}: {e}"}
    return {"calls": calls, "normal": normal, "error": None}


def parse(case: dict) -> dict:
    tool = _sglang()
    detector_class = _detector_class(case["family"])
    tools = [tool(**t) for t in case["tools"]]
    return {
        "whole": _whole(detector_class, case["text"], tools),
        "streams": [_streamed(detector_class, chunks, tools) for chunks in case["splits"]],
    }


def main() -> None:
    logging.disable(logging.CRITICAL)  # detectors log every call they drop
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"results": [parse(case) for case in request["cases"]]}
        except Exception as e:  # the test shows the driver's error, not a broken pipe
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")  # ASCII: lone surrogates survive
        sys.stdout.flush()


if __name__ == "__main__":
    main()
