"""Worker processes for the big jobs (a first index, a large batch): how many, and how they start."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

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
    """
    import multiprocessing

    if sys.platform == "linux" and threading.active_count() == 1:
        context = multiprocessing.get_context("fork")
    elif "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(preload)
    else:  # Windows
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(workers, mp_context=context, initializer=initializer, initargs=initargs)


__all__ = ["MAX_WORKERS", "process_pool", "worker_count"]
