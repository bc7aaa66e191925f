"""Sessions driven against a live endpoint into a run folder that is complete on every exit:
spec.json first, turns as they end, the engine's /metrics, and summary.json last."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import anyio
import httpx

from repro import __version__
from repro.errors import EngineError, first_repro_error, internal_error
from repro.harness.launch.endpoint import Endpoint
from repro.harness.launch.launcher import Deployment
from repro.harness.lifecycle.final_summary import ended_because, final_summary, write_summary
from repro.harness.lifecycle.progress import Progress
from repro.harness.lifecycle.replay import Replay
from repro.harness.load.clock import RunClock
from repro.harness.load.loaded_log import LoadedLog
from repro.harness.load.loadgen import LoadGenerator, Share
from repro.harness.load.model_listing import first_model, model_window
from repro.harness.load.watchdog import Watchdog
from repro.harness.load.workers import WorkerFleet
from repro.results import (
    RunStore,
    RunSummary,
    describe_in_flight,
    engine_pace,
    in_flight_by_axis,
    read_turns,
)
from repro.scenarios import get_scenario
from repro.spec import RunSpec


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
    """--model, else the server's first model (what a client that asks nothing would use);
    a listing that cannot be read is one sentence that says what it held."""
    if spec.model:
        return spec.model
    url = f"{base_url}/v1/models"
    try:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as http:
            response = await http.get(url)
    except httpx.HTTPError as exc:
        raise EngineError(
            f"{url} could not be read to name the model ({type(exc).__name__}); give --model NAME."
        ) from None
    return first_model(url, response.status_code, response.content)


async def _model_window(base_url: str) -> int | None:
    """The model's context window from /v1/models, for the consistency checks' `length`
    rule; None when it cannot be read (the rule then makes no claim)."""
    try:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as http:
            response = await http.get(f"{base_url}/v1/models")
    except httpx.HTTPError:
        return None
    return model_window(response.content) if response.status_code == 200 else None


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


def _load_generator(
    spec: RunSpec,
    endpoint: Endpoint,
    store: RunStore,
    clock: RunClock,
    model: str,
    sessions: range,
    loaded_log: LoadedLog | None,
    window_tokens: int | None = None,
) -> LoadGenerator | WorkerFleet:
    """What runs the sessions: this process's event loop, or --workers processes."""
    workers, url = spec.effective_workers(), endpoint.base_url
    if workers > 1:
        return WorkerFleet(spec, url, store, clock, model, sessions, workers, window_tokens)
    watchdog = Watchdog(clock, spec.stall_after_s)
    share = Share(sessions, spec.effective_concurrency())
    return LoadGenerator.for_endpoint(
        spec, url, watchdog, store, model, share, loaded_log, window_tokens
    )


def _client_figures(generator: LoadGenerator | WorkerFleet, workers: int) -> dict[str, object]:
    """What summary.json says of repro's own load: pauses, loop lag, CPU, workers."""
    client = generator.client_load()
    return {
        "client_pauses": generator.pauses,
        "client_paused_s": generator.paused_s,
        "client_loop_lag_s": {
            "p50": round(client.lag_p50_s, 4),
            "p99": round(client.lag_p99_s, 4),
            "max": round(client.lag_max_s, 4),
        },
        "client_cpu_share": client.cpu_share,
        "client_workers": workers,
    }


async def _replay_alongside(
    replay: Replay,
    run_url: str,
    sessions: range,
    progress: Progress | None,
    done: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """The replay on reference engines during the load; `done` once it has judged all."""
    try:
        await replay.run_alongside(run_url, sessions, progress, task_status=task_status)
    finally:
        done.set()


def _in_flight_at_failure(
    generator: LoadGenerator | WorkerFleet, error: object
) -> dict[str, int] | None:
    """The requests open, by shape, when an engine failed under a mixed load (in-process)."""
    if not isinstance(error, EngineError) or not isinstance(generator, LoadGenerator):
        return None
    if not generator.mix or generator.in_flight_at_failure is None:
        return None
    return in_flight_by_axis(generator.in_flight_at_failure) or None


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
    model = await _model_name(endpoint.base_url, spec)
    window_tokens = await _model_window(endpoint.base_url)
    # spec.json marks the run folder as this function's to finish (whole_run.py): nothing
    # from here to the `try` below awaits, so a stop cannot land between the two.
    store = RunStore(run_dir)
    record = _spec_record(spec, endpoint, first_session_id)
    store.write_spec(record)
    clock, started = RunClock(), time.monotonic()
    sessions = range(first_session_id, first_session_id + spec.sessions)
    loaded_log = LoadedLog(run_dir) if spec.judges_divergence else None  # then one worker
    generator = _load_generator(
        spec, endpoint, store, clock, model, sessions, loaded_log, window_tokens
    )
    replay = None
    if loaded_log is not None:
        scenario = get_scenario(spec.scenario)
        replay = Replay(spec, scenario, model, run_dir, lambda: read_turns(store.turns_dir))
        if replay.alongside:
            loaded_log.listener = replay.offer
    interrupted, error, bug = False, None, None
    try:
        async with anyio.create_task_group() as group:
            if endpoint.deployment is not None:
                group.start_soon(endpoint.deployment.watch)
            if progress is not None:
                group.start_soon(progress.watch, generator.counts)
            alongside = None
            if replay is not None and replay.alongside:
                # The references start first (launched ones take seconds), then the load.
                if progress is not None:
                    progress.status("starting the reference engines the replay runs on")
                alongside = anyio.Event()
                await group.start(_replay_alongside, replay, endpoint.base_url, sessions,
                                  progress, alongside)  # fmt: skip
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
                if alongside is not None:
                    await alongside.wait()  # every turn offered is judged
            group.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    except BaseExceptionGroup as group:
        bug = internal_error(group, run_dir)
        error = first_repro_error(group)  # re-raises a group that holds a bug
    except Exception as exc:
        bug = internal_error(exc, run_dir)  # the folder says so, and keeps the traceback
        raise
    finally:
        with anyio.CancelScope(shield=True):
            if endpoint.deployment is not None:
                await _scrape_metrics(endpoint.deployment, store.run_dir / "metrics")
        write_error = store.close()  # always: it writes the turns still pending
        error = error or write_error
        in_flight = _in_flight_at_failure(generator, error)
        if in_flight and isinstance(error, EngineError):
            error = EngineError(
                f"{error} Requests in flight then: {describe_in_flight(in_flight)}."
            )
        if loaded_log is not None:
            loaded_log.close()
        summary = final_summary(
            store,
            replay,
            config=endpoint.config,
            wall_s=time.monotonic() - started,
            interrupted=interrupted,
            wedge=generator.wedge,
            error=str(error) if error else bug,
            ended_because=ended_because(error),
            **_client_figures(generator, spec.effective_workers()),
            engine=endpoint.engine,
            engine_pace=engine_pace(store.run_dir / "metrics"),
            url=endpoint.base_url,
            started_at=record["started_at"],
            run_dir=str(run_dir),
            oracle=spec.oracle,
            mix=spec.request_mix().shares(),
            in_flight_at_failure=in_flight,
        )
        error = write_summary(store, summary, error)
    if error is not None:
        raise error
    return summary
