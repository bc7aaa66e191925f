"""The rates split by request shape, and the consistency checks' figures, from turn records."""

from __future__ import annotations

import pytest

from repro.results.report import summary_rows
from repro.results.shape_view import describe_in_flight, in_flight_by_axis
from repro.results.summary import summarize
from tests.unit.results.test_store import record


def turns() -> list:
    rows = []
    for i in range(40):
        required = i % 4 == 0
        shape = (
            f"tool_choice={'required' if required else 'auto'} stream={'off' if i % 2 else 'on'}"
        )
        broken = required and i % 8 == 0  # 5 of the 10 required turns
        kinds = ["grammar_violated"] if broken else []
        rows.append(record(i // 4, i % 4, corrupted=broken, defect_kinds=kinds, shape=shape,
                           twin="agree" if i % 5 else "numerical"))  # fmt: skip
    rows.append(record(11, 0, outcome="transport_error", shape="tool_choice=required stream=on"))
    return rows


def test_each_axis_value_is_a_rate_of_its_own() -> None:
    s = summarize(turns(), config={}, wall_s=1.0)
    required, auto = s.by_shape["tool_choice=required"], s.by_shape["tool_choice=auto"]
    assert (required["n"], required["corrupted"], required["errors"]) == (10, 5, 1)
    assert required["rate"] == 0.5 and required["ci"][0] < 0.5 < required["ci"][1]
    assert (auto["n"], auto["corrupted"]) == (30, 0) and auto["ci"][1] < 0.15
    assert required["kinds"] == {"grammar_violated": 5}
    assert list(s.by_shape) == [
        "tool_choice=auto",
        "tool_choice=required",
        "stream=on",
        "stream=off",
    ]
    rows = {r.label.strip(): r.text for r in summary_rows(s, None)}
    assert rows["tool_choice=required"].startswith("5/10 = 50.0%")


def test_the_consistency_block_counts_invariants_and_twins() -> None:
    s = summarize(turns(), config={}, wall_s=1.0)
    invariants, stream = s.consistency["invariants"], s.consistency["stream"]
    assert (invariants["n"], invariants["corrupted"]) == (40, 5)
    assert invariants["kinds"] == {"grammar_violated": 5}
    assert (stream["n"], stream["agree"], stream["numerical"], stream["corrupted"]) == (
        40,
        32,
        8,
        0,
    )


def test_a_run_without_a_mix_has_no_split() -> None:
    s = summarize([record(0, 0)], config={}, wall_s=1.0)
    assert s.by_shape == {} and "stream" not in s.consistency


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        ({"stream=off n=2": 2, "stream=on n=1": 1, "stream=on n=2": 0}, "3 requests (stream=on 1, stream=off 2, n=1 1, n=2 2)"),
        ({"": 1}, "1 request"),
    ],
)  # fmt: skip
def test_requests_in_flight_are_told_by_shape(labels: dict[str, int], said: str) -> None:
    assert describe_in_flight(in_flight_by_axis(labels)) == said
