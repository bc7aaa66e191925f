"""A profile's `[run]` table: run options it fills in when the user gave none.

An engine serving a model that writes noise wants other run options than the story's
(contexts sized to the model's window, short answers, no thinking mode, more KV cache for
more sessions in flight). The table holds them; an option given on the command line wins,
and so does a `--set` of a scaled setting. Values are checked against the same bounds as
the options themselves.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import ConfigDict, Field, create_model, field_validator, model_validator

from repro.spec import MAX_WAIT_S, Oracle, RunSpec

# The run options a profile may default: what depends on the model it serves. Sessions,
# seeds and where the engine runs are the user's to say.
RUN_DEFAULT_FIELDS = (
    "context_max_tokens",
    "max_output_tokens",
    "max_turns",
    "thinking",
    "turn_timeout_s",
    "stall_after_s",
    "top_logprobs",
    "numerical_margin_nats",
)


def _optional(name: str) -> tuple[Any, Any]:
    """RunSpec's field, same type and bounds, absent by default."""
    field = RunSpec.model_fields[name]
    bounded = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
    return bounded | None, Field(None, description=field.description)


_RunOptions = create_model(  # type: ignore[call-overload]
    "_RunOptions",
    __config__=ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False),
    **{name: _optional(name) for name in RUN_DEFAULT_FIELDS},
)


class RunDefaults(_RunOptions):  # type: ignore[misc, valid-type]
    """`[run]`: option defaults, and settings that grow with the sessions in flight."""

    # setting -> {sessions in flight from which it applies: value}; below the lowest
    # threshold the [settings] value holds.
    settings_by_concurrency: dict[str, dict[str, str]] = Field(default_factory=dict)
    # An engine on a modelled clock (the embedded one): the [settings] value that says how many
    # wall seconds one of its seconds takes, and the stall detector's wait in its seconds.
    time_scale_setting: str | None = None
    stall_after_modelled_s: float | None = Field(None, gt=0, le=MAX_WAIT_S)

    @model_validator(mode="after")
    def _stall_needs_a_scale(self) -> RunDefaults:
        if (self.time_scale_setting is None) != (self.stall_after_modelled_s is None):
            raise ValueError("time_scale_setting and stall_after_modelled_s go together")
        if self.stall_after_s is not None and self.stall_after_modelled_s is not None:
            raise ValueError("give stall_after_s or stall_after_modelled_s, not both")
        return self

    @field_validator("settings_by_concurrency")
    @classmethod
    def _thresholds_are_counts(cls, table: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for setting, steps in table.items():
            if not steps:
                raise ValueError(f"'{setting}' has no steps")
            for threshold in steps:
                if not threshold.isdigit() or threshold != str(int(threshold)) or threshold == "0":
                    raise ValueError(
                        f"'{setting}': '{threshold}' is not a number of sessions (1 or more)"
                    )
        return table

    def options(self) -> dict[str, Any]:
        """The run options the table sets."""
        chosen = {name: getattr(self, name) for name in RUN_DEFAULT_FIELDS}
        return {name: value for name, value in chosen.items() if value is not None}

    def scaled_stall_after_s(self, settings: dict[str, str]) -> float | None:
        """The stall detector in wall seconds at the time scale these settings give; never
        tighter than its default, since a slow host's pauses are wall time. None: no scale."""
        if self.time_scale_setting is None or self.stall_after_modelled_s is None:
            return None
        try:
            scale = float(settings.get(self.time_scale_setting, ""))
        except ValueError:
            return None  # not a number: the engine refuses it with its own sentence
        if not 0 < scale < math.inf:
            return None
        floor = RunSpec.model_fields["stall_after_s"].default
        return min(max(self.stall_after_modelled_s * scale, floor), MAX_WAIT_S)

    def scaled_settings(self, in_flight: int) -> dict[str, str]:
        """Each scaled setting's value for this many sessions in flight, where a step applies."""
        chosen = {}
        for setting, steps in self.settings_by_concurrency.items():
            reached = [int(t) for t in steps if int(t) <= in_flight]
            if reached:
                chosen[setting] = steps[str(max(reached))]
        return chosen


def fill_from_profile(
    spec: RunSpec, run: RunDefaults, oracle: Oracle, declared: dict[str, str] | None = None
) -> RunSpec:
    """The spec with what the user left unsaid filled from the profile: the `[run]` options,
    the scaled settings (a `--set` wins), the stall detector at the engine's time scale
    (`declared`: the profile's [settings]), then the oracle and the history it implies."""
    options = {k: v for k, v in run.options().items() if k not in spec.model_fields_set}
    scaled = run.scaled_settings(spec.effective_concurrency())
    settings = {k: v for k, v in scaled.items() if k not in spec.settings} | spec.settings
    stall_after_s = run.scaled_stall_after_s((declared or {}) | settings)
    if stall_after_s is not None and "stall_after_s" not in spec.model_fields_set:
        options["stall_after_s"] = stall_after_s
    if options or settings != spec.settings:
        spec = spec.model_copy(update=options | {"settings": settings})
    return spec.with_oracle_default(oracle)
