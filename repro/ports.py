"""Free TCP ports on loopback: asked of the kernel, never guessed."""

from __future__ import annotations

import socket
import time

from repro.errors import UsageError

# Ports handed out lately, and when. The kernel may hand a port out again as soon as it is
# released, before the engine it was meant for binds it; with several deployments starting
# at once (bisect --parallel) two of them would then be given the same port.
HANDED_OUT_HOLD_S = 120.0
_handed_out: dict[int, float] = {}


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just handed out; the engine binds it moments later."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct free ports (held open together so none is handed out twice), none
    of them given out by this process in the last HANDED_OUT_HOLD_S seconds."""
    now = time.monotonic()
    for port, at in list(_handed_out.items()):
        if now - at > HANDED_OUT_HOLD_S:
            del _handed_out[port]
    socks, ports = [], []
    try:
        while len(ports) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            socks.append(sock)
            port = sock.getsockname()[1]
            if port not in _handed_out:
                ports.append(port)
        _handed_out.update(dict.fromkeys(ports, now))
        return ports
    finally:
        for sock in socks:
            sock.close()


def recently_handed_out() -> set[int]:
    """Ports free_ports gave out lately: a port chosen elsewhere (a Slurm node) avoids them."""
    return set(_handed_out)


def note_handed_out(ports: list[int]) -> None:
    """Ports found free elsewhere (a Slurm node's own probe), avoided like our own."""
    _handed_out.update(dict.fromkeys(ports, time.monotonic()))


def require_free(port: int, host: str = "127.0.0.1") -> None:
    """Fail with one sentence if `port` cannot be bound (another process holds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            raise UsageError(
                f"Port {port} on {host} is already in use; pick another with --port or leave it out."
            ) from None
