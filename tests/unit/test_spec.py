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


def test_the_oracle_default_comes_from_the_profile_and_settles_the_history() -> None:
    assert RunSpec.build().with_oracle_default("validity").history == "live"
    replayed = RunSpec.build().with_oracle_default("divergence")
    assert (replayed.oracle, replayed.history) == ("divergence", "scripted")
    assert replayed.judges_divergence and not replayed.judges_validity
    both = RunSpec.build(oracle="both").with_oracle_default("validity")
    assert both.judges_validity and both.judges_divergence and both.history == "scripted"
    chosen = RunSpec.build(oracle="validity", history="scripted").with_oracle_default("divergence")
    assert (chosen.oracle, chosen.history) == ("validity", "scripted")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"oracle": "divergence", "history": "live"}, "needs --history scripted"),
        ({"replay_sample": "0"}, "Invalid replay-sample: must be all, auto or a number"),
        ({"reference_urls": ("127.0.0.1:1",)}, "Invalid reference-urls: must start with http://"),
        ({"reference_urls": ("http://a",), "reference_engines": 2}, "not both"),
        ({"top_logprobs": 21}, "Invalid top-logprobs"),
    ],
)
def test_bad_oracle_settings_are_one_sentence(fields: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RunSpec.build(**fields)
    # A live history is refused too when the divergence oracle comes from the profile.
    with pytest.raises(UsageError, match="needs --history scripted"):
        RunSpec.build(history="live").with_oracle_default("divergence")


def test_the_sample_is_normalised() -> None:
    assert RunSpec.build(replay_sample=" ALL ").replay_sample == "all"
    assert RunSpec.build(replay_sample="12").replay_sample == "12"
