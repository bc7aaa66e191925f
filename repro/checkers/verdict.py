"""What a checker says about one assistant turn: the calls it found and each defect."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the harness understood it; `arguments` is the JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class AssistantOutput:
    """One assistant turn as received: the text fields, server-parsed calls and why it stopped."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Defect:
    """One thing wrong with a turn.

    `kind` is a stable snake_case name (e.g. `malformed_markup`, `unknown_tool`,
    `schema_violation`, `semantic`); `field` says which text `offset` (characters)
    points into: `content`, `reasoning`, or `tool_calls[i]` (the arguments text).
    """

    kind: str
    offset: int
    message: str
    field: str = "content"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The checker's answer for one turn: the calls it extracted and every defect found."""

    calls: tuple[ToolCall, ...] = ()
    defects: tuple[Defect, ...] = field(default_factory=tuple)

    @property
    def clean(self) -> bool:
        return not self.defects
