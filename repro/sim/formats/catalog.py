"""The tool-call formats the scripted agent can write: how each is encoded and tokenized.

A `ModelFormat` is what the engine needs of a model family: its completion for a planned
turn (repro.toolformats' encoders, DSML's from repro.dsml, byte for byte as the family's
chat template renders an assistant turn), its special tokens (each one token, as in the real
vocabulary: research/toolformats.md §1a, "Special tokens?"), where its reasoning ends and
its calls begin (the reasoning parser's split, the spot a stale read splices at), and
whether a completion can hold more than one call (gpt-oss stops at its first `<|call|>`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repro.dsml.encode import encode_completion
from repro.dsml.markers import DSML, EOS, THINK_CLOSE, THINK_OPEN
from repro.scenarios import PlannedTurn
from repro.sim.tokens import DSML_TOKENIZER, SPECIAL_TOKENS, Tokenizer
from repro.toolformats import (
    deepseek_v31,
    encode_deepseek_v31,
    encode_glm45,
    encode_glm47,
    encode_harmony,
    encode_hermes,
    encode_kimi_k2,
    encode_minimax_m2,
    encode_mistral,
    encode_qwen3_coder,
    glm,
    harmony,
    kimi_k2,
    minimax_m2,
    mistral,
)

Calls = Sequence[tuple[str, Mapping[str, Any]]]
Write = Callable[[Calls, str, "str | None", int], str]  # calls, content, reasoning, first id

DSML_FORMAT_NAME = "dsml-v32"


@dataclass(frozen=True, slots=True)
class ModelFormat:
    """One family's writing. `think_open` and `content_lead` are dropped by the reasoning
    parser (before the reasoning, and at the content's start once the reasoning ends)."""

    name: str
    write: Write
    tokenizer: Tokenizer
    think_close: str  # one token: the reasoning ends here
    call_opener: str  # the calls begin where this text first appears
    think_open: str = ""
    content_lead: str = ""
    one_call: bool = False

    def completion(self, turn: PlannedTurn, thinking: bool, earlier_calls: int = 0) -> str:
        """The completion for a planned turn, ending in EOS (the stop token, never text)."""
        calls = [(c.name, c.arguments) for c in turn.calls]
        if self.one_call:
            calls = calls[:1]
        reasoning = turn.reasoning if thinking else None
        return self.write(calls, turn.content, reasoning, earlier_calls) + EOS

    def history(self, calls: Calls, content: str, reasoning: str, earlier_calls: int) -> str:
        """An earlier assistant turn as the prompt holds it."""
        return self.write(calls, content, reasoning or None, earlier_calls) + EOS

    def calls_at(self, tokens: Sequence[str]) -> int | None:
        """Index of the token where the calls begin (None: the turn has none)."""
        at = "".join(tokens).find(self.call_opener)
        if at == -1:
            return None
        offset = 0
        for i, token in enumerate(tokens):
            offset += len(token)
            if offset > at:
                return i
        return None


def _dsml(calls: Calls, content: str, reasoning: str | None, first: int) -> str:
    return encode_completion(calls, content=content, reasoning=reasoning, eos=False)


def _kimi(calls: Calls, content: str, reasoning: str | None, first: int) -> str:
    return encode_kimi_k2(calls, content, reasoning, first_index=first)


def _harmony(calls: Calls, content: str, reasoning: str | None, first: int) -> str:
    """One call ends a completion; earlier turns holding several (the prompt) are written as
    one message per call."""
    if len(calls) <= 1:
        return encode_harmony(calls, content, reasoning, stop=False)
    head = encode_harmony(calls[:1], content, reasoning)
    rest = [encode_harmony([call]) for call in calls[1:]]
    return f"{harmony.START}{harmony.ASSISTANT}".join([head, *rest]).removesuffix(harmony.CALL)


def _plain(encode: Callable[..., str]) -> Write:
    def write(calls: Calls, content: str, reasoning: str | None, first: int) -> str:
        return encode(calls, content, reasoning)

    return write


# Every tokenizer also knows the prompt layout's tokens (DeepSeek's: BOS, the role markers)
# and the engine's stop token, so prompts are counted alike whatever the family.
def _tokenizer(*specials: str) -> Tokenizer:
    return Tokenizer((*SPECIAL_TOKENS, *specials))


_QWEN = (THINK_OPEN, THINK_CLOSE, "<tool_call>", "</tool_call>")  # `special: false`, yet one token
_V31 = (
    deepseek_v31.CALLS_BEGIN,
    deepseek_v31.CALLS_END,
    deepseek_v31.CALL_BEGIN,
    deepseek_v31.CALL_END,
    deepseek_v31.SEP,
)
_KIMI = (
    kimi_k2.SECTION_BEGIN,
    kimi_k2.SECTION_END,
    kimi_k2.CALL_BEGIN,
    kimi_k2.ARGUMENT_BEGIN,
    kimi_k2.CALL_END,
)
_GLM = (
    glm.TOOL_CALL_OPEN,
    glm.TOOL_CALL_CLOSE,
    glm.KEY_OPEN,
    glm.KEY_CLOSE,
    glm.VALUE_OPEN,
    glm.VALUE_CLOSE,
)
_HARMONY = (
    harmony.START,
    harmony.CHANNEL,
    harmony.MESSAGE,
    harmony.CONSTRAIN,
    harmony.END,
    harmony.CALL,
    harmony.RETURN,
)
_MISTRAL = (
    mistral.TOOL_CALLS,
    mistral.ARGS,
    mistral.CALL_ID,
    mistral.THINK_OPEN,
    mistral.THINK_CLOSE,
    *mistral.SPECIAL_TOKENS,
)

MODEL_FORMATS: dict[str, ModelFormat] = {
    f.name: f
    for f in (
        ModelFormat(DSML_FORMAT_NAME, _dsml, DSML_TOKENIZER, THINK_CLOSE, DSML),
        ModelFormat(
            "qwen3_coder", _plain(encode_qwen3_coder), _tokenizer(*_QWEN), THINK_CLOSE,
            "<tool_call>", think_open=THINK_OPEN,
        ),
        ModelFormat(
            "hermes", _plain(encode_hermes), _tokenizer(*_QWEN), THINK_CLOSE, "<tool_call>",
            think_open=THINK_OPEN,
        ),
        ModelFormat(
            "deepseek_v31", _plain(encode_deepseek_v31), _tokenizer(*_V31), THINK_CLOSE,
            deepseek_v31.CALLS_BEGIN, think_open=THINK_OPEN,
        ),
        ModelFormat(
            "kimi_k2", _kimi, _tokenizer(*_KIMI), THINK_CLOSE, kimi_k2.SECTION_BEGIN,
            think_open=THINK_OPEN,
        ),
        ModelFormat(
            "glm45", _plain(encode_glm45), _tokenizer(*_GLM), THINK_CLOSE, glm.TOOL_CALL_OPEN,
            think_open=THINK_OPEN,
        ),
        ModelFormat(
            "glm47", _plain(encode_glm47), _tokenizer(*_GLM), THINK_CLOSE, glm.TOOL_CALL_OPEN,
            think_open=THINK_OPEN,
        ),
        ModelFormat(
            "harmony", _harmony, _tokenizer(*_HARMONY), harmony.END,
            f"{harmony.CHANNEL}commentary to=",
            think_open=f"{harmony.CHANNEL}analysis{harmony.MESSAGE}",
            content_lead=f"{harmony.START}{harmony.ASSISTANT}", one_call=True,
        ),
        ModelFormat(
            "minimax_m2", _plain(encode_minimax_m2),
            _tokenizer(minimax_m2.WRAPPER_OPEN, minimax_m2.WRAPPER_CLOSE), THINK_CLOSE,
            minimax_m2.WRAPPER_OPEN, think_open=THINK_OPEN,
        ),
        ModelFormat(
            "mistral", _plain(encode_mistral), _tokenizer(*_MISTRAL), mistral.THINK_CLOSE,
            mistral.TOOL_CALLS, think_open=mistral.THINK_OPEN,
        ),
    )
}  # fmt: skip
DSML_FORMAT = MODEL_FORMATS[DSML_FORMAT_NAME]
