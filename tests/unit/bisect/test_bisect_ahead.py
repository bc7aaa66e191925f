"""Waves ahead of need (--parallel K): idle deployments run the knock-outs' first waves while
the endpoints run, and a trial's next wave while its current one runs. The search, its
evidence and its report stay exactly the serial one's; only when waves run changes."""

from __future__ import annotations

import json

import anyio
import pytest
from test_bisect_parallel import SlowFake, flags, table

from repro.bisect.campaign import bisect_flags
from repro.errors import EngineError
from repro.knobs import describe


class Deployment(SlowFake):
    """A fake deployment that writes its wave folder as the harness does (spec.json first,
    summary.json at the end), remembers when each wave ran, and whose HiCache-off waves take
    four times as long (as on the load-induced engine, where they recompute spilled prefixes)."""

    def __init__(self, *args, fail_once: set[tuple[str, int]] = frozenset(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spans: list[tuple[str, int, float, float]] = []  # config, first id, start, end
        self.fail_once = set(fail_once)

    async def run_wave(self, spec, wave_dir, first_session_id):
        config = describe(spec.knobs)
        started = anyio.current_time()
        wave_dir.mkdir(parents=True)
        (wave_dir / "spec.json").write_text("{}")
        if (config, first_session_id) in self.fail_once:
            self.fail_once.discard((config, first_session_id))
            raise EngineError(f"the engine of {config} did not start")
        if spec.knobs["hicache"] == "off":
            await anyio.sleep(0.03)
        wave = await super().run_wave(spec, wave_dir, first_session_id)
        (wave_dir / "summary.json").write_text("{}")
        self.spans.append((config, first_session_id, started, anyio.current_time()))
        return wave


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("seed", range(3))
def test_waves_ahead_change_when_waves_run_and_nothing_the_search_concludes(tmp_path, seed):
    serial_engine = Deployment(seed=seed)
    serial = bisect_flags(flags(tmp_path / "serial", 1, seed), oracle=serial_engine)
    engine = Deployment(seed=seed)
    parallel = bisect_flags(flags(tmp_path / "parallel", 3, seed), oracle=engine)
    assert table(parallel) == table(serial)
    # Serially nothing runs that the search did not ask for.
    used = {
        (describe(t.config), w.first_session_id) for t in serial.trials for w in t.evidence.waves
    }
    assert sorted((c, f) for c, f, *_ in serial_engine.spans) == sorted(used)

    spans = {(c, f): (s, e) for c, f, s, e in engine.spans}
    endpoints = [spans[(describe(t.config), 0)] for t in (parallel.bad, parallel.good)]
    knockouts = [spans[(describe(t.config), 0)] for t in parallel.knockouts.values()]
    # The first knock-out started while an endpoint was still running (the third deployment
    # would have sat idle)...
    assert any(k[0] < max(e[1] for e in endpoints) for k in knockouts), engine.spans
    # ...and some trial's next wave ran beside its current one (which one depends on how
    # the waves pack: the slow HiCache-off knock-out's two, or an endpoint's).
    assert any(
        overlap(spans[(c, f)], spans[(c, f + 80)]) for c, f in spans if (c, f + 80) in spans
    ), engine.spans


def test_a_wave_ahead_that_is_not_needed_is_kept_aside_and_never_counted(tmp_path):
    engine = Deployment(seed=0)
    out = tmp_path / "parallel"
    report = bisect_flags(flags(out, 3), oracle=engine)
    used = {
        (describe(t.config), w.first_session_id) for t in report.trials for w in t.evidence.waves
    }
    run = [(c, f) for c, f, *_ in engine.spans]
    assert len(run) == len(set(run))  # no wave ran twice
    assert used <= set(run)
    # The cache holds exactly the waves of the report: what ran ahead for nothing is not there.
    cached = {
        (describe(json.loads(path.read_text())["key"]["config"]), wave["first_session_id"])
        for path in (out / "bisect" / "cache").glob("*.json")
        for wave in json.loads(path.read_text())["waves"]
    }
    assert cached == used
    # Every wave folder is one of the report's, one that finished (kept for a later ask), or
    # one cancelled mid-wave and renamed aside; none is left looking like a used wave.
    folders = list((out / "bisect" / "trials").glob("*/wave-*"))
    finished = [f for f in folders if (f / "summary.json").exists()]
    aside = [f for f in folders if "-unused-" in f.name]
    assert len(finished) == len(run)
    assert sorted(folders) == sorted(finished + aside)
    assert all(not (f / "summary.json").exists() for f in aside)


def test_a_failure_on_an_idle_deployment_is_run_again_not_raised(tmp_path):
    """The first wave of the first knock-out runs ahead, on the deployment the endpoints
    leave idle; its engine failing there costs a retry on the trial's own deployment, not the
    campaign. The same failure on the trial's own deployment is the campaign's error."""
    from test_bisect_flags import BAD, GOOD

    revert_topology = describe({**BAD, "topology": GOOD["topology"]})
    engine = Deployment(seed=0, fail_once={(revert_topology, 0)})
    report = bisect_flags(flags(tmp_path / "parallel", 3), oracle=engine)
    serial = bisect_flags(flags(tmp_path / "serial", 1), oracle=Deployment(seed=0))
    assert table(report) == table(serial)
    assert not engine.fail_once  # it did fail once, ahead

    failing = Deployment(seed=0, fail_once={(describe(BAD), 0)})
    with pytest.raises(EngineError, match="did not start"):
        bisect_flags(flags(tmp_path / "fails", 3), oracle=failing)
