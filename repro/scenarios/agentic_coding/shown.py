"""What one session has been shown, and the semantic oracle that judges its turns against it."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence

from repro.checkers.verdict import Defect, ToolCall
from repro.scenarios.agentic_coding.world import CodeLine

# What a free-text answer can name that the oracle can check: a test id (`file.py::name`)
# or a file path with at least one directory (a bare `x.py` may be prose). Directory names
# hold no dot, so a sentence's last word does not join the path after it ("passes.tests/").
_NAMED = re.compile(r"(?P<path>(?:[\w-]+/)*[\w.-]+\.py)(?P<test>::\w+)?\b")


class Shown:
    """Paths, symbols, test ids and per-path code lines the session has seen so far.

    Lines are kept without surrounding whitespace: SGLang's DSML detector strips string
    values, so a faithful engine may return `old_text` without its indentation.
    """

    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.symbols: set[str] = set()
        self.tests: set[str] = set()
        self.lines: defaultdict[str, set[str]] = defaultdict(set)

    def add_code(self, path: str, lines: Sequence[CodeLine]) -> None:
        self.paths.add(path)
        seen = self.lines[path]
        for line in lines:
            seen.add(line.text.strip())
            if line.symbol:
                self.symbols.add(line.symbol)
            if line.cited_path:
                self.paths.add(line.cited_path)

    def defects(self, calls: Sequence[ToolCall]) -> list[Defect]:
        """A `semantic` defect for each argument that names something never shown here."""
        found = []
        for i, call in enumerate(calls):
            try:
                args = json.loads(call.arguments)
            except ValueError:
                continue  # the syntax checker reports unparseable arguments
            if not isinstance(args, dict):
                continue
            problem = self._problem(call.name, args)
            if problem:
                found.append(Defect("semantic", 0, f"{call.name}: {problem}", f"tool_calls[{i}]"))
        return found

    def answer_defects(self, answer: str) -> list[Defect]:
        """A `semantic` defect for each test id or file path in a free-text answer (a turn
        without calls) that this session was never shown: text another request wrote."""
        if ".py" not in answer:
            # Nothing _NAMED could match; the scan below tries every position of the text,
            # the larger part of repro's own CPU per streamed token (bench/RESULTS.md).
            return []
        found = []
        test_files = {test.partition("::")[0] for test in self.tests}
        for match in _NAMED.finditer(answer):
            name = match.group()
            if match.group("test"):
                unseen, what = name not in self.tests, "test"
            elif "/" in name:
                unseen, what = name not in self.paths and name not in test_files, "path"
            else:
                continue
            if unseen:
                message = f"the answer names {what} '{name}', never shown to this session"
                found.append(Defect("semantic", match.start(), message))
        return found

    def _problem(self, name: str, args: dict) -> str | None:
        path = args.get("path")
        if name in ("read_file", "edit_file") and isinstance(path, str) and path not in self.paths:
            return f"path '{path}' was never shown to this session"
        if name == "search_code":
            query = args.get("query")
            if isinstance(query, str) and query not in self.symbols:
                return f"query '{query}' names a symbol this session was never shown"
        if name == "run_tests":
            target = args.get("target")
            if isinstance(target, str) and target not in self.tests:
                return f"target '{target}' is not a test this session was shown"
        if name == "edit_file" and isinstance(args.get("old_text"), str) and isinstance(path, str):
            for text in (t.strip() for t in args["old_text"].split("\n")):
                if text not in self.lines.get(path, ()):
                    elsewhere = next((p for p, seen in self.lines.items() if text in seen), None)
                    where = f"; it was shown in {elsewhere}" if elsewhere else ""
                    return f"old_text line {text!r} was never shown in {path}{where}"
        return None
