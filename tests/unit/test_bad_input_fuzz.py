"""Generated bad input of every kind (options, profiles, tools files, damaged run folders,
hostile servers, schema patterns, output paths, standard streams):
repro answers each with an exit code it documents, exit 2 in one sentence, never a
traceback and never a hang. bench/fuzz_bad_input.py runs thousands of the same examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bad_inputs import FAMILIES, check_answer, make_run_folder, scratch

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run_folder(tmp_path_factory.mktemp("fuzz") / "run")


# Each example of these runs repro as a real process twice or more (seconds, not milliseconds).
SLOW_FAMILIES = ("streams",)


@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in SLOW_FAMILIES])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_bad_input_is_answered_in_one_sentence_never_a_traceback(
    family: str, base_run: Path, data: st.DataObject
) -> None:
    with scratch() as folder:
        check_answer(data.draw(FAMILIES[family](folder, base_run)))


@pytest.mark.parametrize("family", SLOW_FAMILIES)
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hostile_streams_never_change_an_exit_code(
    family: str, base_run: Path, data: st.DataObject
) -> None:
    with scratch() as folder:
        check_answer(data.draw(FAMILIES[family](folder, base_run)))
