"""Shared fixtures: the SGLang interpreter (built on first use) and the repo root."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SGLANG_ENV = Path(os.environ.get("REPRO_SGLANG_ENV", REPO_ROOT / ".cache" / "sglang-0.5.23"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    """SGLang 0.5.23 + sglang-router 0.3.2 on CPU torch, built by scripts/build-sglang-env.

    CI starts from a clean clone, so the first test that needs it builds it (about
    two minutes); later runs reuse it. It is never skipped: conformance is part of CI.
    """
    subprocess.run(
        [str(REPO_ROOT / "scripts" / "build-sglang-env"), str(SGLANG_ENV)],
        check=True,
        timeout=900,
    )
    return SGLANG_ENV / "bin" / "python"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
