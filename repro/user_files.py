"""Reading a file the user named (a profile, a tools file, a completion, a run folder's file):
every way it can be unusable is one sentence, and no read can hang or exhaust memory.

A FIFO or a device would block or never end, so only regular files are read, up to a size
cap; nesting deep enough to exhaust Python's recursion (TOML, JSON) is refused by the parsers'
callers with `TOO_DEEP`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from repro.errors import UsageError

MAX_BYTES = 256 * 1024 * 1024
TOO_DEEP = "nests too deeply to be read"


def read_user_file(path: Path, what: str, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at `path`; `what` names it in the sentence ("Profile x")."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UsageError(f"{what} does not exist.") from None
    except IsADirectoryError:
        raise UsageError(f"{what} is a folder, not a file.") from None
    except OSError as exc:
        raise UsageError(f"{what} cannot be read: {exc.strerror}.") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{what} is a folder, not a file.")
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{what} is not a regular file (a pipe or a device cannot be read).")
        if info.st_size > max_bytes:
            raise UsageError(f"{what} is larger than {max_bytes // 2**20} MiB.")
        chunks, left = [], max_bytes
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise UsageError(f"{what} cannot be read: {exc.strerror}.") from None
    finally:
        os.close(fd)


def read_user_text(path: Path, what: str, max_bytes: int = MAX_BYTES) -> str:
    """As read_user_file, decoded as UTF-8 (anything else is one sentence).

    A leading byte-order mark, which some editors write, is dropped: TOML and JSON refuse it
    with an error about line 1, column 1 that does not say why.
    """
    data = read_user_file(path, what, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} is not UTF-8 text (byte {exc.start} is not).") from None
