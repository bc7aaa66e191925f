"""The SGLang oracle: one process per test session, running tests/conformance/sglang_oracle.py
in SGLang's interpreter; tests ask it batches of cases over a pipe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.engine_driver import EngineDriver


class SglangOracle(EngineDriver):
    """SGLang's DSML encoder and detector (sglang_oracle.py), asked by operation."""

    def __init__(self, python: Path) -> None:
        super().__init__(python, "sglang_oracle.py", "the SGLang oracle", stop_s=30)

    def ask(self, op: str, cases: list[dict[str, Any]]) -> list[Any]:  # type: ignore[override]
        return self.request({"op": op, "cases": cases}, f" on {op}")


@pytest.fixture(scope="session")
def sglang(sglang_python: Path) -> Iterator[SglangOracle]:
    oracle = SglangOracle(sglang_python)
    try:
        yield oracle
    finally:
        oracle.close()
