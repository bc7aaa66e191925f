"""The SGLang oracle: one process per test session, running tests/conformance/sglang_oracle.py
in SGLang's interpreter; tests ask it batches of cases over a pipe."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ORACLE = Path(__file__).with_name("sglang_oracle.py")


class SglangOracle:
    def __init__(self, python: Path) -> None:
        # stderr goes to a file: a pipe nobody reads could fill and stall the oracle.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  (closed in close())
        self._process = subprocess.Popen(
            [str(python), str(ORACLE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            encoding="utf-8",
        )

    def ask(self, op: str, cases: list[dict[str, Any]]) -> list[Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"op": op, "cases": cases}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            self._stderr.seek(0)
            stderr = self._stderr.read().decode("utf-8", "replace")
            raise RuntimeError(f"the SGLang oracle died: {stderr[-2000:]}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the SGLang oracle failed on {op}: {reply['error']}")
        return reply["results"]

    def close(self) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()  # end of input: the oracle's loop ends and it exits
        try:
            self._process.wait(timeout=30)
        finally:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
            self._stderr.close()


@pytest.fixture(scope="session")
def sglang(sglang_python: Path) -> Iterator[SglangOracle]:
    oracle = SglangOracle(sglang_python)
    try:
        yield oracle
    finally:
        oracle.close()
