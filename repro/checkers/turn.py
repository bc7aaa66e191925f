"""The harness's entry point: one verdict per assistant turn, in the client process."""

from __future__ import annotations

from collections.abc import Sequence

from repro.checkers.formats import check_dsml_v32, check_openai_parsed
from repro.checkers.toolset import toolset_for
from repro.checkers.verdict import AssistantOutput, Verdict


def check_turn(output: AssistantOutput, tools: Sequence[dict]) -> Verdict:
    """Check one turn against the request's tools; the format follows from the output.

    With server-parsed `tool_calls`, those are checked (openai-parsed) and the content may
    hold no markup at all; without them the content is read as raw DSML (prose, prose and
    a block, or the whole completion). Reasoning is always plain text. Raises ValueError
    if the tools themselves are invalid.
    """
    toolset = toolset_for(tools)
    if output.tool_calls:
        return check_openai_parsed(output, toolset)
    return check_dsml_v32(output, toolset)
