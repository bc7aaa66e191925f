"""The engine's tool-call parsers by SGLang's `--tool-call-parser` names, and the planted bug.

`auto` is the served model's own format (SGLang 0.5.23 picks one from the chat template);
a name of another family parses the model's text with that family's parser, as a real
engine misconfigured so would (a Qwen model behind `deepseekv32` returns its calls as text).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from repro.sim.detector import DsmlDetector, Parsed, parse_completion
from repro.sim.formats.catalog import DSML_FORMAT_NAME
from repro.sim.formats.lenient import FamilyDetector, HarmonyDetector, parse_whole
from repro.sim.formats.scanners import SCANNERS
from repro.sim.formats.typed import schemas_of

# SGLang's parser names (FunctionCallParser.ToolCallParserEnum) -> the format each reads.
PARSER_NAMES: dict[str, str] = {
    "deepseekv32": DSML_FORMAT_NAME,
    "qwen3_coder": "qwen3_coder",
    "qwen": "hermes",
    "qwen25": "hermes",
    "hermes": "hermes",
    "deepseekv31": "deepseek_v31",
    "kimi_k2": "kimi_k2",
    "glm": "glm45",
    "glm45": "glm45",
    "glm47": "glm47",
    "gpt-oss": "harmony",
    "minimax-m2": "minimax_m2",
    "mistral": "mistral",
}
AUTO = "auto"

# A test switch, not a fault of the story: a parser that latches after a response's first
# call and drops every later one (the class of vLLM #51075, SGLang #23453). Its output is
# well formed, so only a comparison with the raw text can see it (the parser differential).
PARSER_BUGS = ("drop-later-calls",)


class Detector(Protocol):
    def feed(self, text: str) -> Parsed: ...

    def finish(self) -> Parsed: ...


@dataclass(frozen=True, slots=True)
class ToolParser:
    """One format's parser: streaming (`stream`) and one-shot (`whole`)."""

    format: str

    def stream(self, tools: Sequence[dict[str, Any]]) -> Detector:
        if self.format == DSML_FORMAT_NAME:
            return DsmlDetector()
        if self.format == "harmony":
            return HarmonyDetector()
        return FamilyDetector(SCANNERS[self.format], schemas_of(list(tools)))

    def whole(
        self, text: str, tools: Sequence[dict[str, Any]], tool_names: Collection[str]
    ) -> Parsed:
        if self.format == DSML_FORMAT_NAME:
            return parse_completion(text, tool_names)
        return parse_whole(self.stream(tools), text, tool_names)


def tool_parser(name: str, model_format: str) -> ToolParser:
    """The parser `--tool-call-parser NAME` runs for a model writing `model_format`."""
    return ToolParser(model_format if name == AUTO else PARSER_NAMES[name])
