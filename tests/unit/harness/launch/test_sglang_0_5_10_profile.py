"""The 0.5.10 profile speaks the older line's flag names.

No 0.5.10 parser runs here: its server_args.py imports torchvision and transformers at the
top (sglang/srt/utils/common.py), and PyPI has no CPU torchvision for the CPU torch used in
CI. So every flag of every combination is checked against the option strings 0.5.10's
parser registers (data/sglang-0.5.10-server-flags.txt, listed from the wheel), and the
renamed ones are asserted by name.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from repro.errors import UsageError
from repro.harness.launch.plan import build_plan
from repro.harness.launch.profile import Profile, load_profile
from repro.spec import RunSpec

FLAGS_FILE = Path(__file__).with_name("data") / "sglang-0.5.10-server-flags.txt"
OLD_NAMES = {
    "--nsa-prefill-backend",
    "--nsa-decode-backend",
    "--cuda-graph-max-bs",
    "--disable-cuda-graph",
}
NEW_NAMES = {"--dsa-prefill-backend", "--dsa-decode-backend", "--cuda-graph-max-bs-decode",
             "--cuda-graph-backend-decode", "--disaggregation-decode-enable-radix-cache"}  # fmt: skip


@pytest.fixture(scope="module")
def old(repo_root: Path) -> Profile:
    return load_profile(repo_root / "repro" / "profiles" / "sglang-0.5.10.toml")


@pytest.fixture(scope="module")
def known_flags() -> set[str]:
    lines = FLAGS_FILE.read_text().splitlines()
    return {line for line in lines if line.startswith("--")}


def engine_flags_of_every_combination(profile: Profile) -> list[set[str]]:
    axes = []
    for knob in profile.knob_names():
        spec = profile.knobs.get(knob)
        values = [spec.unmapped.native] if spec and spec.unmapped else profile.knob_values(knob)
        axes.append([(knob, value) for value in values])
    flag_sets = []
    for combo in itertools.product(*axes):
        spec = RunSpec.build(backend="sglang", knobs=dict(combo), settings={"model_path": "m"})
        plan = build_plan(profile, spec, profile.resolve_knobs(spec.knobs))
        for role in plan.roles:
            if not role.router:
                flag_sets.append({a.split("=", 1)[0] for a in role.argv if a.startswith("--")})
    return flag_sets


def test_the_flag_list_is_0_5_10s(known_flags: set[str]) -> None:
    assert len(known_flags) == 364
    assert known_flags >= OLD_NAMES and not (NEW_NAMES & known_flags)
    assert "--tp-size" in known_flags and "--tp" not in known_flags


def test_every_combination_uses_only_flags_0_5_10_registers(
    old: Profile, known_flags: set[str]
) -> None:
    flag_sets = engine_flags_of_every_combination(old)
    # 2 topologies x hicache 2 x cuda_graph 2 x max_bs 3 x dsa_backend 3 x transfer 2 x
    # batch_invariant 2 x overlap_schedule 2 x tool_parser 2 x router_resilience 2
    # combinations; 1 engine role in single, 2 in pd.
    assert len(flag_sets) == 1152 * 3
    unknown = set().union(*flag_sets) - known_flags
    assert unknown == set()
    used = set().union(*flag_sets)
    assert used >= OLD_NAMES and not (used & NEW_NAMES)
    assert "--disable-overlap-schedule" in used  # overlap_schedule=off


@pytest.mark.parametrize(
    ("knob", "value", "says"),
    [
        ("topk_v2", "on", "0.5.12"),
        ("decode_hicache", "on", "chunk cache"),
        ("index_k", "bf16", "--index-k-dtype"),
    ],
)
def test_knobs_0_5_10_lacks_fail_with_a_hint(
    old: Profile, knob: str, value: str, says: str
) -> None:
    with pytest.raises(UsageError, match=f"cannot set {knob}={value}") as caught:
        old.resolve_knobs({knob: value})
    assert says in str(caught.value)


def test_same_knob_names_as_the_current_profile(old: Profile, repo_root: Path) -> None:
    current = load_profile(repo_root / "repro" / "profiles" / "sglang-0.5.23.toml")
    assert old.knob_names() == current.knob_names()
    assert old.settings.keys() == current.settings.keys()
