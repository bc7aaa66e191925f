"""DeepSeek-V3.2 DSML, the format itself: its literals and the reference-exact encoder.

Both sides of the wire use it: the embedded engine writes DSML (repro.sim) and the checkers
read it (repro.checkers.dsml), so neither imports the other for it.
"""

from repro.dsml.encode import encode_completion, encode_tool_calls
from repro.dsml.markers import V32, Dialect

__all__ = ["V32", "Dialect", "encode_completion", "encode_tool_calls"]
