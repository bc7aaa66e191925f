"""Out-of-range run options are refused by the option the user typed, before anything runs."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from repro.cli import app


@pytest.mark.parametrize(
    ("option", "value", "why"),
    [
        ("--sessions", "200000", "Input should be less than or equal to 100000"),
        ("--context-max", "2000000", "Input should be less than or equal to 1000000"),
        ("--health-timeout", "0", "0 is not in the range 0.001<=x"),
        ("--abort-rate", "1.5", "1.5 is not in the range 0<=x<=1"),
        # NaN fails every comparison: it must be named as what it is, not as a bound missed
        ("--abort-rate", "nan", "nan is not a finite number"),
        ("--ramp-up", "NaN", "NaN is not a finite number"),
        ("--turn-timeout", "inf", "inf is not a finite number"),
        ("--stall-after", "ten", "'ten' is not a number"),
    ],
)
def test_an_out_of_range_option_is_one_line_naming_it_as_typed(
    option: str, value: str, why: str
) -> None:
    result = CliRunner().invoke(app, ["run", "--dry-run", option, value])
    assert result.exit_code == 2
    assert result.stderr == (f"error: Invalid value for '{option}': {why}. See 'root run -h'.\n"), (
        result.stderr
    )


def test_click_s_other_refusals_are_one_line_too() -> None:
    unknown = CliRunner().invoke(app, ["run", "--junit", "j.xml"])
    assert (unknown.exit_code, unknown.stderr.count("\n")) == (2, 1)
    assert unknown.stderr.startswith("error: No such option: --junit")
    missing = CliRunner().invoke(app, ["report"])
    assert (missing.exit_code, missing.stderr) == (
        2,
        "error: Missing argument 'RUN_DIR'. See 'root report -h'.\n",
    )
    nothing = CliRunner().invoke(app, [])  # no command: the help, and exit 2 as click has it
    assert nothing.exit_code == 2 and "Commands" in nothing.stdout and nothing.stderr == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["bisect", "flags", "--bad", "topology=pd", "--good", "topology=single", "--p0", "nan"],
        ["proxy", "--upstream", "http://127.0.0.1:9", "--port", "9", "--rate", "nan"],
    ],
)
def test_nan_is_refused_as_not_finite_where_a_model_checks_the_range(argv: list[str]) -> None:
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    assert result.stderr == f"error: Invalid {argv[-2]}: Input should be a finite number.\n"


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["run", "--dry-run", "--profile", ""], "'--profile'"),
        (["run", "--dry-run", "--out", " "], "'--out'"),
        (["gate", "--junit", ""], "'--junit'"),
        (["report", ""], "'RUN_DIR'"),
        (["report", "r", "--html", ""], "'--html'"),
        (["compare", "a", ""], "'B'"),
        (["check", ""], "'FILE'"),
        (["sweep", "--out", ""], "'--out'"),
        (["bisect", "flags", "--bad", "topology=pd", "--good", "topology=single", "--out", ""],
         "'--out'"),
    ],
)  # fmt: skip
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    argv: list[str], name: str
) -> None:
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    assert f"Invalid value for {name}: an empty path names no file or folder." in result.stderr


@pytest.mark.parametrize("command", [["run", "--dry-run"], ["profile", "show"]])
def test_backend_and_profile_together_are_refused_not_one_ignored(
    command: list[str], repo_root
) -> None:
    sim = str(repo_root / "repro" / "profiles" / "sim.toml")
    both = CliRunner().invoke(app, [*command, "--backend", "vllm", "--profile", sim])
    assert both.exit_code == 2
    assert both.stderr == (
        "error: --backend picks a bundled profile and --profile names one; give one of them.\n"
    )
    alone = CliRunner().invoke(app, [*command, "--profile", sim])
    assert alone.exit_code == 0 and "vllm" not in alone.stdout.split("\n")[0]


def test_gate_help_names_every_reason_for_exit_2() -> None:
    result = CliRunner().invoke(app, ["gate", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "exit 1 when corruption is above --max-corruption (even if some turns failed)" in text
    assert (
        "2 when the run cannot decide (engine error, wedge, failed turns, no turn judged, an error of repro's own)"
        in text
    )
    assert "130 when interrupted" in text and "--junit is written on every way out" in text


def test_a_run_whose_engine_wedged_exits_2_after_its_summary(monkeypatch, tmp_path) -> None:
    import repro.harness as harness
    from repro.results.summary import summarize

    wedge = "the engine stopped making progress: no token for 30 s with 80 requests open"
    wedged = summarize([], config={}, wall_s=40.0, wedge=wedge, run_dir=str(tmp_path))
    monkeypatch.setattr(harness, "run", lambda spec, out, progress: wedged)
    result = CliRunner().invoke(app, ["run", "--sessions", "2"])
    assert result.exit_code == 2
    assert "WEDGE" in result.stdout  # the summary is still shown
    assert f"error: Wedged: {wedge}." in " ".join(result.stderr.split())


def test_each_command_is_listed_as_one_flowing_sentence():
    """A docstring wrapped at 100 columns must not break the command table's lines."""
    listing = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "400"}).output
    assert "--max-corruption (even if some turns failed), 2 when the run" in listing
    bisect = CliRunner().invoke(app, ["bisect", "--help"], env={"COLUMNS": "400"}).output
    assert (
        "Find the whole conjunction of knobs that turns --good into --bad's corruption." in bisect
    )


COMMANDS = [[c] for c in ("run", "gate", "preflight", "check", "report", "compare",
            "proxy", "sweep", "profile", "bisect", "record", "trace")] + [["bisect", "flags"],
            ["bisect", "matrix"], ["trace", "check"], ["trace", "import"], ["trace", "export"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_help_text_is_cut_in_an_80_column_terminal(command: list[str]) -> None:
    """Rich cuts a word longer than its column with '…'; in a CI log that hides the value."""
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output


def test_version_is_the_installed_packages() -> None:
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"repro {version('repro')}\n"


def test_the_proxy_refuses_an_empty_log_path() -> None:
    argv = ["proxy", "--upstream", "http://127.0.0.1:9", "--port", "9", "--log", ""]
    result = CliRunner().invoke(app, argv)
    assert (result.exit_code, result.stderr) == (
        2,
        "error: Invalid --log: is empty; give a file, or - for standard output.\n",
    )
