"""RunSpec.build: a bad field is one plain sentence."""

from __future__ import annotations

import pytest

from repro.errors import UsageError
from repro.spec import RunSpec


def test_a_validator_message_reads_without_pydantic_s_prefix() -> None:
    with pytest.raises(UsageError) as refused:
        RunSpec.build(url="ftp://x")
    assert str(refused.value) == "Invalid url: must start with http:// or https://."
