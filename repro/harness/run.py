"""One run: resolve the configuration, launch the engine (or attach to --url), drive the load,
and leave a complete run folder on every way out.

    run(spec, run_dir)                      the whole thing, with Ctrl-C / SIGTERM handling
    engine(spec, logs_dir) -> Endpoint      launch per profile, or wrap --url (async context)
    drive(spec, endpoint, run_dir)          sessions against a live endpoint -> RunSummary
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx

from repro import __version__
from repro.errors import EXIT_INTERRUPTED, EngineError, ReproError, StoreError, UsageError
from repro.harness.client import RunClock
from repro.harness.launcher import Deployment, kill_leftover_groups, launch
from repro.harness.loadgen import LoadGenerator, Share
from repro.harness.plan import LaunchPlan, build_plan
from repro.harness.profile import Profile, load_profile
from repro.harness.progress import Progress
from repro.harness.watchdog import Watchdog
from repro.harness.workers import WorkerFleet
from repro.knobs import STORY_DEFAULTS
from repro.results.store import RunStore
from repro.results.summary import RunSummary, summarize
from repro.scenarios import get_scenario
from repro.spec import RunSpec


@dataclass(frozen=True)
class Resolved:
    """The spec checked against its profile: the full configuration and, unless --url, the plan."""

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


def resolve(spec: RunSpec) -> Resolved:
    """Everything that can be checked before a process starts; bad input raises UsageError."""
    profile = load_profile(spec.profile_path())
    get_scenario(spec.scenario)
    if spec.url:
        # An external engine is configured by whoever started it: knobs only label the run.
        labels = {k: profile.resolve_knobs({k: v})[k] for k, v in spec.knobs.items()}
        return Resolved(profile, labels, None)
    config = profile.resolve_knobs(spec.knobs)
    return Resolved(profile, config, build_plan(profile, spec, config))


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
    spec: RunSpec, logs_dir: Path, resolved: Resolved | None = None
) -> AsyncIterator[Endpoint]:
    """Yield a live Endpoint for the spec; whatever was launched is torn down on exit."""
    resolved = resolved or resolve(spec)
    if resolved.plan is None:
        assert spec.url is not None
        await _probe(spec.url)
        yield Endpoint(spec.url, resolved.config, "external")
        return
    if any(resolved.profile.roles[role.name].preflight for role in resolved.plan.roles):
        # A bad flag must fail in seconds, before a model load that can take ten minutes.
        from repro.harness.preflight import preflight

        await anyio.to_thread.run_sync(preflight, resolved.plan, resolved.profile)
    async with launch(resolved.plan, logs_dir) as deployment:
        yield Endpoint(
            deployment.entry_url,
            resolved.config,
            resolved.plan.engine_identity,
            deployment,
            resolved.plan,
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
            {"name": r.name, "argv": list(r.argv), "env": r.env, "port": r.port}
            for r in (plan.roles if plan else ())
        ],
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
    generator: LoadGenerator | WorkerFleet
    if workers > 1:
        generator = WorkerFleet(spec, endpoint.base_url, store, clock, model, sessions, workers)
    else:
        watchdog = Watchdog(clock, spec.stall_after_s)
        share = Share(sessions, spec.effective_concurrency())
        generator = LoadGenerator.for_endpoint(
            spec, endpoint.base_url, watchdog, store, model, share
        )
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
        error = error or store.close()
        client = generator.client_load()
        summary = _final_summary(
            store,
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


def _final_summary(store: RunStore, **context: object) -> RunSummary:
    """The figures of what is on disk, read back from the parts (only the columns they need)."""
    from repro.results.reading import read_turn_table
    from repro.results.summary import SUMMARY_COLUMNS, summarize_table

    try:
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


class Interrupted(Exception):
    """Ctrl-C or SIGTERM ended the run; the summary on disk says `interrupted: true`."""

    exit_code = EXIT_INTERRUPTED

    def __init__(self, summary: RunSummary | None) -> None:
        super().__init__("interrupted")
        self.summary = summary


async def run_async(
    spec: RunSpec, run_dir: Path | None, progress: Progress | None = None
) -> RunSummary:
    resolved = resolve(spec)
    run_dir = run_dir or default_run_dir(resolved.config)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise UsageError(
            f"{run_dir} already exists and is not empty; choose a new --out so no earlier run is overwritten."
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"Cannot create the run folder {run_dir}: {exc.strerror}.") from None
    started, work, failure = time.monotonic(), anyio.CancelScope(), None
    summary: RunSummary | None = None
    try:
        async with anyio.create_task_group() as outer:
            outer.start_soon(_on_signals, work, progress)
            with work:
                if progress is not None:
                    progress.status(
                        f"attaching to {spec.url}"  # an engine repro did not start: no logs
                        if spec.url
                        else f"starting the {resolved.config['topology']} engine; "
                        f"logs in {run_dir / 'logs'}"
                    )
                async with engine(spec, run_dir / "logs", resolved) as endpoint:
                    if progress is not None:
                        progress.status(
                            f"engine ready at {endpoint.base_url}; running {spec.sessions} sessions"
                        )
                    summary = await drive(spec, endpoint, run_dir, progress=progress)
            outer.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        failure = _first_repro_error(group)
    except ReproError as exc:
        failure = exc
    finally:
        if not (run_dir / "spec.json").exists():
            # Stopped before any load ran (start-up failed or was interrupted): still say so on
            # disk. Once drive() has begun, summary.json (and a disk too full for it) are its own.
            empty = summarize(
                [],
                config=resolved.config,
                wall_s=time.monotonic() - started,
                interrupted=work.cancel_called,
                error=str(failure) if failure else None,
                run_dir=str(run_dir),
            )
            try:
                RunStore.write_json(run_dir / "summary.json", empty.to_dict())
            except StoreError as exc:
                failure = failure or exc
    if failure is not None:
        raise failure
    if work.cancel_called or summary is None:
        raise Interrupted(RunSummary.from_file(run_dir / "summary.json"))
    return summary


async def _on_signals(scope: anyio.CancelScope, progress: Progress | None) -> None:
    """First Ctrl-C/SIGTERM: stop the load, keep what was measured, tear down. Second: stop now.

    A repeat within a second is the same interruption delivered twice (a terminal signals the
    whole process group, and wrappers such as `timeout` forward it again), not a second one.
    """
    first_at = None
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if first_at is None:
                first_at = time.monotonic()
                if progress is not None:
                    progress.status(
                        "interrupted: stopping the load and the engine (again to stop at once)"
                    )
                scope.cancel()
            elif time.monotonic() - first_at > 1.0:
                kill_leftover_groups()
                os._exit(EXIT_INTERRUPTED)


def run(spec: RunSpec, run_dir: Path | None, progress: Progress | None = None) -> RunSummary:
    """Blocking entry point for the CLI and for bisection trials."""
    return anyio.run(run_async, spec, run_dir, progress, backend_options={"use_uvloop": True})
