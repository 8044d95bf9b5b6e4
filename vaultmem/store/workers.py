"""Worker processes for the big jobs (a first index, a large batch): how many, and how they start."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .files import process_alive

if TYPE_CHECKING:  # ~20 ms to import with multiprocessing: a refresh with little to read needs neither
    from concurrent.futures import ProcessPoolExecutor

MAX_WORKERS = 4


def worker_count() -> int:
    """Processes worth starting: one per core this process may run on, at most MAX_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def process_pool(workers: int, preload: list[str], initializer: Callable[..., Any] | None = None,
                 initargs: tuple = ()) -> ProcessPoolExecutor:
    """A pool whose workers start without running the caller's script again.

    A single-threaded process on Linux forks (workers start in milliseconds, with every module and
    the initializer's arguments inherited). Forking a multi-threaded host (an agent, a server) can
    copy a lock some other thread holds, so there a fork server starts the workers, with `preload`
    imported once; that start imports the host's main module, which Python's multiprocessing needs
    guarded by `if __name__ == "__main__"`.
    Every worker dies with the process that started the pool (see _watch_parent).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if sys.platform == "linux" and threading.active_count() == 1:
        context = multiprocessing.get_context("fork")
    elif "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(preload)
    else:  # Windows
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                               initargs=(os.getpid(), initializer, initargs))


def _start_worker(owner: int, initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    _watch_parent(owner)
    if initializer is not None:
        initializer(*initargs)


def _watch_parent(owner: int) -> None:
    """Make this worker exit when `owner` (the pool's process) is gone.

    A worker waits on a queue whose writing end it holds itself, so it would never notice a killed
    owner (timeout, systemd, docker stop) and live on, idle, forever. Linux kills it with the
    thread that forked it (PR_SET_PDEATHSIG); elsewhere, and for a pool whose workers a fork server
    starts, a thread checks every second that the owner is still there.
    """
    if sys.platform == "linux":
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    parent = os.getppid()
    if not process_alive(owner):  # died before this worker was set to die with it
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent or not process_alive(owner):
                os._exit(1)

    threading.Thread(target=watch, name="vaultmem-owner-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1


__all__ = ["MAX_WORKERS", "process_pool", "worker_count"]
