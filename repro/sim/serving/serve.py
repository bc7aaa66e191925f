"""Run an ASGI app under uvicorn on pre-bound sockets, with prompt, quiet shutdown.

Binding first lets a taken port fail in one clear line before anything starts. SIGTERM
and SIGINT stop the server within about a second: in-flight streams get a short grace
period, then are cancelled.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket
import sys
from collections.abc import Sequence

import uvicorn
import uvloop
from starlette.types import ASGIApp

GRACEFUL_SHUTDOWN_S = 0.5


class PortInUse(OSError):
    pass


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; raises PortInUse with a one-line message."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(f"port {port} on {host} is already in use") from None
        raise PortInUse(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _exit_on_term(signum: int, frame: object) -> None:
    sys.exit(0)


def run(app: ASGIApp, sockets: Sequence[socket.socket], log_level: str) -> int:
    """Serve until SIGTERM/SIGINT; returns the process exit code."""
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http="httptools",
        log_level=log_level,
        access_log=log_level == "debug",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        timeout_keep_alive=30,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal it caught once it has shut down; exit quietly then.
    signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(server.serve(sockets=list(sockets)))
    except (KeyboardInterrupt, SystemExit):
        return 0
    finally:
        for sock in sockets:
            sock.close()
    if not server.started:
        logging.getLogger("repro.sim").error("server failed to start")
        return 1
    return 0
