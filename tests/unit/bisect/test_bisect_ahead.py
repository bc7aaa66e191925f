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
    summary.json at the end), remembers when each wave ran and whether the same wave was ever
    run twice at once, and whose HiCache-off waves take four times as long (as on the
    load-induced engine, where they recompute spilled prefixes)."""

    def __init__(self, *args, fail_once: set[tuple[str, int]] = frozenset(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.wave_ticks, self.slow = 20, ({"hicache": "off"}, 4.0)
        self.spans: list[tuple[str, int, float, float]] = []  # config, first id, start, end
        self.fail_once = set(fail_once)
        self.running: set[tuple[str, int]] = set()
        self.twice_at_once: list[tuple[str, int]] = []

    async def run_wave(self, spec, wave_dir, first_session_id):
        wave = (describe(spec.knobs), first_session_id)
        if wave in self.running:
            self.twice_at_once.append(wave)
        self.running.add(wave)
        try:
            started = self.clock
            wave_dir.mkdir(parents=True)
            (wave_dir / "spec.json").write_text("{}")
            if wave in self.fail_once:
                self.fail_once.discard(wave)
                raise EngineError(f"the engine of {wave[0]} did not start")
            try:
                outcome = await super().run_wave(spec, wave_dir, first_session_id)
            except anyio.get_cancelled_exc_class():
                # Stopped mid-wave: the harness still scrapes metrics and writes the summary.
                with anyio.CancelScope(shield=True):
                    await self.tick(10)
                    (wave_dir / "summary.json").write_text("{}")
                raise
            (wave_dir / "summary.json").write_text("{}")
            self.spans.append((*wave, started, self.clock))
            return outcome
        finally:
            self.running.discard(wave)


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
    # would have sat idle).
    assert any(k[0] < max(e[1] for e in endpoints) for k in knockouts), engine.spans


def test_a_trial_runs_its_next_wave_beside_its_current_one(tmp_path):
    """Two deployments and one trial that needs three waves: the idle deployment runs the
    second while the first runs; the trial takes them in order, and only the three."""
    from repro.bisect.cache import TrialCache
    from repro.bisect.parallel import OraclePool
    from repro.bisect.sprt import SprtSettings
    from repro.bisect.trial import TrialRunner
    from repro.spec import RunSpec

    engine = Deployment(seed=0)
    runner = TrialRunner(
        OraclePool([engine, engine]),
        TrialCache(tmp_path / "c"),
        RunSpec(),
        SprtSettings(),
        tmp_path / "t",
    )

    async def measure():
        async with runner.running_ahead():
            return await runner.measure("t", {"hicache": "on"}, lambda ev: ev.sessions_run >= 240)

    trial = anyio.run(measure)
    assert [w.first_session_id for w in trial.evidence.waves] == [0, 80, 160]
    spans = {first: (start, end) for _, first, start, end in engine.spans}
    assert overlap(spans[0], spans[80]), spans  # then 160, on the first one free
    assert engine.twice_at_once == []


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
    # one cancelled mid-wave and renamed aside (its summary written, as the harness does).
    folders = list((out / "bisect" / "trials").glob("*/wave-*"))
    aside = [f for f in folders if "-unused-" in f.name]
    kept = [f for f in folders if f not in aside]
    assert len(kept) == len(run) and all((f / "summary.json").exists() for f in kept)
    assert aside  # this seed cancels some


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


@pytest.mark.parametrize("seed", range(12))
def test_no_wave_runs_twice_at_once(tmp_path, seed):
    """A wave ahead cancelled as not needed, then asked for again by the next round, while
    an idle deployment starts it ahead once more: one of them must wait for the other (two
    runs of one wave would write into one folder). Wave spread makes rounds of extra waves."""
    engine = Deployment(seed=seed, wave_spread=0.35)
    bisect_flags(flags(tmp_path, 3, seed), oracle=engine)
    assert engine.twice_at_once == []
