"""DeepSeek-V3.2 DSML literals (research/dsml.md §1.1): fullwidth bars, U+2581 word separator."""

BAR = "\uff5c"  # ｜ FULLWIDTH VERTICAL LINE, never ASCII '|'
DSML = f"{BAR}DSML{BAR}"
BLOCK_NAME = "function_calls"  # V3.2; DeepSeek-V4 uses "tool_calls"

BLOCK_START = f"\n\n<{DSML}{BLOCK_NAME}>"  # the two newlines are part of the start marker
BLOCK_OPEN = f"<{DSML}{BLOCK_NAME}>"
BLOCK_CLOSE = f"</{DSML}{BLOCK_NAME}>"
INVOKE_OPEN = f"<{DSML}invoke"
INVOKE_CLOSE = f"</{DSML}invoke>"
PARAM_OPEN = f"<{DSML}parameter"
PARAM_CLOSE = f"</{DSML}parameter>"

BOS = f"<{BAR}begin\u2581of\u2581sentence{BAR}>"
EOS = f"<{BAR}end\u2581of\u2581sentence{BAR}>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

# Markers that may never appear inside reasoning, content or a parameter value (rule 8).
FORBIDDEN_IN_TEXT = (BOS, EOS, THINK_OPEN, THINK_CLOSE, DSML)
