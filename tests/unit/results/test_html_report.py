"""The HTML page: the summary's figures as printed, one inline SVG per plot, escaped run text."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.errors import UsageError
from repro.results.html_report import render_html, write_html_report
from repro.results.reading import RunFolder, read_run
from repro.results.stats import wilson
from repro.results.summary import summarize
from tests.unit.results.test_reading import write_run
from tests.unit.results.test_store import record

PLOTS = 4


def folder_of(records, **kw) -> RunFolder:
    return RunFolder(Path("/runs/r1"), records, summarize(records, config={}, wall_s=5.0, **kw))


def test_the_page_shows_the_summarys_rates_and_one_svg_per_plot(tmp_path: Path) -> None:
    folder = read_run(write_run(tmp_path / "run", corrupted=12, sessions=40))
    page = render_html(folder)
    assert str(wilson(12, 40)) + "  (95% Wilson interval)" in page  # as the terminal prints it
    assert "index_k=bf16" in page and "malformed_markup" in page
    assert page.count("<svg") == PLOTS and "no data" not in page
    assert "<script" not in page and not re.search(r"(src|href)=['\"]?https?://", page)


def test_run_text_is_escaped() -> None:
    bad = record(corrupted=True, first_defect="semantic@content:0: <script>alert(1)</script>")
    page = render_html(folder_of([bad], error="engine said <b>no</b>"))
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "engine said &lt;b&gt;no&lt;/b&gt;" in page


def test_an_empty_interrupted_run_renders_with_no_data() -> None:
    page = render_html(folder_of([], interrupted=True))
    assert page.count("<svg") == PLOTS and page.count("no data") == PLOTS
    assert "n/a (0 measured)" in page and "interrupted" in page
    assert "Corrupted turns</h2>\n<p>none</p>" in page


def test_turns_without_prompt_tokens_are_counted_as_left_out() -> None:
    page = render_html(folder_of([record(session_id=i, prompt_tokens=None) for i in range(3)]))
    assert "3 judged turns without prompt_tokens are left out." in page
    assert page.count("no data") == 2  # context and latency; concurrency and timeline remain


def test_the_corrupted_table_lists_the_first_twenty(tmp_path: Path) -> None:
    turns = [record(session_id=i, turn=1, corrupted=True) for i in range(25)]
    page = render_html(folder_of(turns))
    assert "the first 20 of 25" in page and page.count("<code>malformed_markup@content:3") == 20


def denied(self: Path, *args: object, **kwargs: object) -> None:
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))


def test_an_unwritable_destination_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    folder = folder_of([])
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(UsageError, match=r"a-file is a file, not a folder"):
        write_html_report(folder, blocker / "out.html")
    with pytest.raises(UsageError, match="is a folder; give the path"):
        write_html_report(folder, tmp_path)
    with monkeypatch.context() as m:  # a read-only folder, even for root (who may write anywhere)
        m.setattr(Path, "write_text", denied)
        with pytest.raises(UsageError, match=r"out.html: Permission denied\.$"):
            write_html_report(folder, tmp_path / "out.html")
    write_html_report(folder, tmp_path / "out.html")
    assert (tmp_path / "out.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_command_writes_the_page_and_says_one_sentence_when_it_cannot(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", corrupted=0, sessions=0)
    page = tmp_path / "page.html"
    done = CliRunner().invoke(app, ["report", str(run), "--json", "--html", str(page)])
    assert done.exit_code == 0 and json.loads(done.stdout)["sessions"] == 0
    assert page.read_text(encoding="utf-8").count("<svg") == PLOTS
    (tmp_path / "a-file").write_text("")
    blocked = CliRunner().invoke(
        app, ["report", str(run), "--html", str(tmp_path / "a-file" / "p.html")]
    )
    assert blocked.exit_code == 2 and blocked.stdout == ""
    assert "is a file, not a folder." in blocked.stderr and blocked.stderr.count("\n") == 1
    nested = tmp_path / "pages" / "today" / "p.html"  # a missing folder is made
    assert CliRunner().invoke(app, ["report", str(run), "--html", str(nested)]).exit_code == 0
    assert nested.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


OVER_A_RUNS_FILE = "would write over a run's own file; name a new file"


@pytest.mark.parametrize(
    "target",
    [
        "run/turns.parquet/part-000000.parquet",
        "run/turns.parquet",
        "run/spec.json",
        "run/summary.json",
        "other/summary.json",  # another run's file
        "other/failures.jsonl",
        "link.html",  # a symlink to this run's spec.json
    ],
)
def test_the_page_never_overwrites_a_runs_own_files(tmp_path: Path, target: str) -> None:
    run = write_run(tmp_path / "run", corrupted=1, sessions=4)
    other = write_run(tmp_path / "other", corrupted=0, sessions=4)
    (other / "failures.jsonl").write_text("")
    (tmp_path / "link.html").symlink_to(run / "spec.json")
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    before = [p.read_bytes() for p in files]
    with pytest.raises(UsageError, match=OVER_A_RUNS_FILE):
        write_html_report(read_run(run), tmp_path / target)
    assert [p.read_bytes() for p in files] == before
    write_html_report(read_run(run), run / "report.html")  # a page beside them is fine
    write_html_report(read_run(run), run / "report.html")  # and may be redrawn
