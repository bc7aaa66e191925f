"""ProxySpec: what `repro proxy` was asked for, validated once (user input)."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from repro.proxy.injector import RuleKind, Target

_WHAT_TO_GIVE = {
    "log": "give a file, or - for standard output",
    # An empty host would listen on every interface: a corrupting proxy on the network.
    "host": "give an address to listen on, e.g. 127.0.0.1",
}


class ProxySpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    upstream: str = Field(description="the engine's base URL, e.g. http://127.0.0.1:8000")
    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(ge=1, le=65535, description="port to listen on")
    rule: RuleKind = Field(
        RuleKind.OFF,
        description="off (pass through) | splice (bytes from another in-flight stream) | "
        "drop (bytes removed from a tool-call argument or the content) | cut (the text stops "
        "early, the stream ends normally) | duplicate (a call's first argument fragment sent "
        "twice) | finish (a finish_reason that lies: tool_calls without a call, length on "
        "calls) | flip (one letter's case flipped: the stream disagrees with its unstreamed "
        "twin)",
    )
    min_streams: int = Field(
        2, ge=1, description="inject only while this many streams are in flight"
    )
    rate: float = Field(
        0.05, ge=0, le=1, description="share of streams drawn for corruption (seeded)"
    )
    seed: int = Field(0, ge=0, description="seed of the draws")
    span_bytes: int = Field(24, ge=1, le=4096, description="characters spliced in or dropped")
    target: Target = Field(
        Target.CALLS,
        description="calls (only text inside tool calls: what a validity checker must catch) | "
        "any (any answer text: what the divergence oracle must catch)",
    )
    log: str = Field("-", description="injection log (JSON lines); - for standard output")

    @field_validator("upstream")
    @classmethod
    def _url(cls, url: str) -> str:
        from repro.spec import checked_base_url

        return checked_base_url(url)

    @field_validator("log", "host")
    @classmethod
    def _not_empty(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError(f"is empty; {_WHAT_TO_GIVE[info.field_name]}")
        return value

    @classmethod
    def build(cls, **fields: object) -> ProxySpec:
        from repro.spec import option_for, usage_error

        try:
            return cls(**fields)
        except ValidationError as exc:
            options = {name: option_for(name) for name in cls.model_fields}
            raise usage_error(exc, options) from None
