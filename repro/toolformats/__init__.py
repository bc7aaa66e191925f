"""Tool-call wire formats other than DSML: each family's markers and what a healthy model writes.

Below both the embedded engine and the checkers, as `repro.dsml` is: the engine writes these
formats, the checkers read them (repro/checkers/families/). Facts and sources:
research/toolformats.md §1b and each model's chat template, cited per module.
"""

from repro.toolformats.deepseek_v31 import encode_deepseek_v31
from repro.toolformats.glm import encode_glm45, encode_glm47
from repro.toolformats.harmony import encode_harmony
from repro.toolformats.hermes import encode_hermes
from repro.toolformats.kimi_k2 import encode_kimi_k2
from repro.toolformats.minimax_m2 import encode_minimax_m2
from repro.toolformats.mistral import encode_mistral
from repro.toolformats.qwen3_coder import encode_qwen3_coder

ENCODERS = {
    "qwen3_coder": encode_qwen3_coder,
    "hermes": encode_hermes,
    "deepseek_v31": encode_deepseek_v31,
    "kimi_k2": encode_kimi_k2,
    "glm45": encode_glm45,
    "glm47": encode_glm47,
    "harmony": encode_harmony,
    "minimax_m2": encode_minimax_m2,
    "mistral": encode_mistral,
}

__all__ = [
    "ENCODERS",
    "encode_deepseek_v31",
    "encode_glm45",
    "encode_glm47",
    "encode_harmony",
    "encode_hermes",
    "encode_kimi_k2",
    "encode_minimax_m2",
    "encode_mistral",
    "encode_qwen3_coder",
]
