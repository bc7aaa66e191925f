"""A wrapper engine for tests: it starts its upstream on a port of its own and forwards every
connection to it, as launchers and proxies in front of an engine do.

    python port_wrapper.py --port PORT -- UPSTREAM ARGV ... {port} ...

The upstream's argv carries a literal `{port}`, which this wrapper fills with a free port of
its choosing; a profile writes it as `{{port}}` so that repro passes it through untouched.
Loopback only. It stops when its upstream does, and with its process group.
"""

from __future__ import annotations

import asyncio
import socket
import sys


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(port: int, upstream_argv: list[str]) -> int:
    upstream_port = free_port()
    argv = [word.replace("{port}", str(upstream_port)) for word in upstream_argv]
    upstream = await asyncio.create_subprocess_exec(*argv)
    forwarded = 0

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal forwarded
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:  # the upstream is not listening yet: the health poll tries again
            writer.close()
            return
        forwarded += 1
        print(f"port_wrapper: connection {forwarded} forwarded to {upstream_port}", flush=True)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(forward, "127.0.0.1", port)
    print(f"port_wrapper: listening on {port}, upstream on {upstream_port}", flush=True)
    async with server:
        return await upstream.wait()


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] != "--port" or sys.argv[3] != "--":
        sys.exit("usage: port_wrapper.py --port PORT -- UPSTREAM ARGV ... {port} ...")
    sys.exit(asyncio.run(main(int(sys.argv[2]), sys.argv[4:])))
