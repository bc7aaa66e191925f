"""The Slurm side's decisions, on Slurm's own output formats: which nodes are usable, what
preflight refuses, how salloc is asked, and each --parallel slot's share of an outer job.
(The e2e tests run all of it against the local 3-node Slurm.)"""

from __future__ import annotations

import pytest

from repro.errors import UsageError
from repro.harness.launch.placement import PlacementSpec
from repro.harness.launch.slurm import allocation, commands, preflight
from repro.spec import RunSpec

PD = PlacementSpec(nodes=2, roles={"prefill": 1, "decode": 2, "router": 2})
SLURM = RunSpec(launcher="slurm")

SINFO = """\
gpu01|gpu*|idle
gpu02|gpu*|mix
gpu03|gpu*|down*
gpu04|gpu*|drain
gpu05|gpu*|idle~
cpu01|cpu|alloc
"""


@pytest.fixture
def cluster(monkeypatch):
    """Slurm's client commands answering as a cluster with partitions gpu and cpu would."""
    answers = {"sinfo --version": "slurm 22.05.8\n", "sinfo --noheader": SINFO}
    monkeypatch.setattr(commands, "missing_commands", lambda: [])
    monkeypatch.setattr(
        commands,
        "slurm",
        lambda *args, **_: next(v for k, v in answers.items() if " ".join(args).startswith(k)),
    )
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    return answers


def test_usable_means_up_and_responding():
    states = {s.node: s.usable for s in preflight.parse_sinfo(SINFO)}
    assert states == {
        "gpu01": True,
        "gpu02": True,
        "gpu03": False,  # down and not responding
        "gpu04": False,
        "gpu05": True,  # powered off to save power: Slurm powers it up for a job
        "cpu01": True,
    }
    assert [s.partition for s in preflight.parse_sinfo(SINFO) if s.default] == ["gpu"] * 5


def test_preflight_counts_the_default_partitions_usable_nodes(cluster):
    lines = preflight.check_slurm(SLURM, PD, "pd")
    assert lines[-1] == "slurm: partition gpu: 3 of 5 node(s) usable"
    assert "prefill on node 1, decode on node 2, router on node 2" in lines[1]


def test_preflight_refuses_what_salloc_could_never_grant(cluster):
    with pytest.raises(UsageError, match=r"no partition 'h100'; its partitions are: cpu, gpu\."):
        preflight.check_slurm(RunSpec(launcher="slurm", partition="h100"), PD, "pd")
    with pytest.raises(
        UsageError, match=r"Partition cpu has 1 node\(s\); the pd placement needs 2\."
    ):
        preflight.check_slurm(RunSpec(launcher="slurm", partition="cpu"), PD, "pd")
    with pytest.raises(
        UsageError,
        match=r"only 3 usable node\(s\) of 5 \(gpu03 down\*, gpu04 drain\); the pd placement needs 4",
    ):
        preflight.check_slurm(RunSpec(launcher="slurm", nodes=4), PD, "pd")


def test_preflight_names_missing_client_commands(monkeypatch):
    monkeypatch.setattr(commands, "missing_commands", lambda: ["salloc", "srun"])
    with pytest.raises(UsageError, match=r"salloc, srun are not on PATH \(Debian: slurm-client\)"):
        preflight.check_slurm(SLURM, PD, "pd")


def test_salloc_gets_the_node_count_and_the_pass_through_options():
    spec = RunSpec(launcher="slurm", partition="gpu", account="team", time_limit="4:00:00")
    argv = allocation.alloc_argv(spec, 2, ["--gpus-per-node=8"])
    assert argv[:7] == [
        "salloc", "--nodes=2", "--job-name=repro", "--partition=gpu", "--account=team",
        "--time=4:00:00", "--gpus-per-node=8",
    ]  # fmt: skip
    assert argv[7:9] == ["sh", "-c"] and "exec cat" in argv[9]  # held through repro's pipe
    assert allocation.alloc_argv(RunSpec(launcher="slurm", nodes=5), 2, [])[1] == "--nodes=5"


def test_inside_a_job_each_parallel_slot_gets_nodes_of_its_own(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "g[1-5]")
    monkeypatch.setattr(commands, "hostnames", lambda _: [f"g{i}" for i in range(1, 6)])
    assert allocation.inside("77", SLURM, PD, slot=0, width=2).nodes == ["g1", "g2"]
    assert allocation.inside("77", SLURM, PD, slot=1, width=2).nodes == ["g3", "g4"]
    with pytest.raises(UsageError, match="deployment 3 of --parallel needs nodes 5 to 6 of it"):
        allocation.check_share(SLURM, PD, 2)
    with pytest.raises(UsageError, match="--partition applies only to an allocation repro makes"):
        allocation.inside("77", RunSpec(launcher="slurm", partition="gpu"), PD)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"nodes": 2}, "--nodes applies only with --launcher slurm."),
        ({"launcher": "slurm", "time_limit": "2h"}, "Invalid --time: '2h' is not a Slurm time"),
        ({"launcher": "slurm", "url": "http://127.0.0.1:1"}, "--url attaches to a running server"),
        ({"launcher": "k8s"}, "Invalid launcher: Input should be 'local' or 'slurm'."),
    ],
)
def test_launch_options_are_checked_with_the_spec(fields, message):
    with pytest.raises(UsageError) as error:
        RunSpec.build(**fields)
    assert message in str(error.value)
    for time in ("90", "30:00", "2:00:00", "1-12", "1-12:00:00", "UNLIMITED"):
        assert RunSpec.build(launcher="slurm", time_limit=time).time_limit == time
