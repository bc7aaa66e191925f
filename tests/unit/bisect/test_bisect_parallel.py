"""--parallel K against fakes whose waves take time: up to K trials in flight, and the same
search, cache and report as with K = 1 (waves run ahead of need: test_bisect_ahead.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fake_oracle import FakeOracle
from test_bisect_flags import BAD, GOOD, STORY_CLASSES, STORY_CULPRIT

from repro.bisect.campaign import FlagCampaign, MatrixCampaign, bisect_flags, bisect_matrix
from repro.bisect.campaign import flag_report_json as as_json
from repro.bisect.progress import render_state
from repro.bisect.together import Request, measure_together
from repro.errors import UsageError
from repro.knobs import describe
from repro.spec import RunSpec

WAVE_TICKS = 20  # event-loop turns a wave takes: enough for the search to start others


class SlowFake(FakeOracle):
    """The seeded fake, with each wave taking turns of the event loop: waves can overlap."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = 0
        self.most_in_flight = 0

    async def run_wave(self, spec, wave_dir, first_session_id):
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.tick(WAVE_TICKS)
            return await super().run_wave(spec, wave_dir, first_session_id)
        finally:
            self.in_flight -= 1


def flags(out: Path, parallel: int, seed: int = 0, **changes) -> FlagCampaign:
    fields = dict(run=RunSpec(seed=seed), bad=BAD, good=GOOD, out_dir=out, parallel=parallel)
    return FlagCampaign(**(fields | changes))


def table(report) -> list[tuple]:
    """What a report says, trial by trial, in its order: label, decision, and its sessions
    (wave by wave, first id and outcomes), which is what the cache holds."""
    return [
        (t.label, t.result.decision, [(w.first_session_id, w.outcomes) for w in t.evidence.waves])
        for t in report.trials
    ]


@pytest.mark.parametrize("seed", range(5))
def test_parallel_search_reports_exactly_what_the_serial_one_does(tmp_path, seed):
    serial = bisect_flags(flags(tmp_path / "serial", 1, seed), oracle=SlowFake(seed=seed))
    fake = SlowFake(seed=seed)
    parallel = bisect_flags(flags(tmp_path / "parallel", 3, seed), oracle=fake)
    assert as_json(parallel)["culprit"] == as_json(serial)["culprit"] == STORY_CULPRIT
    assert as_json(parallel)["classes"] == as_json(serial)["classes"] == STORY_CLASSES
    assert table(parallel) == table(serial) and len(table(serial)) >= 10
    assert fake.most_in_flight == 3  # six knock-outs, three at a time


def test_endpoints_run_together_and_a_refusal_is_one_usage_error(tmp_path):
    clean = SlowFake(rate=lambda config: 0.0)
    with pytest.raises(UsageError, match=r"The bad configuration .* did not reproduce"):
        bisect_flags(flags(tmp_path, 2), oracle=clean)
    assert clean.most_in_flight == 2
    # Serially the refusal comes before good is measured at all, as it always did.
    serial = FakeOracle(rate=lambda config: 0.0)
    with pytest.raises(UsageError, match="did not reproduce"):
        bisect_flags(flags(tmp_path / "serial", 1), oracle=serial)
    assert len({config for config, *_ in serial.waves}) == 1


def test_a_matrix_runs_its_cells_k_at_a_time_in_design_order(tmp_path):
    factors = {"topology": ("single", "pd"), "hicache": ("off", "on"), "index_k": ("fp8", "bf16")}
    fake = SlowFake()
    report, _ = bisect_matrix(
        MatrixCampaign(run=RunSpec(), factors=factors, out_dir=tmp_path, parallel=4), oracle=fake
    )
    serial, _ = bisect_matrix(
        MatrixCampaign(run=RunSpec(), factors=factors, out_dir=tmp_path / "s"), oracle=FakeOracle()
    )
    assert fake.most_in_flight == 4
    assert [c.levels for c in report.cells] == [c.levels for c in serial.cells]
    assert [c.trial.rate for c in report.cells] == [c.trial.rate for c in serial.cells]


def test_progress_shows_every_trial_in_flight(tmp_path):
    states = []

    class Recorder:
        def update(self, state):
            states.append(state)

    bisect_flags(flags(tmp_path, 3), oracle=SlowFake(), progress=Recorder())
    busiest = max(states, key=lambda s: len(s.running))
    assert len(busiest.running) == 3 and busiest.parallel == 3
    assert all(label.startswith("revert ") for label, *_ in busiest.running)
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render_state(busiest))
    text = console.export_text()
    assert "3 of 3 deployments busy" in text
    assert sum(line.startswith("now: revert ") for line in text.splitlines()) == 3


def test_measure_together_with_one_slot_is_the_serial_loop(tmp_path):
    """K = 1: one after another, in order; the first refusal stops before the next starts."""
    from repro.bisect.cache import TrialCache
    from repro.bisect.sprt import SprtSettings
    from repro.bisect.trial import TrialRunner

    fake = FakeOracle()
    runner = TrialRunner(fake, TrialCache(tmp_path), RunSpec(), SprtSettings(), tmp_path / "t")

    def refuse(trial):
        raise UsageError(f"stop after {trial.label}")

    asked = [
        Request("a", {"hicache": "on"}),
        Request("b", {"hicache": "off"}, check=refuse),
        Request("c", {"index_k": "bf16"}),
    ]
    with pytest.raises(UsageError, match="stop after b"):
        anyio.run(measure_together, runner, asked)
    assert list(dict.fromkeys(c for c, *_ in fake.waves)) == [
        "topology=single,hicache=on,index_k=fp8,topk_v2=off,custom_kernels=off,cuda_graph=off",
        "topology=single,hicache=off,index_k=fp8,topk_v2=off,custom_kernels=off,cuda_graph=off",
    ]


def test_parallel_refuses_a_fixed_port_and_does_not_change_the_campaign(tmp_path):
    with pytest.raises(UsageError, match="leave --port out"):
        FlagCampaign.build(run=RunSpec(port=8000), bad=BAD, good=GOOD, parallel=2)
    assert flags(tmp_path, 1).digest() == flags(tmp_path, 3).digest()


class TimedFake(SlowFake):
    """SlowFake that remembers when each wave ran, on the fakes' clock of loop turns."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spans: list[tuple[str, int, float, float]] = []  # config, first id, start, end

    async def run_wave(self, spec, wave_dir, first_session_id):
        started = self.clock
        wave = await super().run_wave(spec, wave_dir, first_session_id)
        config = self.configs_run()[-1]
        self.spans.append((config, first_session_id, started, self.clock))
        return wave


def test_extra_waves_of_unsettled_knock_outs_run_together(tmp_path):
    """After the first pass, every unsettled knock-out gets its next wave in one round: with
    K = 3 those waves overlap, and the serial search runs the very same waves."""

    def rate(config):  # topology's drop and custom_kernels' small one both take more waves
        if config["hicache"] != "on" or config["index_k"] != "bf16":
            return 0.0
        scale = 0.6 if config["custom_kernels"] == "off" else 1.0
        return (0.19 if config["topology"] == "pd" else 0.03) * scale

    fake = TimedFake(rate=rate, seed=2)
    parallel = bisect_flags(flags(tmp_path / "parallel", 3, seed=2), oracle=fake)
    serial = bisect_flags(flags(tmp_path / "serial", 1, seed=2), oracle=SlowFake(rate=rate, seed=2))
    assert table(parallel) == table(serial)
    corrupting = {  # knock-outs that showed corruption: their second wave is an extra one
        describe(trial.config)
        for knob, trial in parallel.knockouts.items()
        if parallel.classes[knob] != "needed"
    }
    extra = [(s, e) for c, first, s, e in fake.spans if c in corrupting and first >= 80]
    overlapping = [
        (a, b) for i, a in enumerate(extra) for b in extra[i + 1 :] if a[0] < b[1] and b[0] < a[1]
    ]
    assert overlapping, fake.spans
