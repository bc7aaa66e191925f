"""Reading a trace file: every line checked against the format, then the rules across lines,
each problem one sentence that names its line and field.

    Line 4: messages[1].role is the string "bot"; it must be one of system, developer, ...
    Line 9: messages[3].tool_call_id "call_7" answers no tool call made before it.
    Line 12: session "a" has turn 3 but no turn 2.

`check_trace` lists the problems (`repro trace check`); `read_trace` returns the trace or
raises the first problem as a UsageError (a run refuses a trace it could not replay).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from repro.errors import UsageError
from repro.traces.model import FORMAT_VERSION, Message, Trace, TraceSession, TraceTurn
from repro.traces.schema import describe, field_path, line_errors
from repro.user_files import read_user_file

MAX_PROBLEMS = 1000  # a systematic mistake repeats on every line: the first thousand say it

# A caller's extra check of a tools list (the checkers' own compilation): a reason, or None.
ToolsCheck = Callable[[list[Message]], str | None]


@dataclass(frozen=True, slots=True)
class Problem:
    line: int | None  # None: the file as a whole
    text: str  # a sentence part: the field and what is wrong with it

    def sentence(self) -> str:
        where = f"Line {self.line}: " if self.line is not None else ""
        text = self.text[0].upper() + self.text[1:] if not where else self.text
        return f"{where}{text}."


@dataclass
class _Checked:
    """What the check builds as it goes: problems, and the sessions it could read."""

    problems: list[Problem] = field(default_factory=list)
    tools_seen: dict[bytes, list[Message]] = field(default_factory=dict)
    tools_check: ToolsCheck | None = None

    def add(self, line: int | None, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(line, text))

    def tools(self, line: int, tools: list[Message], where: str = "tools") -> list[Message]:
        """One shared list per distinct tools list; each checked once, when first seen."""
        key = orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)
        known = self.tools_seen.get(key)
        if known is not None:
            return known
        self.tools_seen[key] = tools
        problems = list(_tools_problems(tools, where))
        for problem in problems:
            self.add(line, problem)
        if self.tools_check is not None and not problems:
            reason = self.tools_check(tools)
            if reason:
                self.add(line, f"{where} cannot be used to judge answers: {reason}")
        return tools


def check_trace(path: Path, tools_check: ToolsCheck | None = None) -> tuple[Trace, list[Problem]]:
    """The trace as far as it could be read, and every problem found (empty: valid)."""
    data = read_user_file(path, f"The trace {path}")
    checked = _Checked(tools_check=tools_check)
    sessions = _read(data, checked)
    if not checked.problems and not sessions:
        checked.add(None, f"{path} holds no session")
    problems = sorted(checked.problems, key=lambda p: -1 if p.line is None else p.line)
    return Trace(path, tuple(sessions)), problems


def read_trace(path: Path, tools_check: ToolsCheck | None = None) -> Trace:
    """The trace; a file with any problem is a UsageError naming the first one."""
    trace, problems = check_trace(path, tools_check)
    if problems:
        more = len(problems) - 1
        also = (
            f" ({more} more problem{'s' if more > 1 else ''}: `repro trace check {path}` lists them)"
            if more
            else ""
        )
        raise UsageError(
            f"The trace {path} cannot be replayed: {problems[0].sentence().rstrip('.')}{also}."
        )
    return trace


def _read(data: bytes, checked: _Checked) -> list[TraceSession]:
    if b"\0" in data[:65536]:
        checked.add(None, "the file holds NUL bytes: it is a binary file, not a JSON Lines trace")
        return []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        checked.add(
            None,
            f"the file is not UTF-8 text (line {line}, byte {exc.start}): a trace is JSON Lines",
        )
        return []
    builder = _Sessions(checked)
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw.strip():
            _one_line(number, raw, builder, checked)
    return builder.finish()


def _one_line(number: int, raw: str, builder: _Sessions, checked: _Checked) -> None:
    try:
        line = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        checked.add(number, f"it is not JSON ({str(exc).split(':')[0]})")
        return
    if not isinstance(line, dict):
        checked.add(number, f"it is {describe(line)}, not a JSON object")
        return
    kind = "header_line" if "trace" in line else "turn_line" if "turn" in line else "session_line"
    try:
        complaints = list(line_errors(kind, line))
    except RecursionError:
        checked.add(number, "it nests too deeply to be read")
        return
    for complaint in complaints:
        checked.add(number, complaint)
    if complaints:
        return
    if kind == "header_line":
        if line["trace"] != FORMAT_VERSION:  # the schema holds it to 1; a later version says so
            checked.add(number, f"trace is {line['trace']}; this repro reads version 1")
    elif kind == "session_line":
        builder.session_line(number, line)
    else:
        builder.turn_line(number, line)


class _Sessions:
    """Sessions as their lines come, checked across lines once the file is read."""

    def __init__(self, checked: _Checked) -> None:
        self.checked = checked
        self.whole: dict[str, TraceSession] = {}
        self.turn_lines: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.order: list[str] = []

    def session_line(self, number: int, line: dict[str, Any]) -> None:
        sid = str(line.get("session", f"line-{number}"))
        if sid in self.whole or sid in self.turn_lines:
            first = self.whole[sid].line if sid in self.whole else self.turn_lines[sid][0][0]
            self.checked.add(number, f"session {json.dumps(sid)} was already given on line {first}")
            return
        messages: list[Message] = line["messages"]
        tools = self.checked.tools(number, line.get("tools", []))
        params = line.get("params", {})
        _references(number, messages, 0, self.checked)
        turns = []
        for i, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            if i == 0:
                self.checked.add(
                    number,
                    "messages[0] is an assistant message: a conversation starts with what was "
                    "sent to the engine (a system or user message)",
                )
                return
            turns.append(TraceTurn(tuple(messages[:i]), tools, params, message, number))
        if messages[-1]["role"] != "assistant":  # a last request, its answer not recorded
            turns.append(TraceTurn(tuple(messages), tools, params, None, number))
        self.whole[sid] = TraceSession(sid, number, tuple(turns))
        self.order.append(sid)

    def turn_line(self, number: int, line: dict[str, Any]) -> None:
        sid = str(line["session"])
        if sid in self.whole:
            self.checked.add(
                number,
                f"session {json.dumps(sid)} is a whole session on line {self.whole[sid].line}; "
                "its turns cannot also be given one by one",
            )
            return
        if sid not in self.turn_lines:
            self.turn_lines[sid] = []
            self.order.append(sid)
        self.turn_lines[sid].append((number, line))

    def finish(self) -> list[TraceSession]:
        sessions = []
        for sid in self.order:
            if sid in self.whole:
                sessions.append(self.whole[sid])
            elif (session := self._from_turns(sid, self.turn_lines[sid])) is not None:
                sessions.append(session)
        return sessions

    def _from_turns(self, sid: str, lines: list[tuple[int, dict[str, Any]]]) -> TraceSession | None:
        checked, name = self.checked, json.dumps(sid)
        by_turn: dict[int, tuple[int, dict[str, Any]]] = {}
        for number, line in lines:
            if line["turn"] in by_turn:
                first = by_turn[line["turn"]][0]
                checked.add(
                    number, f"session {name} has a turn {line['turn']} already (line {first})"
                )
            else:
                by_turn[line["turn"]] = (number, line)
        turns: list[TraceTurn] = []
        request: tuple[Message, ...] = ()
        tools: list[Message] = []
        params: dict[str, Any] = {}
        ok = True
        for k in range(max(by_turn) + 1):
            if k not in by_turn:
                later = min(t for t in by_turn if t > k)
                checked.add(by_turn[later][0], f"session {name} has turn {later} but no turn {k}")
                return None
            number, line = by_turn[k]
            base = line.get("base", len(request))
            if k == 0 and base:
                checked.add(
                    number,
                    f"base is {base} on turn 0; a session's first turn starts from nothing (base 0)",
                )
                ok = False
            elif base > len(request):
                checked.add(
                    number,
                    f"base is {base}, but the previous turn's request (line "
                    f"{by_turn[k - 1][0]}) has {len(request)} messages",
                )
                ok = False
            request = request[:base] + tuple(line["messages"])
            if not request:
                checked.add(number, f"turn {k}'s request has no messages")
                ok = False
            _references(number, list(request), min(base, len(request)), checked)
            if "tools" in line:
                tools = checked.tools(number, line["tools"])
            params = line.get("params", params)
            response = line.get("response")
            if response is not None and response.get("role", "assistant") != "assistant":
                checked.add(
                    number,
                    f"response.role is {describe(response['role'])}; an answer is an assistant message",
                )
                ok = False
            turns.append(TraceTurn(request, tools, params, response, number))
        return TraceSession(sid, lines[0][0], tuple(turns)) if ok else None


def _references(number: int, messages: Sequence[Message], first: int, checked: _Checked) -> None:
    """Tool messages from `first` on answer a tool call made before them; call ids are unique."""
    made: dict[str, int] = {}
    for i, message in enumerate(messages):
        for j, call in enumerate(message.get("tool_calls") or ()):
            if call["id"] in made and i >= first:
                checked.add(
                    number,
                    f"messages[{i}].tool_calls[{j}].id {json.dumps(call['id'])} is the id of "
                    f"another call already (messages[{made[call['id']]}])",
                )
            made.setdefault(call["id"], i)
        if message["role"] == "tool" and i >= first and message["tool_call_id"] not in made:
            checked.add(
                number,
                f"messages[{i}].tool_call_id {json.dumps(message['tool_call_id'])} answers no "
                "tool call made before it in the conversation",
            )


def _tools_problems(tools: list[Message], where: str) -> Iterator[str]:
    names: dict[str, int] = {}
    for i, tool in enumerate(tools):
        function = tool["function"]
        name = function["name"]
        if name in names:
            yield f"{where}[{i}].function.name {json.dumps(name)} is declared twice (also {where}[{names[name]}])"
        names.setdefault(name, i)
        parameters = function.get("parameters")
        if parameters is None:
            continue
        try:
            with warnings.catch_warnings():  # `re` warning of a set like [[ (see toolset.py)
                warnings.simplefilter("ignore", FutureWarning)
                Draft202012Validator.check_schema(parameters)
        except SchemaError as exc:
            at = field_path([f"{where}[{i}]", "function", "parameters", *exc.absolute_path])
            yield f"{at} is not a valid JSON Schema ({exc.message})"
        except RecursionError:
            yield f"{where}[{i}].function.parameters nests too deeply to be read"
