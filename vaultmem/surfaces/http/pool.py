"""How an endpoint runs: on the thread pool (a Vault call may wait on the disk or the write lock: the
event loop must not), its answer checked back on the event loop. FastAPI would run a plain function
there too, and then check its answer with a second hop to the pool. Shared by app.py and storeroutes.py."""

import functools
from typing import Any

from starlette.concurrency import run_in_threadpool

__all__ = ["pooled"]


def pooled(endpoint: Any) -> Any:
    """An endpoint run on the thread pool (see the module docstring); FastAPI reads its signature through it."""
    @functools.wraps(endpoint)
    async def run(*args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(endpoint, *args, **kwargs)
    return run
