"""DeepSeek-V3.2 DSML literals (research/dsml.md §1.1): fullwidth bars, U+2581 word separator."""

from __future__ import annotations

from dataclasses import dataclass

BAR = "\uff5c"  # ｜ FULLWIDTH VERTICAL LINE, never ASCII '|'
DSML = f"{BAR}DSML{BAR}"
BLOCK_NAME = "function_calls"  # V3.2; DeepSeek-V4 uses "tool_calls"

# A block starts after a blank line; the two newlines are part of the start marker.
BLOCK_LEAD_IN = f"\n\n<{DSML}"  # any generation's block, before its name
BLOCK_START = f"{BLOCK_LEAD_IN}{BLOCK_NAME}>"
BLOCK_OPEN = f"<{DSML}{BLOCK_NAME}>"
BLOCK_CLOSE = f"</{DSML}{BLOCK_NAME}>"
INVOKE_OPEN = f"<{DSML}invoke"
INVOKE_CLOSE = f"</{DSML}invoke>"
PARAM_OPEN = f"<{DSML}parameter"
PARAM_CLOSE = f"</{DSML}parameter>"

# DeepSeek's parser stops at these shorter forms and then demands the rest (`>` + newline)
# from the text that follows, so they are the parser's own delimiters (dsml.md §1.6).
INVOKE_END = f"</{DSML}invoke"
PARAM_END = f"/{DSML}parameter"

BOS = f"<{BAR}begin\u2581of\u2581sentence{BAR}>"
EOS = f"<{BAR}end\u2581of\u2581sentence{BAR}>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

# Markers that may never appear inside reasoning, content or a parameter value (rule 8).
FORBIDDEN_IN_TEXT = (BOS, EOS, THINK_OPEN, THINK_CLOSE, DSML)


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between DSML generations: the block's name (V3.2 `function_calls`)."""

    block_name: str
    foreign_block_names: tuple[str, ...]  # other generations' names: a wrong-format defect

    @property
    def block_opener(self) -> str:
        """`<｜DSML｜function_calls` without `>`: DeepSeek's start marker minus its lead-in."""
        return f"<{DSML}{self.block_name}"

    @property
    def block_close(self) -> str:
        return f"</{DSML}{self.block_name}>"

    @property
    def tag_names(self) -> frozenset[str]:
        return frozenset((self.block_name, "invoke", "parameter"))


V32 = Dialect(BLOCK_NAME, ("tool_calls",))
# DeepSeek-V4 would be Dialect("tool_calls", ("function_calls",)) plus its self-closing
# zero-argument invoke (`<｜DSML｜invoke name="x"/>`, dsml.md §0); not built yet.
