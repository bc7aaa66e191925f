"""--launcher slurm on the local 3-node Slurm (scripts/slurm-local): roles placed where the
profile says, every turn checked, and no job, step or engine process left on any way out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.e2e.conftest import engine_processes, repro
from tests.e2e.runs import start_run as start_any_run
from tests.e2e.runs import wait_for_turns

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("slurm_cluster")]

# The bound docs/slurm.md gives for a SIGKILLed repro on this cluster (KillWait=2 s).
SIGKILL_BOUND_S = 15


def slurm(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def placement(out: Path, timeout_s: float = 60) -> dict:
    """logs/placement.json, written once every role is healthy."""
    path = out / "logs" / "placement.json"
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"no {path} within {timeout_s} s"
        time.sleep(0.2)
    return json.loads(path.read_text())


def allocated_nodes(job_id: str) -> list[str]:
    """The job's nodes in Slurm's order (node 1 of a placement is the first)."""
    (nodes,) = slurm(
        "squeue", "--noheader", "--states=all", "--jobs", job_id, "--format=%N"
    ).split()
    return slurm("scontrol", "show", "hostnames", nodes).split()


def leftovers(job_id: str) -> str:
    """squeue's lines for the job and its steps (empty when Slurm has nothing of it)."""
    jobs = slurm("squeue", "--noheader", "--jobs", job_id)
    steps = slurm("squeue", "--noheader", "--steps", "--jobs", job_id)
    return (jobs + steps).strip()


def all_gone(out: Path, job_id: str, within_s: float) -> tuple[str, list[int]]:
    """Wait up to within_s for the job, its steps and the engine processes to be gone."""
    deadline = time.monotonic() + within_s
    while True:
        left, pids = leftovers(job_id), engine_processes(out)
        if (not left and not pids) or time.monotonic() > deadline:
            return left, pids
        time.sleep(0.2)


def engines_not_srun(out: Path) -> list[int]:
    """The engine processes themselves (engine_processes also finds each role's srun)."""
    return [p for p in engine_processes(out) if Path(f"/proc/{p}/comm").read_text() != "srun\n"]


def start_run(out: Path) -> subprocess.Popen[str]:
    # Long sessions: busy within seconds, and far from done when signalled (about 40 s of
    # load on an idle machine; every test ends it after its first turns are on disk).
    return start_any_run(
        out, "--launcher", "slurm", "--sessions", "12", "--context-max", "80000",
        start_new_session=True,
    )  # fmt: skip


def test_pd_run_places_each_role_on_the_node_the_profile_names(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = repro("run", "--launcher", "slurm", "--topology", "pd", "--sessions", "16",
                   "--context-max", "16000", "--out", str(out))  # fmt: skip
    assert result.returncode == 0, result.stderr
    where = json.loads((out / "logs" / "placement.json").read_text())
    job = where["job_id"]
    # sim.toml: [placement.pd] nodes = 2, prefill on node 1, decode and router on node 2.
    first, second = allocated_nodes(job)
    roles = where["roles"]
    assert {r: roles[r]["node"] for r in roles} == {
        "prefill": first,
        "decode": second,
        "router": second,
    }
    assert first != second and where["own_allocation"] is True
    steps = {roles[r]["step_id"] for r in roles}
    assert len(steps) == 3 and all(s.startswith(f"{job}.") for s in steps)
    spec = json.loads((out / "spec.json").read_text())
    assert spec["placement"] == where
    for role in spec["roles"]:
        argv = role["argv"]
        assert argv[0] == "srun" and f"--nodelist={roles[role['name']]['node']}" in argv
        assert (out / "logs" / f"{role['name']}.log").stat().st_size > 0
    # Every turn came back whole and was checked.
    turns = pq.read_table(out / "turns.parquet", columns=["outcome", "corrupted"]).to_pylist()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sessions"] == 16 and summary["errors"] == 0
    assert len(turns) == summary["turns"] > 16
    assert all(t["outcome"] == "ok" and t["corrupted"] is not None for t in turns)
    assert all_gone(out, job, within_s=0) == ("", [])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_cancels_the_job_and_every_step(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "run"
    process = start_run(out)
    job = placement(out)["job_id"]
    wait_for_turns(out, 3, process=process)
    assert len(engines_not_srun(out)) == 3
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert all_gone(out, job, within_s=0) == ("", [])
    assert json.loads((out / "summary.json").read_text())["interrupted"] is True


def test_a_killed_decode_step_ends_the_run_and_the_job(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_run(out)
    where = placement(out)
    wait_for_turns(out, 3, process=process)
    slurm("scancel", "--signal=KILL", where["roles"]["decode"]["step_id"])
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert "The decode engine process" in stderr and "during the run" in stderr
    assert "n2: task 0: Killed" in (out / "logs" / "decode.log").read_text()
    assert all_gone(out, where["job_id"], within_s=0) == ("", [])


def test_sigkill_of_repro_leaves_nothing_within_the_bound(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start_run(out)
    try:
        job = placement(out)["job_id"]
        wait_for_turns(out, 1, process=process)
        os.killpg(process.pid, signal.SIGKILL)  # repro and all it did not start apart
        process.communicate(timeout=10)
        assert all_gone(out, job, within_s=SIGKILL_BOUND_S) == ("", [])
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_preflight_checks_the_slurm_side_before_submitting(tmp_path: Path) -> None:
    def last_job() -> set[str]:  # every job Slurm still knows of, in no particular order
        return set(slurm("squeue", "--noheader", "--states=all", "--format=%i").split())

    before = last_job()
    ok = repro("preflight", "--launcher", "slurm", "--topology", "pd")
    assert ok.returncode == 0, ok.stderr
    assert "the pd placement needs 2 node(s): prefill on node 1, decode on node 2" in ok.stdout
    assert "partition debug: 3 of 3 node(s) usable" in ok.stdout
    wrong = repro("run", "--launcher", "slurm", "--partition", "gpu", "--out", str(tmp_path / "a"))
    assert wrong.returncode == 2
    assert "Slurm has no partition 'gpu'; its partitions are: debug." in wrong.stderr
    big = repro("preflight", "--launcher", "slurm", "--nodes", "5")
    assert big.returncode == 2
    assert "Partition debug has 3 node(s); the pd placement needs 5 (--nodes)." in big.stderr
    assert not last_job() - before  # nothing was submitted (old jobs may age out meanwhile)


def test_inside_an_allocation_it_uses_that_jobs_nodes_and_leaves_the_job_alone(tmp_path):
    """SLURM_JOB_ID set (an sbatch script, an salloc shell): no new allocation; repro's steps
    run on the job's first nodes, and only they are cancelled at the end."""
    out = tmp_path / "run"
    run = (f"{sys.executable} -m repro run --launcher slurm --sessions 4 --context-max 12000 "
           f"--set time_scale=0.1 --out {out}")  # fmt: skip
    # After repro: the job's own steps as squeue sees them (none should be left), and its id.
    after = 'echo "steps left: $(squeue --noheader --steps --jobs $SLURM_JOB_ID | wc -l)"'
    inside = subprocess.run(
        ["salloc", "--nodes=3", "sh", "-c", f"{run} >/dev/null && {after}"],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert inside.returncode == 0, inside.stderr
    assert "steps left: 0" in inside.stdout
    where = json.loads((out / "logs" / "placement.json").read_text())
    job = where["job_id"]
    assert where["own_allocation"] is False and f"Granted job allocation {job}" in inside.stderr
    first, second, _ = allocated_nodes(job)
    assert {r: w["node"] for r, w in where["roles"].items()} == {
        "prefill": first,
        "decode": second,
        "router": second,
    }
    assert not (out / "logs" / "salloc.log").exists()


def test_ctrl_c_while_queued_withdraws_the_request(tmp_path: Path) -> None:
    """All three nodes taken: repro's allocation waits in the queue; Ctrl-C gives it up."""
    blocker = slurm("sbatch", "--parsable", "--nodes=3", "--exclusive", "--output=/dev/null",
                    "--wrap", "sleep 120").strip()  # fmt: skip
    try:
        out = tmp_path / "run"
        process = start_run(out)
        log = out / "logs" / "salloc.log"
        deadline = time.monotonic() + 60
        while not (log.exists() and "queued and waiting" in log.read_text()):
            assert time.monotonic() < deadline and process.poll() is None, "never queued"
            time.sleep(0.2)
        (job,) = [w for w in log.read_text().split() if w.isdigit()][:1]
        assert slurm("squeue", "--noheader", "--jobs", job, "--format=%T").strip() == "PENDING"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert leftovers(job) == ""
    finally:
        slurm("scancel", blocker)
