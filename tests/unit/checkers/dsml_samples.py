"""Tools and canonical texts shared by the checker tests."""

from __future__ import annotations

from typing import Any

from repro.checkers.toolset import ToolSet
from repro.dsml.encode import encode_completion

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "date": {"type": "string"}},
                "required": ["location", "date"],
                "additionalProperties": False,
            },
        },
    },
    {"type": "function", "function": {"name": "get_date", "parameters": {"type": "object"}}},
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "topn": {"type": "integer", "minimum": 1, "maximum": 50},
                    "source": {"type": "string", "enum": ["web", "news"]},
                    "filters": {
                        "type": "object",
                        "properties": {"lang": {"type": "string"}, "after": {"type": "integer"}},
                        "additionalProperties": False,
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
]
TOOLSET = ToolSet.from_openai(TOOLS)

WEATHER = ("get_weather", {"location": "San Francisco", "date": "2024-01-16"})
DATE = ("get_date", {})
SEARCH = (
    "search",
    {"query": 'DSML <tags> & "quotes"\nline two', "topn": 3, "filters": {"lang": "zh"}},
)

TWO_CALLS = encode_completion([WEATHER, DATE], content="Let me check.")
SEARCH_CALL = encode_completion([SEARCH])
