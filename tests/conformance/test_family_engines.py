"""A sample of the conformance run (tests/conformance/family_table.py) on every CI run: for
each format, one case of every kind of disagreement the full run recorded, and healthy turns
both engines agree on, through SGLang's detector and vLLM's parser, whole and streamed. Each
case must still end as the full run recorded it, so the table in docs/checkers.md stays true."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.conformance.family_outcomes import AGREE, DISAGREEMENTS
from tests.conformance.family_table import load_record, run_engine
from tests.formats_corpus import FAMILIES, cases

RECORDED: dict[str, str] = load_record()


def _sample() -> list:
    """Per format: the shortest case of each (engine, mode, category) the run recorded, and
    the two shortest generated healthy turns (short: engines' streaming parsers re-read
    their buffer, so a long case costs seconds)."""
    by_id = {c.id: c for f in FAMILIES for c in cases(f)}
    shortest: dict[tuple, str] = {}
    for key, category in RECORDED.items():
        engine, mode, case_id = key.split(" ", 2)
        group = (case_id.split("/")[0], engine, mode, category)
        best = shortest.get(group)
        if best is None or len(by_id[case_id].text) < len(by_id[best].text):
            shortest[group] = case_id
    chosen = set(shortest.values())
    for family in FAMILIES:
        healthy = [c for c in cases(family) if "/clean/" in c.id and c.calls]
        chosen |= {c.id for c in sorted(healthy, key=lambda c: len(c.text))[:2]}
    return [by_id[i] for i in sorted(chosen)]


def test_the_record_is_a_full_run() -> None:
    categories = Counter(RECORDED.values())
    assert set(categories) <= set(DISAGREEMENTS)
    assert {key.split(" ")[0] for key in RECORDED} == {"sglang", "vllm"}
    assert {key.split(" ")[2].split("/")[0] for key in RECORDED} == set(FAMILIES)


def test_a_sample_ends_as_recorded(sglang_python: Path, vllm_python: Path) -> None:
    sample = _sample()
    assert 30 <= len(sample) <= 150  # seconds, not minutes
    found = run_engine("sglang", sample, sglang_python) + run_engine("vllm", sample, vllm_python)
    live = {f"{o.engine} {o.mode} {o.case}": o.category for o in found}
    expected = {key: RECORDED.get(key, AGREE) for key in live}
    assert live == expected
    assert sum(category != AGREE for category in live.values()) >= 20
