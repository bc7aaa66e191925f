"""The proxy's server: every path forwarded to the upstream engine (forward.py), SSE answers
through the Injector, the injection log opened and closed with the server.

A request body is read whole and forwarded; the answer streams back chunk by chunk as it
arrives, so a stream no rule touches costs one extra hop and nothing else.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.routing import Route

from repro.errors import UsageError
from repro.proxy import notes
from repro.proxy.forward import Forwarder
from repro.proxy.injection_log import InjectionLog
from repro.proxy.injector import InjectionRule, Injector
from repro.proxy.spec import ProxySpec
from repro.proxy.upstream import UpstreamClients

# The embedded engine's way to run an ASGI app: bind first (a taken port is one clear line),
# then uvicorn with a prompt, quiet shutdown on SIGTERM.
from repro.sim.serving import serve as asgi

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def build_app(spec: ProxySpec) -> Starlette:
    log = InjectionLog(spec.log)
    rule = InjectionRule(
        spec.rule, spec.min_streams, spec.rate, spec.seed, spec.span_bytes, spec.target
    )
    injector = Injector(rule, log.injection, notes.say)
    upstream = UpstreamClients(spec.upstream)
    forward = Forwarder(upstream, injector, notes.say)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        notes.quiet_uvicorn()  # here: uvicorn has set its logging up by now
        log.start(rule, spec.upstream)
        try:
            yield
        finally:
            await upstream.aclose()
            log.close(injector.counts())

    return Starlette(routes=[Route("/{path:path}", forward, methods=METHODS)], lifespan=lifespan)


def serve(spec: ProxySpec) -> int:
    """Listen until SIGTERM or Ctrl-C; the process exit code."""
    try:
        sockets = [asgi.bind(spec.host, spec.port)]
    except asgi.PortInUse as exc:
        raise UsageError(f"repro proxy cannot listen: {exc}.") from None
    app = build_app(spec)
    print(
        f"repro proxy: http://{spec.host}:{spec.port} -> {spec.upstream}, rule {spec.rule.value}"
        f" (rate {spec.rate:g} from {spec.min_streams} streams in flight, target "
        f"{spec.target.value}); injections to {'standard output' if spec.log == '-' else spec.log};"
        " Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    return asgi.run(app, sockets, "warning")
