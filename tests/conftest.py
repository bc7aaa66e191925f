"""Shared fixtures: the SGLang interpreter (built on first use) and the repo root."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

# A bug in repro ends a command in one sentence, its traceback saved to a file
# (repro/errors.py); in the tests it is printed on stderr too, so that every check for
# "Traceback" in a command's output still catches a bug, in-process or in a subprocess.
os.environ["REPRO_TRACEBACK"] = "1"

REPO_ROOT = Path(__file__).resolve().parent.parent
SGLANG_ENV = Path(os.environ.get("REPRO_SGLANG_ENV", REPO_ROOT / ".cache" / "sglang-0.5.23"))
# Where the vLLM profile looks by default ({repo_root}/.cache/...): the tests use its defaults
# (REPRO_VLLM_ENV and REPRO_TINY_MODEL move them, as REPRO_SGLANG_ENV does SGLang's).
VLLM_ENV = Path(os.environ.get("REPRO_VLLM_ENV", REPO_ROOT / ".cache" / "vllm-0.32.0"))
TINY_MODEL = Path(os.environ.get("REPRO_TINY_MODEL", REPO_ROOT / ".cache" / "tiny-qwen2"))


def build_sglang_env() -> None:
    """Idempotent: a second call returns at once (the script's stamp file)."""
    subprocess.run(
        [str(REPO_ROOT / "scripts" / "build-sglang-env"), str(SGLANG_ENV)], check=True, timeout=900
    )


def build_vllm_env() -> None:
    subprocess.run(
        [str(REPO_ROOT / "scripts" / "build-vllm-env"), str(VLLM_ENV)], check=True, timeout=900
    )
    python = VLLM_ENV / "bin" / "python"
    build_model = [str(python), str(REPO_ROOT / "scripts" / "build-tiny-model"), str(TINY_MODEL)]
    subprocess.run(build_model, check=True, timeout=300)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the engine environments the collected tests need before any test runs: outside
    any test, so the per-test timeout (pyproject: 300 s) does not cut a first build that a
    busy machine makes slow, and only when a selected test needs one."""
    if session.config.option.collectonly:
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if "sglang_python" in needed:
        build_sglang_env()
    if "vllm_python" in needed:
        build_vllm_env()


@pytest.fixture(autouse=True)
def signal_handlers_restored() -> Iterator[None]:
    """A command run in-process leaves its handlers behind once its run is settled
    (repro.interrupts.settle); the next test starts from the handlers pytest had."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    """SGLang 0.5.23 + sglang-router 0.3.2 on CPU torch, built by scripts/build-sglang-env.

    CI starts from a clean clone, so the first test that needs it builds it (about
    two minutes); later runs reuse it. It is never skipped: conformance is part of CI.
    """
    build_sglang_env()
    return SGLANG_ENV / "bin" / "python"


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """vLLM 0.32.0 on CPU torch (scripts/build-vllm-env) and the tiny model it serves
    (scripts/build-tiny-model), where the vLLM profile looks by default.

    Built on first use like the SGLang environment (about a minute idle, 2.3 GB); later runs
    reuse both. Never skipped: the real-engine tests are part of CI.
    """
    build_vllm_env()
    return VLLM_ENV / "bin" / "python"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
