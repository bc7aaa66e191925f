"""The four tools of the agentic-coding scenario, as an OpenAI `tools` list with JSON Schemas."""

from __future__ import annotations

from typing import Any


def _tool(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOLS: list[dict[str, Any]] = [
    _tool(
        "read_file",
        "Read a range of lines from a file in the repository, with line numbers.",
        {
            "path": {"type": "string", "description": "Path relative to the repository root."},
            "start_line": {"type": "integer", "minimum": 1, "description": "First line, 1-based."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive."},
        },
        ["path", "start_line"],
    ),
    _tool(
        "search_code",
        "Search the repository for an identifier or text; returns path:line: matching line.",
        {
            "query": {"type": "string", "minLength": 1},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 500},
            "regex": {"type": "boolean", "description": "Treat the query as a regular expression."},
        },
        ["query"],
    ),
    _tool(
        "edit_file",
        "Replace an exact snippet of a file with new text; the snippet must occur exactly once.",
        {
            "path": {"type": "string"},
            "old_text": {"type": "string", "minLength": 1},
            "new_text": {"type": "string"},
            "reason": {
                "type": "object",
                "properties": {
                    "summary": {"type": "string"},
                    "risk": {"type": "string", "enum": ["low", "medium", "high"]},
                    "lines": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["summary", "risk"],
                "additionalProperties": False,
            },
        },
        ["path", "old_text", "new_text"],
    ),
    _tool(
        "run_tests",
        "Run the test suite or one test id (pytest node id) and return its output.",
        {
            "target": {"type": "string"},
            "max_failures": {"type": "integer", "minimum": 1},
            "verbose": {"type": "boolean"},
        },
        ["target"],
    ),
]

TOOL_NAMES = frozenset(t["function"]["name"] for t in TOOLS)
