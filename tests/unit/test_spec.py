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


@pytest.mark.parametrize(
    ("fields", "option"),
    [
        ({"reference_urls": ("http://127.0.0.1:1",)}, "--reference-url"),
        ({"reference_engines": 2}, "--reference-engines"),
        ({"replay_sample": "3"}, "--replay-sample"),
    ],
)
def test_replay_options_are_refused_where_nothing_is_replayed(fields: dict, option: str) -> None:
    """Under validity they would be dropped (and a reference URL was even contacted)."""
    refused = f"{option} shapes the divergence oracle's replay, and this run judges validity"
    with pytest.raises(UsageError, match=refused):
        RunSpec.build(oracle="validity", **fields)
    with pytest.raises(UsageError, match=refused):  # validity as the profile's default
        RunSpec.build(**fields).with_oracle_default("validity")
    assert RunSpec.build(**fields).with_oracle_default("divergence").judges_divergence
    assert RunSpec.build(oracle="both", **fields).judges_divergence


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"url": "http://[::1"}, "Invalid --url: its IPv6 address misses the closing ']'."),
        (
            {"url": "http://127.0.0.1:99999"},
            "Invalid --url: port 99999 is not between 1 and 65535.",
        ),
        ({"url": "http://:80"}, "Invalid --url: has no host."),
        ({"url": "http://"}, "Invalid --url: has no host."),
        ({"url": "https:///v1"}, "Invalid --url: has no host."),
        ({"reference_urls": ("http://",)}, "Invalid --reference-url: has no host."),
        ({"url": "http://a b:80"}, "Invalid --url: host 'a%20b' is not a host name or IP address."),
        (
            {"url": "http://h:8/x?y=1"},
            "Invalid --url: must be a base URL, without ?query or #fragment.",
        ),
        ({"ramp_up_s": float("inf")}, "Invalid --ramp-up: Input should be a finite number."),
        ({"ramp_up_s": 1e308}, "Invalid --ramp-up: Input should be less than or equal to 86400."),
        (
            {"turn_timeout_s": float("nan")},
            "Invalid --turn-timeout: Input should be a finite number.",
        ),
        (
            {"seed": 2**64},
            "Invalid --seed: Input should be less than or equal to 9223372036854775807.",
        ),
        (
            {"max_turns": 10**30},
            "Invalid --max-turns: Input should be less than or equal to 100000.",
        ),
    ],
)
def test_every_number_and_url_a_user_types_is_bounded(fields: dict, message: str) -> None:
    from repro.cli_options import OPTION_OF

    with pytest.raises(UsageError) as refused:
        RunSpec.build(OPTION_OF, **fields)
    assert str(refused.value) == message


def test_a_url_that_can_be_used_is_kept_as_its_base() -> None:
    assert RunSpec.build(url="http://[::1]:30000/").url == "http://[::1]:30000"
    assert (
        RunSpec.build(url="https://gpu-7.internal:8000/v1x").url
        == "https://gpu-7.internal:8000/v1x"
    )


@pytest.mark.parametrize(
    ("fields", "option"),
    [
        ({"model": ""}, "--model"),
        ({"server_python": " "}, "--server-python"),
        ({"launcher": "slurm", "partition": ""}, "--partition"),
        ({"launcher": "slurm", "account": "\t"}, "--account"),
    ],
)
def test_an_empty_name_is_refused_not_taken_for_the_default(fields: dict, option: str) -> None:
    from repro.cli_options import OPTION_OF

    with pytest.raises(UsageError) as refused:
        RunSpec.build(OPTION_OF, **fields)
    assert (
        str(refused.value) == f"Invalid {option}: is empty; give a value or leave the option out."
    )


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
