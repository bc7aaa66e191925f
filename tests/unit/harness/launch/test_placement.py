"""Placement tables: validated with the profile, and what the plan makes of node addresses."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.harness.launch.plan import build_plan
from repro.harness.launch.profile import load_profile
from repro.harness.launch.slurm.launch import NodeAddresses, describe_placement, on_steps
from repro.spec import DEFAULT_PROFILES, RunSpec

PD = """
[engine]
name = "toy"
version = "1"
[settings]
tp = "4"
[topologies.pd]
roles = ["prefill", "decode", "router"]
entry = "router"
[roles.prefill]
command = ["toy", "--host", "{host}", "--port", "{port}", "--tp", "{tp}"]
ports = ["bootstrap_port"]
[roles.decode]
command = ["toy", "--host", "{host}", "--port", "{port}"]
[roles.router]
router = true
command = ["toy-router", "--prefill", "{prefill_url}", "{bootstrap_port}", "--decode", "{decode_url}", "--port", "{port}"]
"""


def load(tmp_path: Path, placement: str):
    path = tmp_path / "profile.toml"
    path.write_text(PD + placement)
    return load_profile(path)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[placement.pd]\nnodes = 2\nroles = { prefill = 1, decode = 2 }",
         "placement 'pd' does not place role 'router'"),
        ("[placement.pd]\nnodes = 2\nroles = { prefill = 1, decode = 3, router = 2 }",
         "role 'decode' is on node 3, but the nodes are numbered 1 to 2"),
        ("[placement.pd]\nnodes = 3\nroles = { prefill = 1, decode = 2, router = 2 }",
         "node 3 of 3 has no role"),
        ("[placement.single]\nroles = { single = 1 }", "placement 'single' is not a topology"),
        ("[placement.pd]\nnodes = 2\nroles = { prefill = 1, decode = 2, router = 2 }\n"
         "settings = { tp_size = '8' }", "sets 'tp_size', which is not one of the profile's"),
        ("[placement.pd]\nnodes = 2\nroles = { prefill = 1, decode = 2, router = 2 }\n"
         "step_args = { single = ['--exclusive'] }", "step_args names role 'single'"),
        ("[placement.pd]\nnode = 2", "no such key; did you mean 'nodes'?"),
    ],
)  # fmt: skip
def test_a_bad_placement_fails_when_the_profile_loads(tmp_path, table, message):
    with pytest.raises(UsageError, match="invalid") as error:
        load(tmp_path, table)
    assert message in str(error.value)


def test_without_a_table_every_role_shares_one_node(tmp_path):
    placement = load(tmp_path, "").placement_for("pd")
    assert placement.nodes == 1 and set(placement.roles.values()) == {1}


def test_roles_listen_on_their_node_and_urls_point_there(tmp_path):
    """The plan takes each role's host and ports from the Slurm nodes, not from loopback."""
    profile = load(
        tmp_path,
        "[placement.pd]\nnodes = 2\nroles = { prefill = 1, decode = 2, router = 2 }\n"
        "settings = { tp = '8' }\nstep_args = { decode = ['--gpus-per-task=8'] }",
    )
    placement = profile.placement_for("pd")
    hosts = {"prefill": "10.0.0.1", "decode": "10.0.0.2", "router": "10.0.0.2"}
    ports = {"prefill": [5001, 5002, 5003, 5004], "decode": [6001] * 4, "router": [6002] * 4}
    spec = RunSpec(profile=tmp_path / "profile.toml", settings=placement.settings)
    plan = build_plan(profile, spec, {"topology": "pd"}, NodeAddresses(hosts, ports))
    prefill, decode, router = (plan.role(r) for r in ("prefill", "decode", "router"))
    assert prefill.argv == ("toy", "--host", "10.0.0.1", "--port", "5001", "--tp", "8")
    assert router.argv[:5] == (
        "toy-router",
        "--prefill",
        "http://10.0.0.1:5001",
        "5002",
        "--decode",
    )
    assert router.argv[5] == "http://10.0.0.2:6001" and plan.entry_url == "http://10.0.0.2:6002"
    assert decode.health_url == "http://10.0.0.2:6001/health"
    role_node = {"prefill": "n7", "decode": "n9", "router": "n9"}
    stepped = on_steps(plan, "42", role_node, placement, "repro.1-1")
    assert stepped.role("decode").argv[:9] == (
        "srun", "--jobid=42", "--nodes=1", "--ntasks=1", "--nodelist=n9",
        "--job-name=repro.1-1.decode", "--overlap", "--input=none", "--gpus-per-task=8",
    )  # fmt: skip
    assert stepped.role("decode").argv[9:] == decode.argv
    assert stepped.entry_url == plan.entry_url


def test_a_role_wanting_more_ports_than_probed_is_one_sentence():
    addresses = NodeAddresses({"prefill": "n1"}, {"prefill": [1, 2, 3, 4]})
    with pytest.raises(UsageError, match="Role 'prefill' needs 5 ports"):
        addresses.ports("prefill", 5)


def test_the_dry_run_says_where_each_role_will_run():
    notes = describe_placement(load_profile(DEFAULT_PROFILES["sglang"]), "pd")
    assert notes[0] == (
        "--launcher slurm: an allocation of 2 node(s) with --gpus-per-node=8 --exclusive"
    )
    assert notes[1].startswith("prefill: srun --jobid=JOB --nodelist=<node 1> --overlap")
    assert notes[3].startswith("router: srun --jobid=JOB --nodelist=<node 2>")
    assert "prefill_tp_size=8" in notes[-1] and "(--set wins)" in notes[-1]
