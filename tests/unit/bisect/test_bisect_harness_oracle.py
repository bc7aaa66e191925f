"""The harness oracle: one engine per engine-side configuration, outcomes read per session."""

from __future__ import annotations

import contextlib

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import repro.harness as harness_part
from repro.bisect.cache import key_digest, trial_key
from repro.bisect.harness_oracle import HarnessOracle, session_outcomes
from repro.errors import EngineError
from repro.spec import DEFAULT_PROFILES, RunSpec


def write_turns(run_dir, rows):
    run_dir.mkdir(parents=True, exist_ok=True)
    columns = {
        k: [r[i] for r in rows] for i, k in enumerate(("session_id", "outcome", "corrupted"))
    }
    columns["turn"] = list(range(len(rows)))
    pq.write_table(pa.table(columns), run_dir / "turns.parquet")


def test_outcomes_count_sessions_as_the_run_summary_does(tmp_path):
    write_turns(
        tmp_path,
        [
            (10, "ok", False),
            (10, "ok", True),  # any corrupted judged turn: corrupted
            (11, "ok", False),
            (11, "timeout", False),  # a clean session that later timed out still counts clean
            (12, "http_error", False),  # no judged turn: no evidence
            (14, "ok", False),
        ],
    )
    # Session 13 never produced a row at all.
    assert session_outcomes(tmp_path, 10, 5) == "C.EE."


@pytest.fixture
def fake_harness(monkeypatch):
    started, stopped, driven = [], [], []

    @contextlib.asynccontextmanager
    async def engine(spec, logs_dir, **_launch):
        started.append(dict(spec.knobs))
        try:
            yield f"endpoint-{len(started)}"
        finally:
            stopped.append(dict(spec.knobs))

    async def drive(spec, endpoint, run_dir, *, first_session_id=0, progress=None):
        driven.append((endpoint, first_session_id, spec.sessions))
        rows = [(first_session_id + i, "ok", i == 0) for i in range(spec.sessions)]
        write_turns(run_dir, rows)
        return type("Summary", (), {"errors": 0, "stalls": 0})()

    monkeypatch.setattr(harness_part, "engine", engine)
    monkeypatch.setattr(harness_part, "drive", drive)
    return started, stopped, driven


def oracle():
    path = DEFAULT_PROFILES["sim"]
    return HarnessOracle.for_spec(RunSpec(profile=path))


def test_engine_is_reused_while_only_client_settings_change(tmp_path, fake_harness):
    started, stopped, driven = fake_harness
    harness = oracle()
    bf16 = RunSpec(knobs={"index_k": "bf16"}, sessions=4)

    async def main():
        await harness.run_wave(bf16, tmp_path / "a" / "wave-001", 0)
        await harness.run_wave(bf16, tmp_path / "a" / "wave-002", 4)
        # Client-side only (more sessions, another context schedule): same engine.
        client = bf16.model_copy(update={"sessions": 6, "context_max_tokens": 16000})
        wave = await harness.run_wave(client, tmp_path / "a" / "wave-003", 8)
        assert wave.outcomes == "C....."
        # An engine-side field (a knob) changes: the old engine stops first.
        fp8 = bf16.model_copy(update={"knobs": {"index_k": "fp8"}})
        await harness.run_wave(fp8, tmp_path / "b" / "wave-001", 0)
        await harness.aclose()

    anyio.run(main)
    assert started == [{"index_k": "bf16"}, {"index_k": "fp8"}]
    assert stopped == started
    assert [d[0] for d in driven] == ["endpoint-1"] * 3 + ["endpoint-2"]
    assert [d[1] for d in driven] == [0, 4, 8, 0]  # session ids continue across waves
    assert harness.engine_starts == 2


def test_a_wave_with_no_judged_session_is_an_engine_error(tmp_path, monkeypatch, fake_harness):
    async def drive(spec, endpoint, run_dir, *, first_session_id=0, progress=None):
        write_turns(run_dir, [(first_session_id, "timeout", False)])
        return type("Summary", (), {"errors": 1, "stalls": 0})()

    monkeypatch.setattr(harness_part, "drive", drive)
    harness = oracle()

    async def main():
        try:
            await harness.run_wave(RunSpec(sessions=2), tmp_path / "w", 0)
        finally:
            await harness.aclose()

    with pytest.raises(EngineError, match="No session of the wave"):
        anyio.run(main)


def test_identity_names_engine_version_and_profile_content(tmp_path):
    """A profile that maps one knob otherwise is another engine to the trial cache; the same
    bytes under another path are the same engine."""
    text = DEFAULT_PROFILES["sim"].read_text()
    same = tmp_path / "same.toml"
    same.write_text(text)
    changed = tmp_path / "changed.toml"
    mapping = 'map.on.engine = { env = { SGLANG_OPT_USE_TOPK_V2 = "1" } }'
    assert mapping in text
    changed.write_text(text.replace(mapping, mapping.replace('"1"', '"0"')))
    identities = [
        HarnessOracle.for_spec(RunSpec(profile=path)).identity()
        for path in (DEFAULT_PROFILES["sim"], same, changed)
    ]
    assert identities[0].startswith("repro-sim 0.1 (profile ")
    assert identities[0] == identities[1] != identities[2]
    spec = RunSpec(sessions=4)
    keys = [trial_key(spec, {"index_k": "bf16"}, identity) for identity in identities]
    assert key_digest(keys[0]) == key_digest(keys[1]) != key_digest(keys[2])


def test_an_engine_that_fails_to_start_is_its_one_sentence(tmp_path, monkeypatch):
    """The launcher starts roles in a task group, which wraps their errors; a campaign must
    still end with the role's sentence (exit 2), not a traceback of the group."""

    @contextlib.asynccontextmanager
    async def engine(spec, logs_dir, **_launch):
        death = EngineError("The decode engine process exited with code 1 before it ...")
        raise ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [death])])
        yield  # pragma: no cover

    monkeypatch.setattr(harness_part, "engine", engine)
    with pytest.raises(EngineError, match="The decode engine process exited with code 1"):
        anyio.run(oracle().run_wave, RunSpec(sessions=2), tmp_path / "w", 0)
