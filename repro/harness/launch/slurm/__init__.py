"""Engine roles as Slurm job steps: an allocation, a step per role on the node the profile's
placement names, and scancel on every way out (docs/slurm.md).

    deploy_on_slurm(...)    the launcher: placement -> allocation -> steps -> Deployment
    AllocationHolder        keeps one allocation for successive deployments (a bisect slot)
    check_slurm(spec, p)    preflight of the Slurm side, before anything is submitted
"""

from repro.harness.launch.slurm.allocation import AllocationHolder, check_share
from repro.harness.launch.slurm.launch import deploy_on_slurm, describe_placement
from repro.harness.launch.slurm.preflight import check_slurm

__all__ = [
    "AllocationHolder",
    "check_share",
    "check_slurm",
    "deploy_on_slurm",
    "describe_placement",
]
