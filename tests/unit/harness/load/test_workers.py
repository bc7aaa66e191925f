"""How sessions are shared over workers, and how many workers repro starts by default."""

from __future__ import annotations

import pytest

from repro.harness.load.workers import shares
from repro.spec import RunSpec


def test_every_session_goes_to_exactly_one_worker_and_concurrency_adds_up() -> None:
    parts = shares(range(10, 110), concurrency=7, workers=3)
    ids = sorted(i for part, _ in parts for i in part)
    assert ids == list(range(10, 110))
    assert [concurrency for _, concurrency in parts] == [3, 2, 2]
    assert list(parts[1][0][:3]) == [11, 14, 17]  # every third: starts interleave


@pytest.mark.parametrize(
    ("fields", "workers"),
    [
        ({"sessions": 80}, 1),  # the story's load: one event loop is plenty
        ({"sessions": 2000, "concurrency": 600}, 2),  # capped by the CPUs (2 here)
        ({"sessions": 2000, "concurrency": 260}, 2),
        ({"sessions": 4, "workers": 8}, 4),  # never more workers than sessions in flight
        ({"sessions": 900, "workers": 1}, 1),
    ],
)
def test_the_default_is_one_worker_per_250_sessions_in_flight_at_most_one_per_cpu(
    fields: dict, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    assert RunSpec.build(**fields).effective_workers() == workers
