"""One run: resolve the configuration, launch the engine (or attach to --url), drive the load,
and leave a complete run folder on every way out.

    run(spec, run_dir)                      the whole thing, with Ctrl-C / SIGTERM / SIGHUP handling
    engine(spec, logs_dir) -> Endpoint      launch per profile, or wrap --url (async context)
    drive(spec, endpoint, run_dir)          sessions against a live endpoint -> RunSummary
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import httpx

from repro import __version__
from repro.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EngineError,
    ReproError,
    StoreError,
    UsageError,
)
from repro.harness.client import RunClock
from repro.harness.launcher import Deployment
from repro.harness.launchers import deploy, plan_for
from repro.harness.loaded_log import LoadedLog
from repro.harness.loadgen import LoadGenerator, Share
from repro.harness.local_role import hurry_all
from repro.harness.plan import LaunchPlan, check_settings
from repro.harness.profile import Profile, load_profile
from repro.harness.progress import Progress
from repro.harness.replay import Replay
from repro.harness.run_defaults import fill_from_profile
from repro.harness.watchdog import Watchdog
from repro.harness.workers import WorkerFleet
from repro.interrupts import REPEAT_WINDOW_S, STOP_SIGNALS, detach_from_terminal, settle
from repro.knobs import STORY_DEFAULTS
from repro.results.reading import read_turns
from repro.results.store import RunStore
from repro.results.summary import RunSummary, summarize
from repro.scenarios import get_scenario
from repro.spec import RunSpec

if TYPE_CHECKING:
    from repro.harness.slurm import AllocationHolder


@dataclass(frozen=True)
class Resolved:
    """The spec checked against its profile, with what the user left unsaid filled from it
    (repro.harness.run_defaults): the full configuration and, unless --url, the plan."""

    spec: RunSpec
    profile: Profile
    config: dict[str, str]
    plan: LaunchPlan | None


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    config: dict[str, str]
    engine: str
    deployment: Deployment | None = None
    plan: LaunchPlan | None = None
    placement: dict[str, object] = field(default_factory=dict)  # where each role runs


def resolve(spec: RunSpec) -> Resolved:
    """Everything that can be checked before a process starts; bad input raises UsageError."""
    profile = load_profile(spec.profile_path())
    get_scenario(spec.scenario)
    check_settings(profile, spec.settings)  # before the profile adds its own
    spec = fill_from_profile(spec, profile.run, profile.engine.oracle)
    if spec.url:
        # An external engine is configured by whoever started it: knobs only label the run.
        labels = {k: profile.resolve_knobs({k: v})[k] for k, v in spec.knobs.items()}
        return Resolved(spec, profile, labels, None)
    config = profile.resolve_knobs(spec.knobs)
    return Resolved(spec, profile, config, plan_for(profile, spec, config))


def default_run_dir(config: dict[str, str], root: Path = Path("results")) -> Path:
    """results/<timestamp>-<topology>-<knobs that differ from the story's defaults>."""
    changed = [
        f"{k}-{v}" for k, v in config.items() if k != "topology" and STORY_DEFAULTS.get(k, v) != v
    ]
    label = "-".join([config.get("topology", "external"), *changed])[:80]
    return root / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"


async def _probe(url: str) -> None:
    try:
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
            response = await client.get(f"{url}/v1/models")
    except httpx.HTTPError as exc:
        raise EngineError(
            f"Cannot reach {url} ({type(exc).__name__}); is the server running there?"
        ) from None
    if response.status_code != 200:
        raise EngineError(
            f"{url}/v1/models answered HTTP {response.status_code}; is it an OpenAI-compatible server?"
        )


@contextlib.asynccontextmanager
async def engine(
    spec: RunSpec,
    logs_dir: Path,
    resolved: Resolved | None = None,
    *,
    allocations: AllocationHolder | None = None,
    status: Callable[[str], None] | None = None,
) -> AsyncIterator[Endpoint]:
    """Yield a live Endpoint for the spec; whatever was launched is torn down on exit.

    With --launcher slurm, `allocations` keeps the Slurm allocation for the caller's next
    engine (a bisect slot); `status` hears what the launcher waits for (the queue)."""
    resolved = resolved or resolve(spec)
    spec = resolved.spec
    for url in spec.reference_urls:  # a wrong reference fails now, not after a model load
        await _probe(url)
    if resolved.plan is None:
        assert spec.url is not None
        await _probe(spec.url)
        yield Endpoint(spec.url, resolved.config, "external")
        return
    if any(resolved.profile.roles[role.name].preflight for role in resolved.plan.roles):
        # A bad flag must fail in seconds, before a model load that can take ten minutes.
        from repro.harness.preflight import preflight

        await anyio.to_thread.run_sync(preflight, resolved.plan, resolved.profile)
    launched = deploy(
        spec, resolved.profile, resolved.plan, logs_dir, allocations=allocations, status=status
    )
    async with launched as deployed:
        deployment = deployed.deployment
        yield Endpoint(
            deployment.entry_url,
            resolved.config,
            resolved.plan.engine_identity,
            deployment,
            deployment.plan,  # with Slurm: the roles' node addresses and srun argv
            deployed.placement,
        )


def _spec_record(spec: RunSpec, endpoint: Endpoint, first_session_id: int) -> dict:
    plan = endpoint.plan
    return {
        "spec": spec.model_dump(mode="json"),
        "config": endpoint.config,
        "engine": endpoint.engine,
        "url": endpoint.base_url,
        "first_session_id": first_session_id,
        "roles": [
            {"name": r.name, "argv": list(r.argv), "env": r.env, "host": r.host, "port": r.port}
            for r in (plan.roles if plan else ())
        ],
        "placement": endpoint.placement,
        "repro_version": __version__,
        "command": sys.argv,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


async def _model_name(base_url: str, spec: RunSpec) -> str:
    """--model, else the server's first model (what a client that asks nothing would use)."""
    if spec.model:
        return spec.model
    with contextlib.suppress(httpx.HTTPError, KeyError, IndexError, ValueError):
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as http:
            return (await http.get(f"{base_url}/v1/models")).json()["data"][0]["id"]
    return "default"


async def _scrape_metrics(deployment: Deployment, folder: Path) -> None:
    """Each live role's /metrics at the end of the load, as metrics/<role>.prom (best effort)."""
    async with httpx.AsyncClient(timeout=3.0, trust_env=False) as http:
        for role in deployment.roles:
            if role.exit_code is not None:
                continue
            # OSError: a full disk must not cost the summary that follows.
            with contextlib.suppress(httpx.HTTPError, OSError):
                response = await http.get(f"{role.plan.url}/metrics")
                if response.status_code == 200:
                    folder.mkdir(exist_ok=True)
                    (folder / f"{role.plan.name}.prom").write_text(response.text)


def _first_repro_error(group: BaseExceptionGroup) -> ReproError:
    """Task groups wrap errors; a user-facing ReproError inside is what the CLI reports."""
    matched, rest = group.split(ReproError)
    if matched is None or rest is not None:
        raise group
    first = matched.exceptions[0]
    return _first_repro_error(first) if isinstance(first, BaseExceptionGroup) else first  # type: ignore[return-value]


async def drive(
    spec: RunSpec,
    endpoint: Endpoint,
    run_dir: Path,
    *,
    progress: Progress | None = None,
    first_session_id: int = 0,
) -> RunSummary:
    """Run spec.sessions sessions against the endpoint; the run folder is complete on every exit
    (raises StoreError, after saying so in summary.json when it can, if it cannot be written)."""
    store = RunStore(run_dir)
    record = _spec_record(spec, endpoint, first_session_id)
    store.write_spec(record)
    clock, started = RunClock(), time.monotonic()
    model = await _model_name(endpoint.base_url, spec)
    sessions = range(first_session_id, first_session_id + spec.sessions)
    workers = spec.effective_workers()
    loaded_log = LoadedLog(run_dir) if spec.judges_divergence else None  # then one worker
    generator: LoadGenerator | WorkerFleet
    if workers > 1:
        generator = WorkerFleet(spec, endpoint.base_url, store, clock, model, sessions, workers)
    else:
        watchdog = Watchdog(clock, spec.stall_after_s)
        share = Share(sessions, spec.effective_concurrency())
        generator = LoadGenerator.for_endpoint(
            spec, endpoint.base_url, watchdog, store, model, share, loaded_log
        )
    replay = None
    if loaded_log is not None:
        scenario = get_scenario(spec.scenario)
        replay = Replay(spec, scenario, model, run_dir, lambda: read_turns(store.turns_dir))
    interrupted, error = False, None
    try:
        async with anyio.create_task_group() as group:
            if endpoint.deployment is not None:
                group.start_soon(endpoint.deployment.watch)
            if progress is not None:
                group.start_soon(progress.watch, generator.counts)
            await generator.run()
            if endpoint.deployment is not None:
                # Sessions end on their first failed turn, so a dead role can end the load
                # before the watcher's next look: look once more before calling it a run.
                endpoint.deployment.check()
            if replay is not None and loaded_log is not None:
                loaded_log.close()
                await store.flush()  # the replay reads the load's turns back from disk
                load_wall_s = time.monotonic() - started
                await replay.after_load(generator.wedge, endpoint.base_url, progress, load_wall_s)
            group.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    except BaseExceptionGroup as group:
        error = _first_repro_error(group)
    finally:
        with anyio.CancelScope(shield=True):
            if endpoint.deployment is not None:
                await _scrape_metrics(endpoint.deployment, store.run_dir / "metrics")
        write_error = store.close()  # always: it writes the turns still pending
        error = error or write_error
        if loaded_log is not None:
            loaded_log.close()
        client = generator.client_load()
        summary = _final_summary(
            store,
            replay,
            config=endpoint.config,
            wall_s=time.monotonic() - started,
            interrupted=interrupted,
            wedge=generator.wedge,
            error=str(error) if error else None,
            ended_because=_ended_because(error),
            client_pauses=generator.pauses,
            client_paused_s=generator.paused_s,
            client_loop_lag_s={
                "p50": round(client.lag_p50_s, 4),
                "p99": round(client.lag_p99_s, 4),
                "max": round(client.lag_max_s, 4),
            },
            client_cpu_share=client.cpu_share,
            client_workers=workers,
            engine=endpoint.engine,
            url=endpoint.base_url,
            started_at=record["started_at"],
            run_dir=str(run_dir),
            oracle=spec.oracle,
        )
        error = _write_summary(store, summary, error)
    if error is not None:
        raise error
    return summary


def _ended_because(error: ReproError | None) -> str | None:
    if isinstance(error, StoreError):
        return "write_failed"
    if isinstance(error, EngineError):
        return "engine_failed"
    return None  # the rest follows from interrupted / wedge / error


def _final_summary(store: RunStore, replay: Replay | None, **context: object) -> RunSummary:
    """The figures of what is on disk, read back from the parts (only the columns they need;
    every turn when the divergence oracle judged them, as its verdicts apply per turn)."""
    from repro.results.oracle_view import divergence_figures, judged_records
    from repro.results.reading import read_turn_table
    from repro.results.summary import SUMMARY_COLUMNS, summarize_table

    try:
        if replay is not None:
            records = read_turns(store.turns_dir)
            judged = judged_records(records, context["oracle"], replay.turns)  # type: ignore[arg-type]
            figures = divergence_figures(records, replay.turns, replay.info())
            return summarize(judged, divergence=figures, **context)  # type: ignore[arg-type]
        table = read_turn_table(store.turns_dir, SUMMARY_COLUMNS)
    except UsageError:  # a part the disk mangled: say what ended the run all the same
        return summarize([], **context)  # type: ignore[arg-type]
    return summarize_table(table, **context)  # type: ignore[arg-type]


def _write_summary(
    store: RunStore, summary: RunSummary, error: ReproError | None
) -> ReproError | None:
    """Write summary.json; the error to raise, its sentence telling what reached the disk."""
    try:
        store.write_summary(summary.to_dict())
        written = None
    except StoreError as exc:
        written = exc
    if isinstance(error, StoreError):
        lost = f", and {store.rows_lost} later turns are lost" if store.rows_lost else ""
        tail = (
            "summary.json says why"
            if written is None
            else f"summary.json could not be written either ({written.reason})"
        )
        return StoreError(f"{error}{lost}; {tail}.", path=error.path)
    if written is not None:
        return StoreError(
            f"{written}; the turns are kept in {store.run_dir}, and `repro report "
            f"{store.run_dir}` recomputes the summary from them"
            + (f" (the run had stopped on: {error})." if error else "."),
            path=written.path,
        )
    return error


class RunStopped(ReproError):
    """The run ended before its load did; `summary` is what its summary.json says."""

    def __init__(self, message: str, summary: RunSummary, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.summary = summary
        self.exit_code = exit_code


class Interrupted(RunStopped):
    """Ctrl-C, SIGTERM or SIGHUP ended the run; its summary.json says `interrupted: true`."""

    label = "interrupted"

    def __init__(self, summary: RunSummary) -> None:
        super().__init__(
            "the run folder holds every turn finished before the interruption.",
            summary,
            EXIT_INTERRUPTED,
        )


def unvouched(summary: RunSummary) -> EngineError | None:
    """Why a run that ended on its own cannot vouch for the engine (README: exit 2), if so."""
    if summary.wedge:
        return EngineError(f"Wedged: {summary.wedge}.")
    if summary.turns == 0:
        failed = f"{summary.errors} failed ({summary.error_outcomes})" if summary.errors else ""
        aborted = f"{summary.aborted} aborted on purpose" if summary.aborted else ""
        why = " and ".join(x for x in (failed, aborted) if x) or "no turn finished"
        return EngineError(f"No turn could be judged: {why}; see {summary.run_dir}.")
    return None


@dataclass
class _Stopping:
    """What a stop signal does, by phase: it interrupts the start-up or the load; once the
    load is done it leaves the run complete and only the teardown is hurried."""

    work: anyio.CancelScope
    progress: Progress | None
    load_done: bool = False
    signals: list[float] = field(default_factory=list)

    def on_signal(self) -> None:
        now = time.monotonic()
        if self.signals and now - self.signals[-1] <= REPEAT_WINDOW_S:
            return  # the same stop delivered twice
        self.signals.append(now)
        if len(self.signals) == 1:
            if self.load_done:
                self._say("the run is complete; stopping the engine (again to kill it at once)")
            else:
                self._say("interrupted: stopping the load and the engine (again to stop at once)")
                self.work.cancel()
        elif len(self.signals) == 2:
            self._say("killing the engine now")
            hurry_all()
        else:  # something does not let go: the supervisors clean up once we are gone
            os._exit(EXIT_INTERRUPTED)

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.status(text)


async def run_async(
    spec: RunSpec, run_dir: Path | None, progress: Progress | None = None
) -> RunSummary:
    """The whole run; the exit it leads to always agrees with the summary.json it leaves:
    RunStopped (an error stopped it), Interrupted (a signal did), or its RunSummary."""
    stopping = _Stopping(anyio.CancelScope(), progress)
    outcome: RunSummary | ReproError | None = None
    async with anyio.create_task_group() as signals:
        # Listening first: a signal during the checks below is an interruption too.
        await signals.start(_on_signals, stopping)
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


async def _run_listening(spec: RunSpec, run_dir: Path | None, stopping: _Stopping) -> RunSummary:
    progress, work = stopping.progress, stopping.work
    resolved = resolve(spec)
    spec = resolved.spec
    run_dir = run_dir or default_run_dir(resolved.config)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise UsageError(
            f"{run_dir} already exists and is not empty; choose a new --out so no earlier run is overwritten."
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"Cannot create the run folder {run_dir}: {exc.strerror}.") from None
    started, failure, cancelled = time.monotonic(), None, False
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
        failure = _first_repro_error(group)
    except ReproError as exc:
        failure = exc
    except anyio.get_cancelled_exc_class():
        cancelled = True  # not by our own scope: the event loop itself is being stopped
        raise
    finally:
        if not (run_dir / "spec.json").exists():
            # Stopped before any load ran (start-up failed or was interrupted): still say so on
            # disk. Once drive() has begun, summary.json (and a disk too full for it) are its own.
            empty = summarize(
                [],
                config=resolved.config,
                wall_s=time.monotonic() - started,
                interrupted=work.cancel_called or cancelled,
                error=str(failure) if failure else None,
                run_dir=str(run_dir),
            )
            try:
                RunStore.write_json(run_dir / "summary.json", empty.to_dict())
            except StoreError as exc:
                failure = failure or exc
    written = _written_summary(run_dir) or summary
    if written is None:  # summary.json could not be written: the error that kept it says why
        raise failure or EngineError(f"The run in {run_dir} ended without a summary.")
    if written.interrupted:
        raise Interrupted(written)
    if failure is not None:
        raise RunStopped(str(failure), written, failure.exit_code)
    return summary or written


def _written_summary(run_dir: Path) -> RunSummary | None:
    try:
        return RunSummary.from_file(run_dir / "summary.json")
    except (OSError, ValueError, TypeError):
        return None


async def _on_signals(
    stopping: _Stopping, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Ctrl-C, SIGTERM and SIGHUP while the run lasts; see _Stopping for what each does."""
    try:
        with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
            task_status.started()
            async for signum in received:
                if signum == signal.SIGHUP:
                    detach_from_terminal()  # the terminal is gone: nothing can be shown there
                stopping.on_signal()
    finally:
        # The receiver put the default handlers back; the run's outcome is settled now.
        settle()


def run(spec: RunSpec, run_dir: Path | None, progress: Progress | None = None) -> RunSummary:
    """Blocking entry point for the CLI and for bisection trials."""
    return anyio.run(run_async, spec, run_dir, progress, backend_options={"use_uvloop": True})
