"""Placement: which node of a Slurm allocation each role of a topology runs on.

A profile's `[placement.<topology>]` table, read only by `--launcher slurm`:

    [placement.pd]
    nodes = 2                                          # the allocation's node count
    roles = { prefill = 1, decode = 2, router = 2 }    # node 1 is the allocation's first
    alloc_args = ["--gpus-per-node=8", "--exclusive"]  # extra flags for the allocation
    step_args = { decode = ["--cpus-per-task=32"] }    # extra srun flags for one role's step
    settings = { prefill_tp_size = "8" }               # settings it implies; --set still wins

A topology without a table runs all its roles on one node. docs/slurm.md has the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PlacementSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int = Field(1, ge=1, description="how many nodes the allocation has")
    roles: dict[str, int] = Field(
        default_factory=dict, description="role -> the node it runs on, 1 to `nodes`"
    )
    alloc_args: list[str] = Field(
        default_factory=list, description="extra salloc flags, e.g. --gpus-per-node=8"
    )
    step_args: dict[str, list[str]] = Field(
        default_factory=dict, description="role -> extra srun flags for its job step"
    )
    settings: dict[str, str] = Field(
        default_factory=dict, description="profile settings this placement implies"
    )

    @model_validator(mode="after")
    def _nodes_used(self) -> PlacementSpec:
        for role, node in self.roles.items():
            if not 1 <= node <= self.nodes:
                raise ValueError(
                    f"role '{role}' is on node {node}, but the nodes are numbered 1 to {self.nodes}"
                )
        if self.roles and (idle := sorted(set(range(1, self.nodes + 1)) - {*self.roles.values()})):
            raise ValueError(
                f"node {idle[0]} of {self.nodes} has no role; an allocation should not hold "
                "idle nodes (lower `nodes`, or place a role there)"
            )
        for role in self.step_args:
            if role not in self.roles:
                raise ValueError(f"step_args names role '{role}', which is not placed")
        return self

    def node_of(self, role: str) -> int:
        return self.roles[role]


def on_one_node(roles: Sequence[str]) -> PlacementSpec:
    """What a topology without a placement table gets: every role on one node."""
    return PlacementSpec(nodes=1, roles=dict.fromkeys(roles, 1))


def check_placements(
    placements: Mapping[str, PlacementSpec],
    topology_roles: Mapping[str, Sequence[str]],
    settings: Mapping[str, str],
) -> None:
    """Each table names a topology, places exactly its roles, and sets only known settings."""
    for name, placement in placements.items():
        if name not in topology_roles:
            raise ValueError(
                f"placement '{name}' is not a topology; topologies: {', '.join(topology_roles)}"
            )
        wanted, placed = set(topology_roles[name]), set(placement.roles)
        if missing := sorted(wanted - placed):
            raise ValueError(f"placement '{name}' does not place role '{missing[0]}'")
        if extra := sorted(placed - wanted):
            raise ValueError(f"placement '{name}' places '{extra[0]}', not a role of '{name}'")
        if unknown := sorted(set(placement.settings) - set(settings)):
            raise ValueError(
                f"placement '{name}' sets '{unknown[0]}', which is not one of the profile's settings"
            )
