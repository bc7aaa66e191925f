"""`repro check`: verdicts for completions saved as files, against an OpenAI tools file.

Exit codes: 0 every file clean, 1 any defect, 2 a usage error (raised as UsageError).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from repro.checkers.formats import FORMATS, Format, read_raw
from repro.checkers.render import render_defect
from repro.checkers.toolset import ToolSet, UnusableSchema
from repro.checkers.verdict import AssistantOutput, Verdict
from repro.errors import EXIT_CORRUPTION, EXIT_OK, UsageError
from repro.user_files import TOO_DEEP, read_user_file


def check_command(
    tools: Path, files: list[Path], format: str = "dsml-v32", as_json: bool = False
) -> int:
    """Check each file as one turn in `format`; print a report; return the exit code."""
    chosen = FORMATS.get(format)
    if chosen is None:
        raise UsageError(f"Unknown format {format!r}; choose one of: {', '.join(FORMATS)}.")
    toolset = _read_tools(tools)
    if not files:
        raise UsageError("Give at least one FILE to check.")
    outputs = [(path, _read_turn(path, chosen)) for path in files]  # all usage errors first
    dirty = defects = 0
    for path, output in outputs:
        try:
            verdict = chosen.check(output, toolset)
        except UnusableSchema as e:
            raise UsageError(f"The tools file {tools} cannot be used: {e}.") from None
        except RecursionError:
            raise UsageError(f"{path} {TOO_DEEP}.") from None
        dirty += not verdict.clean
        defects += len(verdict.defects)
        report = _json_line(path, verdict) if as_json else _human(path, output, verdict, chosen)
        # Lone surrogates (undecodable input) cannot be printed as UTF-8: show them escaped.
        print(report.encode("utf-8", "backslashreplace").decode("utf-8"))
    if not as_json and len(files) > 1:
        print(f"{len(files)} files checked: {dirty} with defects ({_count(defects, 'defect')}).")
    for note in toolset.unjudged:  # a pattern not evaluated: never a defect, but said
        print(f"note: {note}", file=sys.stderr)
    return EXIT_CORRUPTION if dirty else EXIT_OK


def _read_tools(path: Path) -> ToolSet:
    data = read_user_file(path, f"The tools file {path}")
    try:
        tools = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"The tools file {path} is not valid JSON: {e}.") from None
    except RecursionError:
        raise UsageError(f"The tools file {path} {TOO_DEEP}.") from None
    if isinstance(tools, dict) and "tools" in tools:
        tools = tools["tools"]  # a whole request body works too
    try:
        return ToolSet.from_openai(tools)
    except (ValueError, AttributeError, TypeError) as e:
        raise UsageError(f"The tools file {path} is not an OpenAI tools list: {e}.") from None
    except RecursionError:
        raise UsageError(f"The tools file {path} {TOO_DEEP}.") from None


def _read_turn(path: Path, chosen: Format) -> AssistantOutput:
    # Undecodable bytes become lone surrogates, which the checks report as invalid_char.
    text = read_user_file(path, str(path)).decode("utf-8", errors="surrogateescape")
    if chosen.read is read_raw and _a_saved_record(text):
        raise UsageError(
            f"{path} holds a JSON record (a chat completion, or a line of a run's "
            "failures.jsonl?), not a raw completion: give the text after the assistant tag, "
            "or --format openai-parsed for a chat completion."
        )
    try:
        return chosen.read(text)
    except (ValueError, AttributeError, TypeError) as e:
        raise UsageError(
            f"{path} is not a valid {chosen.name} file ({chosen.summary}): {e}."
        ) from None
    except RecursionError:
        raise UsageError(f"{path} {TOO_DEEP}.") from None


# Keys of what people save around a completion: an API response, a message, a run's records.
_RECORD_KEYS = {"choices", "message", "messages", "content", "tool_calls", "session_id", "request"}


def _a_saved_record(text: str) -> bool:
    """The text, or its first line (JSON lines), is a JSON object with a record's keys: the
    raw completion is somewhere inside it."""
    text = text.strip()
    if not text.startswith("{"):
        return False
    for candidate in (text, text.split("\n", 1)[0]):
        try:
            record = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        return isinstance(record, dict) and bool(_RECORD_KEYS & record.keys())
    return False


def _field_text(output: AssistantOutput, field: str) -> str:
    if field == "content":
        return output.content
    if field == "reasoning":
        return output.reasoning
    index = int(field.removeprefix("tool_calls[").removesuffix("]"))
    return output.tool_calls[index].arguments


def _human(path: Path, output: AssistantOutput, verdict: Verdict, chosen: Format) -> str:
    if verdict.clean:
        names = ", ".join(c.name for c in verdict.calls)
        return f"{path}: clean, {_count(len(verdict.calls), 'tool call')}" + (
            f" ({names})" if names else ""
        )
    # The file's text is the content: positions are the file's (not for a JSON message).
    raw = chosen.raw and not (chosen.read is not read_raw and output.tool_calls)
    return "\n".join(
        render_defect(
            str(path),
            _field_text(output, d.field),
            d,
            field_is_source=raw and d.field == "content",
        )
        for d in verdict.defects
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _json_line(path: Path, verdict: Verdict) -> str:
    record = {
        "file": str(path),
        "clean": verdict.clean,
        "defects": [
            {"kind": str(d.kind), "offset": d.offset, "message": d.message, "field": d.field}
            for d in verdict.defects
        ],
        "calls": [{"name": c.name, "arguments": c.arguments} for c in verdict.calls],
    }
    try:
        line = json.dumps(record, ensure_ascii=False)
        line.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable input: escape them
        line = json.dumps(record)
    return line
