"""The model half: what the scripted agent says next, from the conversation text alone.

The engine calls `agent_script(messages, tools)` per request. It reads only the task (the
first user message) and the most recent useful tool results, so its cost does not grow with
the history. Every choice is a function of the text it reads, so a request answered from the
wrong context (a race in the engine) produces a turn that the oracle can tell apart.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

from repro.scenarios.agentic_coding import texts
from repro.scenarios.base import Message, PlannedCall, PlannedTurn

_TASK = re.compile(r"The test (\S+) fails .* with (\w+) raised from `(\w+)`")
_SEARCH_HIT = re.compile(r"^(src/\S+\.py):(\d+): ", re.M)
_FRAME = re.compile(r'^  File "(src/\S+\.py)", line (\d+), in (\w+)$', re.M)
_IMPORT = re.compile(r"import (\w+)  # (src/\S+\.py)$")


def _pick(text: str, n: int, salt: int = 0) -> int:
    """A deterministic index in range(n) chosen by the text itself."""
    return (zlib.crc32(text.encode()) + salt) % n


def _task(messages: Sequence[Message]) -> tuple[str, str, str]:
    for message in messages:
        if message.get("role") == "user":
            match = _TASK.search(str(message.get("content", "")))
            if match:
                return match.group(1), match.group(2), match.group(3)
    return "tests", "Error", "main"


def _latest_results(messages: Sequence[Message]) -> tuple[list[str], bool]:
    """The newest group of useful tool results, and whether the very last group failed.

    Errors and retry notices are skipped, so the agent resumes from what it last learned;
    the flag lets it change course instead of repeating a call that just failed.
    """
    group: list[str] = []
    failed = newest = False
    for message in reversed(messages):
        role = message.get("role")
        if role == "tool":
            content = str(message.get("content", ""))
            if not content.startswith(texts.HEAD_ERROR):
                group.append(content)
        elif role == "assistant":
            if group:
                return group[::-1], failed
            failed = failed or not newest  # the newest assistant turn's results were all errors
            newest = True
        elif role == "user" and message.get("content") != texts.RETRY_NOTICE:
            break
    return group[::-1], failed


def _read_lines(result: str) -> tuple[str, list[tuple[int, str]]]:
    head, _, body = result.partition("\n")
    path = head.removeprefix(texts.HEAD_READ).split()[0] if head.startswith(texts.HEAD_READ) else ""
    if head.startswith(texts.HEAD_EDIT):
        path = head.removeprefix(texts.HEAD_EDIT).split(":")[0].strip()
        body = body.partition("\n")[2]
    lines = []
    for row in body.split("\n"):
        number, tab, text = row.partition("\t")
        if tab and text.strip():
            lines.append((int(number), text))
    return path, lines


def _changed(line: str) -> str:
    for old, new in (
        ("<=", "<"),
        (">=", ">"),
        (" < ", " <= "),
        (" > ", " >= "),
        ("is None", "is not None"),
    ):
        if old in line:
            return line.replace(old, new, 1)
    return line + "  # reviewed"


def _search(symbol: str, why: str, salt: int) -> PlannedTurn:
    args: dict[str, Any] = {"query": symbol}
    if salt % 2:
        args["max_results"] = 200
    return PlannedTurn(
        f"{why} I'll search for `{symbol}` to find where it is defined.",
        "",
        (PlannedCall("search_code", args),),
    )


def _run_tests(test: str, why: str) -> PlannedTurn:
    return PlannedTurn(why, "", (PlannedCall("run_tests", {"target": test, "max_failures": 1}),))


def _after_search(result: str, test: str) -> PlannedTurn:
    hits = list(dict.fromkeys((m.group(1), int(m.group(2))) for m in _SEARCH_HIT.finditer(result)))
    if not hits:
        return _run_tests(
            test, "The search found nothing useful; I'll look at the test output again."
        )
    first = hits[_pick(result, len(hits))]
    picks = [first]
    others = [h for h in hits if h[0] != first[0]]
    if others and _pick(result, 3, 1) == 0:
        picks.append(others[_pick(result, len(others), 2)])
    calls = tuple(
        PlannedCall("read_file", {"path": p, "start_line": max(1, n - 12), "end_line": n + 60})
        for p, n in picks
    )
    where = " and ".join(f"{p} line {n}" for p, n in picks)
    return PlannedTurn(f"The search points at {where}. I'll read the code around it.", "", calls)


def _after_read(result: str, test: str) -> PlannedTurn:
    path, lines = _read_lines(result)
    if not lines:
        return _run_tests(
            test, "That read returned no code; I'll run the test to see where it fails."
        )
    cited = [m for _, text in lines if (m := _IMPORT.search(text))]
    if cited and _pick(result, 4, 3) == 0:
        match = cited[_pick(result, len(cited), 4)]
        return _search(
            match.group(1), f"{path} imports `{match.group(1)}` from {match.group(2)}.", len(lines)
        )
    i = _pick(result, len(lines), 5)
    number, text = lines[i]
    old = [text]
    if i + 1 < len(lines) and lines[i + 1][0] == number + 1 and _pick(result, 2, 6):
        old.append(lines[i + 1][1])
    old_text = "\n".join(old)
    new_text = "\n".join(_changed(t) for t in old)
    args: dict[str, Any] = {"path": path, "old_text": old_text, "new_text": new_text}
    if _pick(result, 3, 7):
        span = list(range(number, number + len(old)))
        args["reason"] = {
            "summary": f"off-by-one in the bound at line {number}",
            "risk": "low",
            "lines": span,
        }
    why = f"Line {number} of {path} compares with the wrong bound: `{text.strip()}`. I'll fix it."
    return PlannedTurn(why, "", (PlannedCall("edit_file", args),))


def _after_tests(result: str, test: str, symbol: str) -> PlannedTurn:
    if f": {texts.PASSED} " in result.partition("\n")[0]:
        return PlannedTurn(
            f"{test} passes now, so the edit fixed it.",
            f"The bug was an off-by-one bound in `{symbol}`: a comparison used < where <= was meant. "
            f"I fixed the bound and {test} passes.",
        )
    frames = _FRAME.findall(result)
    if not frames:
        return _search(symbol, "The test failed without a traceback.", 0)
    path, line, _ = frames[-1]
    start = max(1, int(line) - 12)
    return PlannedTurn(
        f"{test} still fails; the deepest frame is {path} line {line}. I'll read there.",
        "",
        (PlannedCall("read_file", {"path": path, "start_line": start, "end_line": start + 50}),),
    )


def agent_script(messages: Sequence[Message], tools: Sequence[Message]) -> PlannedTurn:
    """The next turn of the agentic-coding agent."""
    test, _, symbol = _task(messages)
    results, failed = _latest_results(messages)
    if failed:
        return _run_tests(test, f"That call failed. I'll run {test} to see where things stand.")
    if not results:
        return _search(symbol, f"The failing test is {test}.", 0)
    latest = results[0]
    if latest.startswith(texts.HEAD_SEARCH):
        return _after_search(latest, test)
    if latest.startswith((texts.HEAD_READ,)):
        return _after_read(latest, test)
    if latest.startswith(texts.HEAD_EDIT):
        verbose = bool(_pick(latest, 2))
        return PlannedTurn(
            f"The edit is in. I'll run {test} to check it.",
            "",
            (PlannedCall("run_tests", {"target": test, "max_failures": 1, "verbose": verbose}),),
        )
    if latest.startswith(texts.HEAD_TESTS):
        return _after_tests(latest, test, symbol)
    return _search(symbol, "I lost track of the last result.", 0)
