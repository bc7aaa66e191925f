from __future__ import annotations

import pytest

from repro.errors import UsageError
from repro.knobs import describe, parse_assignments


def test_assignments_merge_and_normalise_dashes() -> None:
    knobs = parse_assignments(["topology=pd,hicache=on", "index-k=bf16", "hicache=off"])
    assert knobs == {"topology": "pd", "hicache": "off", "index_k": "bf16"}  # a later item wins


def test_a_knob_given_two_values_in_one_list_is_refused() -> None:
    with pytest.raises(
        UsageError, match=r"index_k is given twice in 'index-k=bf16,index_k=fp8' \(index_k=bf16"
    ):
        parse_assignments(["index-k=bf16,index_k=fp8"])


@pytest.mark.parametrize("bad", ["topology", "=pd", "topology="])
def test_malformed_assignment_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="is not a knob setting"):
        parse_assignments([bad])


def test_describe_puts_common_knobs_first() -> None:
    assert (
        describe({"zeta": "1", "index_k": "bf16", "topology": "pd"})
        == "topology=pd,index_k=bf16,zeta=1"
    )
