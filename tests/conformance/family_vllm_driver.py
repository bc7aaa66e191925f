"""vLLM's parsers on the format corpus, run inside vLLM's interpreter, as its server calls them.

Reads one JSON request per line on stdin, `{"cases": [...]}`, each case `{"family", "text",
"tools", "seeds": [int, ...], "tokens": {"vocab": [...], "special": [...]}}` (and
optionally "delta_tokens": n, every delta n tokens); writes `{"results": [...]}` (or `{"error": ...}`) with the
shape of family_sglang_driver.py's. The parser is the unified `Parser` the serving layer
builds (`ParserManager.get_parser(tool_parser_name=..., enable_auto_tools=True)`, no
reasoning parser: the text is what follows the reasoning): `parse` on the whole text, and
`parse_delta` on deltas of 1 to 8 tokens (each seed one random split), with the last delta
`finished`, so the final flush of unstreamed arguments runs as in serving.

Tokens: vLLM's parsers match special markers by token id, so text must arrive as the model's
tokens. The models' tokenizers cannot be fetched here, so a stand-in tokenizer makes each
of the family's single-token markers one id (flagged special where the model's tokenizer
flags it, research/toolformats.md §1) and every other character one id. Harmony uses the
real o200k_harmony encoding that openai_harmony ships.
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys

# The repro format name -> vLLM's --tool-call-parser name. The family's single-token
# markers come with each case (tests/formats_corpus.py, TOKENS).
PARSERS = {
    "qwen3_coder": "qwen3_coder",
    "hermes": "hermes",
    "deepseek_v31": "deepseek_v31",
    "kimi_k2": "kimi_k2",
    "glm45": "glm45",
    "glm47": "glm47",
    "minimax_m2": "minimax_m2",
    "mistral": "mistral",
}
DELTA_TOKENS = (1, 1, 2, 3, 4, 8)  # multi-token deltas, as stream_interval and MTP make


class MarkerTokenizer:
    """Each marker one id (from 10**6), every other character its code point."""

    def __init__(self, vocab: list[str], special: list[str]) -> None:
        self._ids = {s: 1_000_000 + i for i, s in enumerate(vocab)}
        self._texts = {i: s for s, i in self._ids.items()}
        self._longest_first = sorted(vocab, key=len, reverse=True)
        self.all_special_tokens = list(special)
        self.all_special_ids = [self._ids[s] for s in special]

    def get_vocab(self) -> dict[str, int]:
        return dict(self._ids)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids, i = [], 0
        while i < len(text):
            for marker in self._longest_first:
                if text.startswith(marker, i):
                    ids.append(self._ids[marker])
                    i += len(marker)
                    break
            else:
                ids.append(ord(text[i]))
                i += 1
        return ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return "".join(self._texts.get(i) or chr(i) for i in ids)

    def tokenize(self, text: str) -> list[str]:
        return [self.decode([i]) for i in self.encode(text)]

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self._ids.get(tokens, ord(tokens[0]) if len(tokens) == 1 else 0)
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def convert_ids_to_tokens(self, ids):
        return [self.decode([i]) for i in ids]

    def __len__(self) -> int:
        return 1_100_000


class HarmonyTokenizer:
    """gpt-oss's own encoding (openai_harmony's o200k_harmony)."""

    def __init__(self) -> None:
        from vllm.entrypoints.openai.parser.harmony_utils import get_encoding

        self._encoding = get_encoding()

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode(text, allowed_special="all")

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return self._encoding.decode(list(ids))

    def get_vocab(self) -> dict[str, int]:
        return {}


_built: dict[tuple, tuple] = {}


def _parser_for(family: str, vocab: list[str], special: list[str]):
    key = (family, tuple(vocab), tuple(special))
    if key not in _built:
        from vllm.parser.parser_manager import ParserManager

        if family == "harmony":
            parser_class = ParserManager.get_parser(
                tool_parser_name="openai",
                reasoning_parser_name="openai_gptoss",
                enable_auto_tools=True,
                is_harmony=True,
            )
            _built[key] = (parser_class, HarmonyTokenizer())
        else:
            parser_class = ParserManager.get_parser(
                tool_parser_name=PARSERS[family], enable_auto_tools=True
            )
            _built[key] = (parser_class, MarkerTokenizer(vocab, special))
    return _built[key]


def _request(tools: list[dict]):
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    return ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "go"}], tools=tools
    )


def _whole(parser_class, tokenizer, text: str, request) -> dict:
    try:
        parser = parser_class(tokenizer, request.tools)
        ids = tokenizer.encode(text)
        _, content, calls = parser.parse(text, request, True, ids)
    except Exception as e:  # an engine crash is an answer too
        return {"calls": [], "normal": "", "error": f"{type(e).__name__}: {e}"}
    found = [[c.name or "", c.arguments or ""] for c in calls or ()]
    return {"calls": found, "normal": content or "", "error": None}


def _streamed(parser_class, tokenizer, text: str, request, seed: int, fixed: int = 0) -> dict:
    """Deltas of 1 to 8 tokens drawn with `seed`, or of `fixed` tokens each."""
    rng = random.Random(seed)
    calls: list[list[str]] = []
    by_index: dict[int, list[str]] = {}
    normal = ""
    try:
        parser = parser_class(tokenizer, request.tools)
        ids = tokenizer.encode(text)
        at = 0
        while at < len(ids) or at == 0:
            delta = ids[at : at + (fixed or rng.choice(DELTA_TOKENS))]
            at += max(1, len(delta))
            finished = at >= len(ids)
            message = parser.parse_delta(
                tokenizer.decode(delta), delta, request, [], finished=finished
            )
            if message is None:
                continue
            normal += message.content or ""
            for call in message.tool_calls or ():
                function = call.function
                name = function.name if function is not None else None
                arguments = (function.arguments if function is not None else None) or ""
                entry = by_index.get(call.index)
                if entry is None or (name and entry[0] and call.id):
                    entry = [name or "", ""]
                    calls.append(entry)
                    by_index[call.index] = entry
                elif name and not entry[0]:
                    entry[0] = name
                entry[1] += arguments
    except Exception as e:
        return {"calls": calls, "normal": normal, "error": f"{type(e).__name__}: {e}"}
    return {"calls": calls, "normal": normal, "error": None}


def parse(case: dict) -> dict:
    tokens = case["tokens"]
    parser_class, tokenizer = _parser_for(case["family"], tokens["vocab"], tokens["special"])
    request = _request(case["tools"])
    text = case["text"]
    return {
        "whole": _whole(parser_class, tokenizer, text, request),
        "streams": [
            _streamed(parser_class, tokenizer, text, request, seed, case.get("delta_tokens", 0))
            for seed in case["seeds"]
        ],
    }


def main() -> None:
    logging.disable(logging.CRITICAL)  # parsers log every malformed call
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"results": [parse(case) for case in request["cases"]]}
        except Exception as e:  # the test shows the driver's error, not a broken pipe
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
