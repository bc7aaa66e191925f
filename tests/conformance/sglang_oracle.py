"""Answer questions about SGLang's own DSML code, run inside the SGLang interpreter.

Reads one JSON request per line on stdin, `{"op": ..., "cases": [...]}`, and writes one
JSON line `{"results": [...]}` (or `{"error": ...}`) per request. Ops:

    detect          DeepSeekV32Detector.detect_and_parse(text, tools)
    stream          parse_streaming_increment over chunks, then finish()
    deepseek_parse  encoding_dsv32.parse_message_from_completion_text (DeepSeek's parser)
    render          encoding_dsv32.render_message(index, messages, thinking_mode)
    encode          encoding_dsv32.encode_messages(messages, thinking_mode)
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import types
from pathlib import Path


def _load_encoding():
    # Loaded by path: importing the `sglang` package itself takes seconds (torch).
    spec = importlib.util.find_spec("sglang")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "srt" / "entrypoints" / "openai" / "encoding_dsv32.py"
    module_spec = importlib.util.spec_from_file_location("encoding_dsv32", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


ENCODING = _load_encoding()
_detector_parts = None


def _detector():
    global _detector_parts
    if _detector_parts is None:
        # SGLang's package __init__ starts its serving runtime (torch, several seconds);
        # the detector never uses it, so the package is entered without running it.
        spec = importlib.util.find_spec("sglang")
        package = types.ModuleType("sglang")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        sys.modules.setdefault("sglang", package)
        from sglang.srt.entrypoints.openai.protocol import Tool
        from sglang.srt.function_call.deepseekv32_detector import DeepSeekV32Detector

        _detector_parts = (DeepSeekV32Detector, Tool)
    return _detector_parts


def _calls(items):
    return [[c.name, c.parameters] for c in items]


def detect(case):
    detector_class, tool = _detector()
    tools = [tool(**t) for t in case["tools"]]
    result = detector_class().detect_and_parse(case["text"], tools)
    return {"normal_text": result.normal_text, "calls": _calls(result.calls)}


def stream(case):
    detector_class, tool = _detector()
    tools = [tool(**t) for t in case["tools"]]
    detector = detector_class()
    normal, by_index = "", {}
    results = [detector.parse_streaming_increment(c, tools) for c in case["chunks"]]
    results.append(detector.finish(tools))
    for result in results:
        normal += result.normal_text
        for item in result.calls:
            entry = by_index.setdefault(item.tool_index, ["", ""])
            entry[0] = item.name or entry[0]
            entry[1] += item.parameters or ""
    return {"normal_text": normal, "calls": [by_index[i] for i in sorted(by_index)]}


def deepseek_parse(case):
    """DeepSeek's parser; `names` lists each call's tool and parameter names as it read them
    (its arguments text cannot show them: string="false" values are pasted in unchecked)."""
    names = []
    decode = ENCODING.decode_dsml_to_arguments

    def recording(tool_name, tool_args):
        names.append([tool_name, *tool_args])
        return decode(tool_name, tool_args)

    ENCODING.decode_dsml_to_arguments = recording
    try:
        message = ENCODING.parse_message_from_completion_text(case["text"], case["thinking_mode"])
    except ENCODING.DS32EncodingError as e:
        return {"ok": False, "error": str(e)}
    finally:
        ENCODING.decode_dsml_to_arguments = decode
    return {"ok": True, "message": message, "names": names}


def render(case):
    return ENCODING.render_message(case["index"], case["messages"], case["thinking_mode"])


def encode(case):
    return ENCODING.encode_messages(case["messages"], case["thinking_mode"])


OPS = {
    "detect": detect,
    "stream": stream,
    "deepseek_parse": deepseek_parse,
    "render": render,
    "encode": encode,
}


def main() -> None:
    logging.disable(logging.CRITICAL)  # the detector logs every dropped call
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"results": [OPS[request["op"]](case) for case in request["cases"]]}
        except Exception as e:  # the test shows the oracle's error, not a broken pipe
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")  # ASCII: lone surrogates survive
        sys.stdout.flush()


if __name__ == "__main__":
    main()
