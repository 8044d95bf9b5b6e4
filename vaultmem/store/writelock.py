"""The writers' lock of one index: one writer at a time across processes and threads.

An advisory lock on `write.lock` (flock on POSIX, a locked byte on Windows). The kernel drops it
when its holder dies, so a killed writer never freezes the vault, as long as no other process
shares the holder's open file: a forked worker would (flock belongs to the open file, which fork
shares), so every fork closes its copy at once (see _close_inherited). A per-process POSIX lock
(lockf) would not need that, but two Index objects of one process would not exclude each other
and closing any descriptor of the file would drop it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path

from ..errors import VaultmemError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

DEFAULT_TIMEOUT = 60.0  # seconds (index.lock_timeout, $VAULTMEM_LOCK_TIMEOUT)
TELL_AFTER = 1.0  # seconds of waiting before saying so on stderr
_LOCKED_BYTE = 1 << 20  # Windows: the byte locked, past the holder's pid at the file's start

_held: set[int] = set()  # lock file descriptors this process has open


class LockTimeout(VaultmemError):
    """Another writer held the vault's write lock for longer than the configured wait."""

    def __init__(self, holder: str, timeout: float):
        self.holder = holder
        self.timeout = timeout
        super().__init__(f"another vaultmem writer ({holder}) held the vault's write lock for {timeout:g} s; "
                         "try again later, or raise index.lock_timeout (or $VAULTMEM_LOCK_TIMEOUT)")


def notice(message: str) -> None:
    """One line on stderr about something vaultmem handled on its own (a wait, a rebuild)."""
    print(f"vaultmem: {message}", file=sys.stderr, flush=True)


def _close_inherited() -> None:
    # In a forked child: its copy of the parent's lock file is closed, which leaves the parent's
    # lock held (only the last close of an open file releases a flock).
    for fd in list(_held):
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited)


def _try_lock(fd: int) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    os.lseek(fd, _LOCKED_BYTE, os.SEEK_SET)
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:  # the byte is locked by another process
        return False
    return True


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:
        os.lseek(fd, _LOCKED_BYTE, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


class WriteLock:
    """Re-entrant for the thread that holds it; other threads and processes wait up to `timeout` s."""

    def __init__(self, path: Path, timeout: float = DEFAULT_TIMEOUT):
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd = -1

    @property
    def depth(self) -> int:
        """How many times the holding thread took the lock (1: its outermost hold)."""
        return self._depth

    def acquire(self, wait: bool = True) -> bool:
        """Take the lock; with wait False, return False at once when someone else holds it.

        Raises LockTimeout after `timeout` seconds of waiting.
        """
        if not (self._thread_lock.acquire(timeout=self.timeout) if wait else self._thread_lock.acquire(False)):
            if wait:
                raise LockTimeout("another thread of this process", self.timeout)
            return False
        if self._depth:  # re-entered by its holder
            self._depth += 1
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except BaseException:
            self._thread_lock.release()
            raise
        _held.add(fd)  # before locking: a fork from another thread must not carry the lock away
        try:
            taken = self._wait_for(fd, wait)
        except BaseException:
            self._drop(fd)
            raise
        if not taken:
            self._drop(fd)
            return False
        self._fd, self._depth = fd, 1
        try:
            with contextlib.suppress(OSError):  # who holds it, for the message of a writer that waits
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, f"{os.getpid()}\n".encode())
        except BaseException:  # Ctrl-C right here: a long-lived process must not keep the lock
            self.release()
            raise
        return True

    def release(self) -> None:
        """Release one level; the last one unlocks the file."""
        self._depth -= 1
        if self._depth == 0:
            fd, self._fd = self._fd, -1
            try:
                _unlock(fd)
            finally:
                self._drop(fd)
        else:
            self._thread_lock.release()

    def _drop(self, fd: int) -> None:
        """Close a lock file and let the next thread in."""
        _held.discard(fd)
        os.close(fd)
        self._thread_lock.release()

    def _wait_for(self, fd: int, wait: bool) -> bool:
        """Lock the open file, polling: a blocking lock could neither time out nor say who it waits for."""
        start = time.monotonic()
        told = False
        pause = 0.001
        while not _try_lock(fd):
            if not wait:
                return False
            waited = time.monotonic() - start
            if waited >= self.timeout:
                raise LockTimeout(self._holder(fd), self.timeout)
            if not told and waited >= TELL_AFTER:
                notice(f"waiting for another vaultmem writer ({self._holder(fd)}) …")
                told = True
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        return True

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            pid = int(os.read(fd, 32).split(b"\n")[0])
        except (OSError, ValueError):
            return "pid unknown"
        return f"pid {pid}"


def lock_timeout(configured: float) -> float:
    """Seconds a writer waits for the lock: $VAULTMEM_LOCK_TIMEOUT, else the config's (index.lock_timeout)."""
    explicit = os.environ.get("VAULTMEM_LOCK_TIMEOUT")
    if explicit:
        try:
            return float(explicit)
        except ValueError:
            raise VaultmemError(f"invalid VAULTMEM_LOCK_TIMEOUT {explicit!r}: give seconds, e.g. 60") from None
    return float(configured)


__all__ = ["DEFAULT_TIMEOUT", "LockTimeout", "WriteLock", "lock_timeout", "notice"]
