"""Strict validators for tool-call formats other than DSML, one module per family.

Each is a `Family` (family.py): `check(output, tools) -> Verdict` on a whole turn and
`stream(tools)` for text fed in chunks, with the same verdict. `FAMILIES` is the registry
`repro check --format` reads through repro/checkers/formats.py.
"""

from repro.checkers.families.deepseek_v31 import DEEPSEEK_V31
from repro.checkers.families.family import Family, FamilyStream
from repro.checkers.families.glm import GLM45, GLM47
from repro.checkers.families.harmony import HARMONY
from repro.checkers.families.hermes import HERMES
from repro.checkers.families.kimi_k2 import KIMI_K2
from repro.checkers.families.minimax_m2 import MINIMAX_M2
from repro.checkers.families.mistral import MISTRAL
from repro.checkers.families.qwen3_coder import QWEN3_CODER

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        QWEN3_CODER,
        HERMES,
        DEEPSEEK_V31,
        KIMI_K2,
        GLM45,
        GLM47,
        HARMONY,
        MINIMAX_M2,
        MISTRAL,
    )
}

__all__ = ["FAMILIES", "Family", "FamilyStream"]
