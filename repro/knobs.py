"""Knobs: named axes of a server configuration, and the story's default values.

A knob's values and how each becomes flags or environment live in a launch profile
(profiles/*.toml). This module holds only what is true for every profile: the
common knobs that have their own CLI option, their defaults (the story's PD
deployment), and the `name=value` syntax.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from repro.errors import UsageError

# The story's deployment (DESIGN §1): PD + HiCache with fp8 index-K is where a team starts,
# so `repro run --index-k bf16` is the failing configuration. Written once, here.
STORY_DEFAULTS: dict[str, str] = {
    "topology": "pd",
    "hicache": "on",
    "index_k": "fp8",
    "topk_v2": "on",
    "custom_kernels": "off",
    "cuda_graph": "on",
}


def parse_assignment(text: str) -> tuple[str, str]:
    """Split one `name=value`; names use underscores (`index-k` is accepted as `index_k`)."""
    name, sep, value = text.partition("=")
    name, value = name.strip().replace("-", "_"), value.strip()
    if not sep or not name or not value:
        raise UsageError(
            f"'{text}' is not a knob setting; write it as name=value, e.g. index_k=bf16."
        )
    return name, value


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """Parse `name=value` items, each possibly a comma-separated list. A later item wins (a
    script may append an override); within one list a name with two values is refused,
    since which one was meant cannot be told."""
    knobs: dict[str, str] = {}
    for item in items:
        this: dict[str, str] = {}
        for part in item.split(","):
            if part.strip():
                name, value = parse_assignment(part)
                if this.get(name, value) != value:
                    raise UsageError(
                        f"{name} is given twice in '{item}' ({name}={this[name]}, "
                        f"{name}={value}); give it once."
                    )
                this[name] = value
        knobs |= this
    return knobs


def describe(config: Mapping[str, str], sep: str = ",") -> str:
    """`topology=pd,hicache=on,...` in a stable order: the common knobs first (`sep=", "`
    lets a table wrap it rather than cut it short)."""
    order = [k for k in STORY_DEFAULTS if k in config] + sorted(
        k for k in config if k not in STORY_DEFAULTS
    )
    return sep.join(f"{k}={config[k]}" for k in order)
