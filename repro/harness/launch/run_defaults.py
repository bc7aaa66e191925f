"""A profile's `[run]` table: run options it fills in when the user gave none.

An engine serving a model that writes noise wants other run options than the story's
(contexts sized to the model's window, short answers, no thinking mode, more KV cache for
more sessions in flight). The table holds them; an option given on the command line wins,
and so does a `--set` of a scaled setting. Values are checked against the same bounds as
the options themselves. An engine on a modelled clock (the embedded one) gives its pacing
and deadlines in its own seconds, so that they mean the same at every time scale. The
tool-call format turns are judged in (`tool_format`) is the model's: a name, or a setting's
placeholder where the engine serves a family chosen by a setting (the embedded engine's
`{model_format}`).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, create_model, field_validator, model_validator

from repro.errors import UsageError
from repro.harness.launch.placeholders import fill
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
    "tool_format",
)


def _optional(name: str) -> tuple[Any, Any]:
    """RunSpec's field, same type and bounds, absent by default."""
    field = RunSpec.model_fields[name]
    bounded = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
    return bounded | None, Field(None, description=field.description)


# Run options an engine on a modelled clock may give in its own seconds ([run.modelled_s]);
# the deadlines among them keep their defaults as a floor.
ModelledOption = Literal["ramp_up_s", "turn_timeout_s", "stall_after_s"]
DEADLINES = ("turn_timeout_s", "stall_after_s")

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
    # wall seconds one of its seconds takes, and run options given in its seconds.
    time_scale_setting: str | None = None
    modelled_s: dict[ModelledOption, Annotated[float, Field(gt=0, le=MAX_WAIT_S)]] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _modelled_needs_a_scale(self) -> RunDefaults:
        if (self.time_scale_setting is None) != (not self.modelled_s):
            raise ValueError("time_scale_setting and [run.modelled_s] go together")
        for name in self.modelled_s:
            if getattr(self, name, None) is not None:
                raise ValueError(f"'{name}' is in [run] and in [run.modelled_s]: give one")
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

    def time_scale(self, settings: dict[str, str]) -> float | None:
        """Wall seconds per modelled second, as these settings give it (None: no clock)."""
        if self.time_scale_setting is None:
            return None
        try:
            scale = float(settings.get(self.time_scale_setting, ""))
        except ValueError:
            return None  # not a number: the engine refuses it with its own sentence
        return scale if 0 < scale < math.inf else None

    def modelled_options(self, settings: dict[str, str]) -> dict[str, float]:
        """[run.modelled_s] in wall seconds at the time scale these settings give. A deadline
        is never tighter than its default: a slow host's pauses are wall time."""
        scale = self.time_scale(settings)
        if scale is None:
            return {}
        chosen = {}
        for name, modelled_s in self.modelled_s.items():
            floor = RunSpec.model_fields[name].default if name in DEADLINES else 0.0
            chosen[name] = min(max(modelled_s * scale, floor), MAX_WAIT_S)
        return chosen

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
    the scaled settings (a `--set` wins), the options given in the engine's modelled seconds
    at its time scale (`declared`: the profile's [settings]), then the oracle and the history
    it implies."""
    options = {k: v for k, v in run.options().items() if k not in spec.model_fields_set}
    scaled = run.scaled_settings(spec.effective_concurrency())
    settings = {k: v for k, v in scaled.items() if k not in spec.settings} | spec.settings
    modelled = run.modelled_options((declared or {}) | settings)
    options |= {k: v for k, v in modelled.items() if k not in spec.model_fields_set}
    if "tool_format" in options:
        where = "[run] tool_format"
        options["tool_format"] = fill(options["tool_format"], (declared or {}) | settings, where)
    if "tool_format" in options or spec.tool_format is not None:
        _known_format(options.get("tool_format") or spec.tool_format)
    if options or settings != spec.settings:
        spec = spec.model_copy(update=options | {"settings": settings})
    return spec.with_oracle_default(oracle)


def _known_format(name: str) -> None:
    from repro.checkers import FORMATS

    if name not in FORMATS:
        raise UsageError(
            f"The tool-call format '{name}' is not one repro reads; known: {', '.join(FORMATS)}."
        )
