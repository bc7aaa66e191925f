"""exit_on_error: what a user caused is one sentence and an exit code; a bug keeps its traceback."""

from __future__ import annotations

import errno

import pytest
import typer

from repro.cli_options import exit_on_error
from repro.errors import UsageError


def test_a_usage_error_is_its_sentence_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as ended, exit_on_error():
        raise UsageError("Profile [x] is bad.")
    assert ended.value.exit_code == 2
    assert capsys.readouterr().err.strip() == "error: Profile [x] is bad."


def test_a_path_that_cannot_be_used_is_one_sentence_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit) as ended, exit_on_error():
        raise OSError(errno.EACCES, "Permission denied", "/srv/results/run")
    assert ended.value.exit_code == 2
    assert capsys.readouterr().err.strip() == (
        "error: Cannot use /srv/results/run: Permission denied."
    )


def test_an_os_error_about_no_path_is_left_as_a_bug() -> None:
    with pytest.raises(ConnectionResetError), exit_on_error():
        raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
