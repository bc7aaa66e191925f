"""Per-turn verdicts: DSML grammar and the other tool-call formats' (families/), tool-call
schemas, leaked markup and text defects.

`check_turn` is what the load generator calls for every assistant turn; the defect kinds
are listed in `repro.checkers.kinds` and docs/checkers.md.
"""

from repro.checkers.dsml.stream import DsmlStream, parse_dsml
from repro.checkers.formats import FORMATS, Format
from repro.checkers.kinds import Kind
from repro.checkers.toolset import ToolSet, toolset_for
from repro.checkers.turn import check_turn
from repro.checkers.verdict import AssistantOutput, Defect, ToolCall, Verdict

__all__ = [
    "FORMATS",
    "AssistantOutput",
    "Defect",
    "DsmlStream",
    "Format",
    "Kind",
    "ToolCall",
    "ToolSet",
    "Verdict",
    "check_turn",
    "parse_dsml",
    "toolset_for",
]
