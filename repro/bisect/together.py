"""Independent trials measured together, up to `--parallel K` at once on the runner's pool.

The search asks for independent trials together (the two endpoints; the knock-outs; a
matrix's cells) and `measure_together` runs up to K of them at once, returning them in the
order asked, so the search's logic, the cache and the report do not depend on K. With K = 1
it measures one after another and stops at the first refusal, exactly as a serial search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from repro.bisect.trial import Question, Trial, TrialRunner


@dataclass(frozen=True, slots=True)
class Request:
    """One trial the search wants: measured until `settled`, then `check`ed (which may raise
    to stop the batch, e.g. an endpoint that does not bracket a failure)."""

    label: str
    config: Mapping[str, str]
    settled: Question | None = None
    check: Callable[[Trial], None] | None = None


async def measure_together(runner: TrialRunner, requests: Sequence[Request]) -> list[Trial]:
    """Measure the requests, up to the runner's K at once; the trials in request order.

    An error (a `check` refusing, an engine failure) stops the batch: the trials still in
    flight are cancelled, and the error of the earliest request is raised."""
    trials: list[Trial | None] = [None] * len(requests)

    async def one(index: int, request: Request) -> None:
        if runner.parallel > 1:
            runner.pool.promised()  # it asks for itself now (see below)
        trial = await runner.measure(request.label, request.config, request.settled)
        if request.check is not None:
            request.check(trial)
        trials[index] = trial

    if runner.parallel == 1:
        for index, request in enumerate(requests):
            await one(index, request)
        return trials  # type: ignore[return-value]
    failures: dict[int, Exception] = {}
    runner.pool.promise(len(requests))  # before they start: ahead of every wave run ahead
    async with anyio.create_task_group() as group:

        async def guarded(index: int, request: Request) -> None:
            try:
                await one(index, request)
            except Exception as exc:  # re-raised below, unwrapped, as the serial search would
                failures[index] = exc
                group.cancel_scope.cancel()

        for index, request in enumerate(requests):
            group.start_soon(guarded, index, request)
    if failures:
        raise failures[min(failures)]
    return trials  # type: ignore[return-value]
