"""RunSpec.build: a bad field is one plain sentence."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from repro.errors import UsageError
from repro.spec import RunSpec


def test_a_validator_message_reads_without_pydantic_s_prefix() -> None:
    with pytest.raises(UsageError) as refused:
        RunSpec.build(url="ftp://x")
    assert str(refused.value) == "Invalid url: must start with http:// or https://."


def test_usage_error_names_a_field_by_its_option_and_a_rule_by_itself() -> None:
    from repro.bisect.sprt import SprtSettings
    from repro.spec import usage_error

    with pytest.raises(ValidationError) as across:
        SprtSettings(p0=0.2, p1=0.1)
    assert str(usage_error(across.value)) == "P0 must be below p1."
    assert str(usage_error(across.value, {"": "--p0/--p1"})) == (
        "Invalid --p0/--p1: p0 must be below p1."
    )
    with pytest.raises(ValidationError) as field:
        SprtSettings(max_sessions=0)
    message = str(usage_error(field.value, {"max_sessions": "--sessions-cap"}))
    assert message.startswith("Invalid --sessions-cap: ") and message.endswith(".")
