"""How a run ends when it cannot write its folder (one StoreError sentence that says what is
kept) or when a bug stops it (summary.json says so)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

import repro.harness.lifecycle.whole_run as whole_run
from repro.errors import EngineError, StoreError
from repro.harness.lifecycle.final_summary import ended_because, write_summary
from repro.harness.lifecycle.run_outcome import RunStopped
from repro.results import store as store_module
from repro.results.store import RunStore
from repro.results.summary import summarize
from repro.spec import RunSpec


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunStore:
    monkeypatch.setattr(store_module, "RETRY_AFTER_S", (0.0, 0.0))
    return RunStore(tmp_path / "run")


def block_summary(store: RunStore) -> None:
    """A folder where summary.json goes: the rename onto it fails (EISDIR), as a bad disk would."""
    (store.run_dir / "summary.json").mkdir()
    (store.run_dir / "summary.json" / "x").write_text("x")


def test_a_write_error_says_summary_json_holds_the_reason(store: RunStore) -> None:
    error = StoreError("Cannot write part-000003.parquet: No space left on device (3 tries)")
    store.rows_lost = 7
    raised = write_summary(store, summarize([], config={}, wall_s=1.0), error)
    assert isinstance(raised, StoreError)
    assert str(raised).endswith("(3 tries), and 7 later turns are lost; summary.json says why.")
    assert (store.run_dir / "summary.json").is_file()


def test_when_summary_json_cannot_be_written_either_the_sentence_says_so(store: RunStore) -> None:
    block_summary(store)
    error = StoreError("Cannot write part-000003.parquet: No space left on device (3 tries)")
    raised = write_summary(store, summarize([], config={}, wall_s=1.0), error)
    assert str(raised).endswith("; summary.json could not be written either (Is a directory).")


def test_a_run_that_went_well_but_cannot_write_its_summary_is_an_error(store: RunStore) -> None:
    block_summary(store)
    raised = write_summary(store, summarize([], config={}, wall_s=1.0), None)
    assert isinstance(raised, StoreError)
    assert "summary.json: Is a directory (3 tries); the turns are kept in" in str(raised)
    assert "recomputes the summary from them." in str(raised)


def test_an_engine_error_survives_a_summary_written_fine(store: RunStore) -> None:
    died = EngineError("The decode engine exited with code 1.")
    assert write_summary(store, summarize([], config={}, wall_s=1.0), died) is died
    assert ended_because(died) == "engine_failed" and ended_because(None) is None


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_bug_is_an_error_of_exit_2_with_its_traceback_kept_in_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrapped: bool
) -> None:
    """A bug in repro (here while the engine starts, bare or inside a task group's group) ends
    the run as an error (exit 2: never the 1 of corruption), in one sentence that names the
    file holding its traceback; summary.json must not call that run completed."""

    @contextlib.asynccontextmanager
    async def engine(spec, logs_dir, resolved, **_):  # type: ignore[no-untyped-def]
        bug = RuntimeError("a health URL that cannot be parsed")
        raise ExceptionGroup("unhandled errors in a TaskGroup", [bug]) if wrapped else bug
        yield  # pragma: no cover

    monkeypatch.setattr(whole_run, "engine", engine)
    with pytest.raises(RunStopped) as stopped:
        whole_run.run(RunSpec(sessions=1, knobs={"topology": "single"}), tmp_path / "run")
    saved = tmp_path / "run" / "repro-traceback.txt"
    sentence = (
        "repro stopped on an internal error (RuntimeError: a health URL that cannot be parsed); "
        f"its traceback is in {saved}; please report it"
    )
    assert stopped.value.exit_code == 2 and str(stopped.value) == sentence
    assert "Traceback" in saved.read_text() and "health URL" in saved.read_text()
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["ended_because"] == "error" and written["interrupted"] is False
    assert written["error"] == sentence
