"""Free TCP ports on loopback: asked of the kernel, never guessed."""

from __future__ import annotations

import socket

from repro.errors import UsageError


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just handed out; the engine binds it moments later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct free ports (held open together so none is handed out twice)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def require_free(port: int, host: str = "127.0.0.1") -> None:
    """Fail with one sentence if `port` cannot be bound (another process holds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            raise UsageError(
                f"Port {port} on {host} is already in use; pick another with --port or leave it out."
            ) from None
