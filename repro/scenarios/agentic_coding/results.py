"""The tool simulator: a deterministic result for each call, sized to a token budget."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from repro.scenarios.agentic_coding import texts
from repro.scenarios.agentic_coding.shown import Shown
from repro.scenarios.agentic_coding.world import CodeLine, World

T = TypeVar("T")
CHARS_PER_TOKEN = 4  # the budget is approximate; the next turn re-aims from the server's usage
MIN_LINES = 8


def _numbered(lines: list[CodeLine], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line.text}" for i, line in enumerate(lines))


def _take(budget_tokens: int, rows: Iterable[T], size: Callable[[T], int]) -> list[T]:
    """Rows in order until their text fills the budget (at least MIN_LINES of them)."""
    budget, taken = budget_tokens * CHARS_PER_TOKEN, []
    for row in rows:
        if len(taken) >= MIN_LINES and budget <= 0:
            break
        taken.append(row)
        budget -= size(row)
    return taken


def _code_size(line: CodeLine) -> int:
    return 8 + len(line.text)  # the number column, the tab and the newline


class ToolSimulator:
    """Answers calls for one session's World and records what it showed."""

    def __init__(self, world: World, shown: Shown) -> None:
        self.world = world
        self.shown = shown
        self._handlers: dict[str, Callable[[dict[str, Any], int, bool], str]] = {
            "read_file": self._read,
            "search_code": self._search,
            "edit_file": self._edit,
            "run_tests": self._tests,
        }

    def answer(self, name: str, args: Any, budget_tokens: int, tests_pass: bool) -> str:
        handler = self._handlers.get(name)
        if handler is None:
            return f"{texts.HEAD_ERROR} unknown tool '{name}'"
        if not isinstance(args, dict):
            return f"{texts.HEAD_ERROR} arguments of {name} must be a JSON object"
        try:
            return handler(args, max(budget_tokens, 40), tests_pass)
        except (KeyError, TypeError, ValueError) as exc:
            return f"{texts.HEAD_ERROR} invalid arguments for {name}: {exc}"

    def _read(self, args: dict[str, Any], budget_tokens: int, _: bool) -> str:
        path = args["path"]
        if path not in self.world.lengths:
            return f"{texts.HEAD_ERROR} no such file: {path}"
        length = self.world.lengths[path]
        start = min(max(1, int(args["start_line"])), length)
        rows = (self.world.line(path, n) for n in range(start, length + 1))
        lines = _take(budget_tokens, rows, _code_size)
        end = start + len(lines) - 1
        self.shown.add_code(path, lines)
        return (
            f"{texts.HEAD_READ} {path} lines {start}-{end} of {length}\n{_numbered(lines, start)}"
        )

    def _search(self, args: dict[str, Any], budget_tokens: int, _: bool) -> str:
        query = str(args["query"])
        limit = int(args.get("max_results", 500))
        places = self.world.occurrences(query, limit) if query in self.world.home else []
        hits = [(path, number, self.world.line(path, number)) for path, number in places]
        hits = _take(budget_tokens, hits, lambda hit: len(hit[0]) + 10 + len(hit[2].text))
        out = [f'{texts.HEAD_SEARCH} {len(hits)} matches for "{query}"']
        for path, number, line in hits:
            self.shown.add_code(path, [line])
            out.append(f"{path}:{number}: {line.text}")
        return "\n".join(out)

    def _edit(self, args: dict[str, Any], budget_tokens: int, _: bool) -> str:
        path, old = args["path"], str(args["old_text"])
        if path not in self.world.lengths:
            return f"{texts.HEAD_ERROR} no such file: {path}"
        if old.split("\n")[0].strip() not in self.shown.lines.get(path, ()):
            return f"{texts.HEAD_ERROR} old_text does not occur in {path}"
        length = self.world.lengths[path]
        at = self.world.digest("edit", path, old) % (length - 40) + 1
        lines = _take(
            budget_tokens, (self.world.line(path, n) for n in range(at, length + 1)), _code_size
        )
        self.shown.add_code(path, lines)
        return (
            f"{texts.HEAD_EDIT} {path}: replaced 1 occurrence at line {at + 3}\n"
            f"context after the edit:\n{_numbered(lines, at)}"
        )

    def _tests(self, args: dict[str, Any], budget_tokens: int, tests_pass: bool) -> str:
        target = str(args["target"])
        world = self.world
        if tests_pass:
            return f"{texts.HEAD_TESTS} {target}: {texts.PASSED} (1 passed in 0.84s)"
        frames = world.occurrences(world.failing_symbol, 4)
        out = [
            f"{texts.HEAD_TESTS} {target}: FAILED (1 failed, {len(frames) * 7} passed)",
            "Traceback:",
        ]
        for path, number in frames:
            line = world.line(path, number)
            self.shown.add_code(path, [line])
            out.append(
                f'  File "{path}", line {number}, in {world.failing_symbol}\n    {line.text}'
            )
        out.append(f"E   {world.error}: {world.failing_symbol} returned an unexpected value")
        for i in range(max(0, budget_tokens * CHARS_PER_TOKEN // 60 - len(out) * 2)):
            path = world.paths[i % len(world.paths)]
            module = path.rsplit("/", 1)[1].removesuffix(".py")
            symbol = world.symbols[i % len(world.symbols)]
            test = f"tests/test_{module}.py::test_{symbol}"
            self.shown.tests.add(test)
            out.append(f"PASSED {test}")
        return "\n".join(out)
