"""The trial cache: keys, round trips, atomic writes, and refusing an unreadable entry."""

from __future__ import annotations

import json

import pytest

from repro.bisect.cache import TrialCache, key_digest, trial_key
from repro.bisect.evidence import Evidence, Wave
from repro.errors import ReproError
from repro.spec import RunSpec

CONFIG = {"topology": "pd", "hicache": "on", "index_k": "bf16"}


def test_round_trip_keeps_every_outcome(tmp_path):
    cache = TrialCache(tmp_path)
    key = trial_key(RunSpec(), CONFIG, "engine 1")
    evidence = Evidence(CONFIG, (Wave(0, "..C.", 2.5, "w1"), Wave(4, "E...", 3.0, "w2")))
    assert cache.load(key) is None
    cache.save(key, evidence)
    loaded = cache.load(key)
    assert loaded == evidence
    assert (loaded.sessions_run, loaded.sessions, loaded.corrupted, loaded.next_session_id) == (
        8,
        7,
        1,
        8,
    )
    assert [p.name for p in tmp_path.iterdir()] == [cache.path(key).name]  # no temp file left


@pytest.mark.parametrize(
    "change",
    [
        {"scenario": "generic"},
        {"sessions": 40},
        {"context_max_tokens": 16000},
        {"seed": 1},
        {"settings": {"time_scale": "2"}},
        {"concurrency": 10},
    ],
)
def test_key_changes_with_what_a_session_observes(change):
    base = trial_key(RunSpec(), CONFIG, "engine 1")
    assert trial_key(RunSpec(**change), CONFIG, "engine 1") != base


def test_key_changes_with_configuration_and_engine():
    base = trial_key(RunSpec(), CONFIG, "engine 1")
    assert trial_key(RunSpec(), CONFIG | {"index_k": "fp8"}, "engine 1") != base
    assert trial_key(RunSpec(), CONFIG, "engine 2") != base


def test_key_ignores_where_the_engine_listens():
    base = trial_key(RunSpec(), CONFIG, "engine 1")
    assert trial_key(RunSpec(port=8123, health_timeout_s=5), CONFIG, "engine 1") == base


def test_slurm_trials_are_their_own_and_local_keys_are_as_before():
    """A local trial's key is the one computed before --launcher existed (digest pinned), so
    earlier caches stay valid; Slurm trials differ by launcher and partition only."""
    local = RunSpec(sessions=40, seed=3)
    assert key_digest(trial_key(local, CONFIG, "engine 1")) == "925af07a50880a2be53e"
    slurm = RunSpec(sessions=40, seed=3, launcher="slurm", partition="gpu")
    assert trial_key(slurm, CONFIG, "engine 1") != trial_key(local, CONFIG, "engine 1")
    same = slurm.model_copy(update={"account": "team", "time_limit": "2:00:00", "nodes": 4})
    assert trial_key(same, CONFIG, "engine 1") == trial_key(slurm, CONFIG, "engine 1")
    other = slurm.model_copy(update={"partition": "h100"})
    assert trial_key(other, CONFIG, "engine 1") != trial_key(slurm, CONFIG, "engine 1")


def test_an_unreadable_entry_is_an_error_naming_it(tmp_path):
    cache = TrialCache(tmp_path)
    key = trial_key(RunSpec(), CONFIG, "engine 1")
    cache.path(key).write_text("{ half written")
    with pytest.raises(ReproError, match=r"cannot be read.*delete it"):
        cache.load(key)


@pytest.mark.parametrize("text", ["[]", "null", '"x"', "1"])
def test_an_entry_that_is_not_an_object_is_not_this_trials_evidence(tmp_path, text):
    cache = TrialCache(tmp_path)
    key = trial_key(RunSpec(), CONFIG, "engine 1")
    cache.path(key).write_text(text)
    assert cache.load(key) is None  # measured again, and written over


def test_an_entry_with_this_key_but_damaged_waves_is_an_error_naming_it(tmp_path):
    cache = TrialCache(tmp_path)
    key = trial_key(RunSpec(), CONFIG, "engine 1")
    cache.path(key).write_text(json.dumps({"key": key, "waves": [{"outcomes": "C"}]}))
    with pytest.raises(ReproError, match=r"is not one repro wrote .*delete it"):
        cache.load(key)
