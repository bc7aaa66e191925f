"""The harness's entry point: one verdict per assistant turn, in the client process."""

from __future__ import annotations

from collections.abc import Sequence

from repro.checkers.formats import FORMATS, check_dsml_v32, check_openai_parsed
from repro.checkers.toolset import toolset_for
from repro.checkers.verdict import AssistantOutput, Verdict


def check_turn(output: AssistantOutput, tools: Sequence[dict], format: str = "dsml-v32") -> Verdict:
    """Check one turn against the request's tools, in `format` (a name of FORMATS).

    With server-parsed `tool_calls`, those are checked (openai-parsed) and the content may
    hold no markup at all; without them the content is read as raw DSML (prose, prose and
    a block, or the whole completion), or as the named family's raw text. Reasoning is
    always plain text. Raises ValueError if the tools themselves are invalid, KeyError for
    an unknown format.
    """
    toolset = toolset_for(tools)
    if format != "dsml-v32":
        return FORMATS[format].check(output, toolset)
    if output.tool_calls:
        return check_openai_parsed(output, toolset)
    return check_dsml_v32(output, toolset)
