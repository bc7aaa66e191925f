"""SGLang's own DSML test cases, read by SGLang's DeepSeekV32Detector and by our checker.

Well-formed cases: no defect, and both read exactly the same calls. Cases where SGLang is
lenient: we flag them with the kinds listed, the case names the rule, and SGLang's reading
is pinned so a change in SGLang shows up here.
"""

from __future__ import annotations

import json

import pytest
from sglang_cases import CASES, TOOLS, Case

from repro.checkers.dsml.stream import parse_dsml
from repro.checkers.toolset import ToolSet

TOOLSET = ToolSet.from_openai(TOOLS)


@pytest.fixture(scope="module")
def sglang_reads(sglang) -> dict[str, list]:
    results = sglang.ask("detect", [{"text": c.text, "tools": TOOLS} for c in CASES])
    return {
        c.name: [(n, json.loads(a)) for n, a in r["calls"]]
        for c, r in zip(CASES, results, strict=True)
    }


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sglang_case(case: Case, sglang_reads) -> None:
    verdict = parse_dsml(case.text, TOOLSET)
    ours = [(c.name, json.loads(c.arguments)) for c in verdict.calls]
    kinds = {str(d.kind) for d in verdict.defects}
    if case.calls is not None:
        assert kinds == set(), verdict.defects
        assert ours == case.calls
        assert sglang_reads[case.name] == ours
        return
    assert case.rule, "a flagged case must name the rule SGLang does not enforce"
    assert kinds == case.kinds, verdict.defects
    if case.sglang_calls is not None:
        assert sglang_reads[case.name] == case.sglang_calls


def test_well_formed_cases_agree_when_streamed_through_sglang(sglang) -> None:
    """SGLang's streaming path, fed the well-formed cases in 1-, 3- and 7-character chunks."""
    well_formed = [c for c in CASES if c.calls]
    requests = [
        {"chunks": [c.text[i : i + size] for i in range(0, len(c.text), size)], "tools": TOOLS}
        for c in well_formed
        for size in (1, 3, 7)
    ]
    results = sglang.ask("stream", requests)
    for i, result in enumerate(results):
        case = well_formed[i // 3]
        assert [(n, json.loads(a)) for n, a in result["calls"]] == case.calls, case.name
