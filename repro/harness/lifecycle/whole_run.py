"""One run, start to end: resolve the configuration, launch the engine (or attach to --url),
drive the load, and leave a complete run folder on every way out, signals included.

    resolution.py      RunSpec + profile -> Resolved (configuration, launch plan)
    endpoint.py        engine(spec, logs_dir) -> Endpoint: launch per profile, or wrap --url
    driving.py         drive(spec, endpoint, run_dir): sessions -> run folder, RunSummary
    final_summary.py   summary.json from what reached the disk, on every exit
    stopping.py        what a stop signal does, by phase
    run_outcome.py     RunStopped, Interrupted: the run's end as the CLI reports it
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from repro.errors import EngineError, ReproError, StoreError, first_repro_error, internal_error
from repro.harness.launch.endpoint import engine
from repro.harness.launch.resolution import default_run_dir, resolve
from repro.harness.lifecycle.driving import drive
from repro.harness.lifecycle.progress import Progress
from repro.harness.lifecycle.run_outcome import Interrupted, RunStopped
from repro.harness.lifecycle.stopping import Stopping, listen_for_stops
from repro.results import RunStore, RunSummary, create_run_folder, summarize
from repro.spec import RunSpec


async def run_async(
    spec: RunSpec, run_dir: Path | None, progress: Progress | None = None
) -> RunSummary:
    """The whole run; the exit it leads to always agrees with the summary.json it leaves:
    RunStopped (an error stopped it), Interrupted (a signal did), or its RunSummary."""
    stopping = Stopping(anyio.CancelScope(), progress)
    outcome: RunSummary | ReproError | None = None
    async with anyio.create_task_group() as signals:
        # Listening first: a signal during the checks below is an interruption too.
        await signals.start(listen_for_stops, stopping)
        try:
            outcome = await _run_listening(spec, run_dir, stopping)
        except ReproError as exc:
            outcome = exc  # raised below: out of the task group, not wrapped in a group
        finally:
            signals.cancel_scope.cancel()
    if isinstance(outcome, ReproError):
        raise outcome
    assert outcome is not None
    return outcome


async def _run_listening(spec: RunSpec, run_dir: Path | None, stopping: Stopping) -> RunSummary:
    progress, work = stopping.progress, stopping.work
    resolved = resolve(spec)
    spec = resolved.spec
    run_dir = run_dir or default_run_dir(resolved.config)
    create_run_folder(run_dir, refuse="anything")
    started, failure, cancelled, bug = time.monotonic(), None, False, None
    summary: RunSummary | None = None
    try:
        with work:
            if progress is not None:
                progress.status(
                    f"attaching to {spec.url}"  # an engine repro did not start: no logs
                    if spec.url
                    else f"starting the {resolved.config['topology']} engine; "
                    f"logs in {run_dir / 'logs'}"
                )
            status = progress.status if progress is not None else None
            async with engine(spec, run_dir / "logs", resolved, status=status) as endpoint:
                if progress is not None:
                    progress.status(
                        f"engine ready at {endpoint.base_url}; running {spec.sessions} sessions"
                    )
                summary = await drive(spec, endpoint, run_dir, progress=progress)
                stopping.load_done = True
    except BaseExceptionGroup as group:
        bug = internal_error(group, run_dir)  # its traceback saved in the run folder
        if bug is None:
            failure = first_repro_error(group)  # re-raises a group that holds a cancellation
    except ReproError as exc:
        failure = exc
    except anyio.get_cancelled_exc_class():
        cancelled = True  # not by our own scope: the event loop itself is being stopped
        raise
    except Exception as exc:
        bug = internal_error(exc, run_dir)  # the folder says so, and keeps the traceback
    finally:
        if not (run_dir / "spec.json").exists():
            # Stopped before any load ran (start-up failed or was interrupted): still say so on
            # disk. Once drive() has begun, summary.json (and a disk too full for it) are its own.
            empty = summarize(
                [],
                config=resolved.config,
                wall_s=time.monotonic() - started,
                interrupted=work.cancel_called or cancelled,
                error=str(failure) if failure else bug,
                run_dir=str(run_dir),
            )
            try:
                RunStore.write_json(run_dir / "summary.json", empty.to_dict())
            except StoreError as exc:
                failure = failure or exc
    written = _written_summary(run_dir) or summary
    if written is None:  # summary.json could not be written: the error that kept it says why
        if bug is not None:
            raise ReproError(bug)
        raise failure or EngineError(f"The run in {run_dir} ended without a summary.")
    if written.interrupted:
        raise Interrupted(written)
    if failure is not None:
        raise RunStopped(str(failure), written, failure.exit_code)
    if bug is not None:  # a bug in repro: exit 2 like any error, never 1 (a gate's corruption)
        raise RunStopped(bug, written)
    return summary or written


def _written_summary(run_dir: Path) -> RunSummary | None:
    try:
        return RunSummary.from_file(run_dir / "summary.json")
    except (OSError, ValueError, TypeError):
        return None


def run(spec: RunSpec, run_dir: Path | None, progress: Progress | None = None) -> RunSummary:
    """Blocking entry point for the CLI and for bisection trials."""
    return anyio.run(run_async, spec, run_dir, progress, backend_options={"use_uvloop": True})
