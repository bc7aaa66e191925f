"""Driving load: agent sessions as streamed chat requests, each turn judged as it ends.

loadgen.py                    the sessions of one process: turns, judging, records
workers.py, worker.py         the sessions shared over worker processes (--workers)
client.py, sse_connection.py  one kept-alive connection per session; SSE parsed as it arrives
chunk.py, stream_progress.py  each event decoded and validated once, folded into progress
request_body.py               the request body of a turn
watchdog.py, clock.py         deadlines, idle limits and the wedge, in repro's awake time
loop_probe.py                 repro's own event-loop lag and CPU
counts.py                     what the live panel shows of the load and the replay
model_listing.py              the model a run names, from GET /v1/models
loaded_log.py                 what each turn sent and got, for the divergence replay
"""

from __future__ import annotations

from repro.lazy_exports import lazy_exports

_HOMES = {
    "LoadGenerator": "loadgen",
    "Share": "loadgen",
    "WorkerFleet": "workers",
    "shares": "workers",
    "ChatClient": "client",
    "client_factory": "client",
    "StreamProgress": "stream_progress",
    "RunClock": "clock",
    "Watchdog": "watchdog",
    "running_watchdog": "watchdog",
    "body_sha256": "request_body",
    "chat_body": "request_body",
    "first_model": "model_listing",
    "LoadedLog": "loaded_log",
    "LoadedTurn": "loaded_log",
    "read_loaded": "loaded_log",
    "server_calls_json": "loaded_log",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_exports(__name__, _HOMES, globals())
