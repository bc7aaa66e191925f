"""The engines the divergence replay sends to: those given (--reference-url), more launched
from the run's profile (--reference-engines, in another configuration with --reference-knob),
or the run's own engine after the load."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from repro.spec import RunSpec


@contextlib.asynccontextmanager
async def references(
    spec: RunSpec, run_url: str, logs_dir: Path
) -> AsyncIterator[tuple[list[str], str]]:
    """The engines the replay sends to, and how to say where they came from."""
    if spec.reference_urls:
        yield list(spec.reference_urls), f"{len(spec.reference_urls)} given engine(s)"
        return
    if not spec.reference_engines:
        yield [run_url], "the run's engine, after the load"
        return
    urls: list[str] = []
    done = anyio.Event()
    reference = spec.model_copy(update={"port": None, "knobs": spec.knobs | spec.reference_knobs})
    async with anyio.create_task_group() as group:
        for i in range(spec.reference_engines):  # started together: each takes seconds
            group.start_soon(_hold_engine, reference, logs_dir / f"reference-{i}", urls, done)
        while len(urls) < spec.reference_engines:
            await anyio.sleep(0.1)  # a failed start cancels this wait with its error
        how = "launched like the run's"
        if spec.reference_knobs:
            how = "launched with " + ",".join(f"{k}={v}" for k, v in spec.reference_knobs.items())
        try:
            yield list(urls), f"{len(urls)} engine(s) {how}"
        finally:
            done.set()


async def _hold_engine(spec: RunSpec, logs_dir: Path, urls: list[str], done: anyio.Event) -> None:
    """Launch one copy of the run's engine (fresh ports) and keep it until `done`."""
    from repro.harness.launch.endpoint import (
        engine,
    )  # the launcher path every run takes; late: no cycle

    async with engine(spec, logs_dir) as endpoint:
        urls.append(endpoint.base_url)
        await done.wait()
