"""RecordSpec: what `repro record` was asked for, validated once (user input)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class RecordSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    upstream: str = Field(description="the engine's base URL, e.g. http://127.0.0.1:8000")
    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(ge=1, le=65535, description="port to listen on")
    out: Path = Field(
        description="the trace file (JSON Lines); an existing one is appended to, under a "
        "header line of this recording"
    )
    redact: tuple[str, ...] = Field(
        (),
        description="a regular expression whose every match in message text (contents, "
        "reasoning, tool-call arguments; requests and answers) is written as [redacted] "
        "(repeatable); headers are never written",
    )

    @field_validator("upstream")
    @classmethod
    def _url(cls, url: str) -> str:
        from urllib.parse import urlsplit

        from repro.spec import checked_base_url

        url = checked_base_url(url)
        if urlsplit(url).path not in ("", "/"):
            raise ValueError(
                "must be the engine's address without a path (the recorder relays each request "
                "to the path it was sent to), e.g. http://127.0.0.1:8000"
            )
        return url

    @field_validator("host")
    @classmethod
    def _host(cls, host: str) -> str:
        if not host.strip():
            raise ValueError("is empty; give an address to listen on, e.g. 127.0.0.1")
        return host

    @field_validator("out")
    @classmethod
    def _out(cls, out: Path) -> Path:
        if str(out) in ("", "-"):
            raise ValueError("give a file to write the trace to")
        if out.is_dir():
            raise ValueError(f"{out} is a folder; give a file")
        if not out.parent.is_dir():
            raise ValueError(f"the folder {out.parent} does not exist")
        return out

    @field_validator("redact")
    @classmethod
    def _patterns(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            if not pattern:
                raise ValueError("is empty; give a regular expression")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression ({exc})") from None
        return patterns

    @classmethod
    def build(cls, **fields: object) -> RecordSpec:
        from repro.spec import option_for, usage_error

        try:
            return cls(**fields)
        except ValidationError as exc:
            options = {name: option_for(name) for name in cls.model_fields}
            raise usage_error(exc, options) from None
