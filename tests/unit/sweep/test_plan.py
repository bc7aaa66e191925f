"""SweepPlan: the lists it takes, the points it makes, what it refuses (one sentence each)."""

from __future__ import annotations

import pytest

from repro.errors import UsageError
from repro.spec import RunSpec
from repro.sweep import SweepPlan, parse_counts


def test_counts_parse_and_refuse_what_is_not_a_list_of_whole_numbers() -> None:
    assert parse_counts("1, 10,20", "--sessions") == (1, 10, 20)
    assert parse_counts("80_000", "--context-max") == (80_000,)
    for text in ("", "1,,2", "1.5", "ten", "-1"):
        with pytest.raises(UsageError, match=r"--sessions .* is not a comma-separated list"):
            parse_counts(text, "--sessions")
    with pytest.raises(UsageError, match="lists a value twice"):
        parse_counts("10,10", "--sessions")


def test_points_cross_sessions_and_contexts_in_curve_order() -> None:
    base = RunSpec.build(sessions=80, seed=3, knobs={"index_k": "bf16"})
    plan = SweepPlan.build(run=base, sessions=(40, 1), contexts_tokens=(80_000, 16_000))
    points = plan.points()
    assert [(p.context_max_tokens, p.sessions) for p in points] == [
        (16_000, 1), (16_000, 40), (80_000, 1), (80_000, 40),
    ]  # fmt: skip
    assert all(p.spec.seed == 3 and p.spec.knobs == {"index_k": "bf16"} for p in points)
    assert points[1].spec.sessions == 40 and points[1].spec.context_max_tokens == 16_000
    assert points[0].describe() == "1 session to 16,000 tokens" and points[0].label == "s001-c16000"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"sessions": (0, 4)}, "Invalid --sessions: 0: input should be greater than or equal to 1"),
        ({"contexts_tokens": (3000,)}, "Invalid --context-max: 3,000:"),
        ({"sessions": ()}, "Invalid --sessions:"),
        ({"run": RunSpec.build(url="http://127.0.0.1:9")}, "--url cannot be used"),
    ],
)
def test_bad_plans_fail_in_one_sentence(fields: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        SweepPlan.build(**({"run": RunSpec()} | fields))
