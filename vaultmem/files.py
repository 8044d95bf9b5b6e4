"""Writing files so that a crash or a concurrent reader never sees half of one."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, data: bytes, *, durable: bool = True, exclusive: bool = False) -> None:
    """Write a whole file so a reader sees the old bytes or the new ones, never a mix.

    A hidden temp file in the same folder is written (and fsynced when durable), then moved into
    place; with exclusive, an existing file is never replaced (hard link, which fails if taken).
    Raises FileExistsError when exclusive and the name is taken.
    """
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_path(path.parent)


def fsync_path(path: Path) -> None:
    """Flush a file's or a folder's entry to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
