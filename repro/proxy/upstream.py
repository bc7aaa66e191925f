"""The proxy's connections to the upstream engine: one client per request in flight."""

from __future__ import annotations

import httpx

CONNECT_TIMEOUT_S = 10.0


class UpstreamClients:
    """One httpx client (one connection) per request in flight, reused after it ends.

    One shared pool would be simpler, but httpcore scans every pooled connection on each
    request and response event, which at 80 streams costs more than the streaming itself
    (bench/RESULTS.md, client cost).
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.idle: list[httpx.AsyncClient] = []
        self.all: set[httpx.AsyncClient] = set()

    def take(self) -> httpx.AsyncClient:
        if self.idle:
            return self.idle.pop()
        client = httpx.AsyncClient(
            base_url=self.base_url,
            # No read deadline: a long answer may take minutes; the client judges that.
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            trust_env=False,
        )
        self.all.add(client)
        return client

    def give(self, client: httpx.AsyncClient) -> None:
        self.idle.append(client)

    async def aclose(self) -> None:
        for client in self.all:
            await client.aclose()
