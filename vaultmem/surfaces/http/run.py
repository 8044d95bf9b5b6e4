"""uvicorn around the app: one process, its event loop, the endpoints on its thread pool. `run` serves
in the foreground (`vaultmem serve`), or with workers > 1 as that many processes sharing the port,
each its own app over its own Vault (several processes on one vault is what the Store is built
for; each keeps its own rate-limit counts); `in_thread` serves from a thread of a program of yours
(and of the tests) while a block runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

__all__ = ["FACTORY", "in_thread", "run", "run_workers"]

FACTORY = "vaultmem.surfaces.http.app:from_environment"  # what each worker process builds its app with

_START_S = 30.0  # how long in_thread waits for the server to listen


def _config(app: Any, host: str, port: int, access_log: bool, workers: int = 1) -> uvicorn.Config:
    return uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=access_log, lifespan="on",
                          timeout_graceful_shutdown=5, server_header=False, workers=workers,
                          factory=isinstance(app, str))


def _server(app: Any, host: str, port: int, access_log: bool) -> uvicorn.Server:
    return uvicorn.Server(_config(app, host, port, access_log))


def _url(server: uvicorn.Server, host: str) -> str:
    """The base URL the server listens on (its real port when it was given 0)."""
    return _base(host, server.servers[0].sockets[0].getsockname()[1])


def _base(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _after_start(server: uvicorn.Server, host: str, on_start: Callable[[str], None] | None,
                 stop_after: float | None) -> None:
    while not server.started and not server.should_exit:
        time.sleep(0.01)
    if server.started and on_start is not None:
        on_start(_url(server, host))
    if stop_after is not None:
        time.sleep(stop_after)
        server.should_exit = True


def run(app: Any, host: str, port: int, *, access_log: bool = False, stop_after: float | None = None,
        on_start: Callable[[str], None] | None = None) -> None:
    """Serve until Ctrl-C or SIGTERM, or for `stop_after` seconds; on_start(url) once it listens."""
    server = _server(app, host, port, access_log)
    if on_start is not None or stop_after is not None:
        threading.Thread(target=_after_start, args=(server, host, on_start, stop_after), daemon=True).start()
    server.run()
    if not server.started:  # uvicorn said why (the port is taken…) and gave up
        raise OSError(f"could not listen on {host}:{port}")


def run_workers(host: str, port: int, workers: int, *, access_log: bool = False, stop_after: float | None = None,
                on_start: Callable[[str], None] | None = None) -> None:
    """Serve FACTORY's app from `workers` processes sharing one socket (bound here, so port 0 works)
    until Ctrl-C or SIGTERM, or for `stop_after` seconds; on_start(url) once the socket listens."""
    config = _config(FACTORY, host, port, access_log, workers)
    sock = config.bind_socket()
    sock.listen(config.backlog)  # now: a client that comes before the workers are up waits instead of being refused
    supervisor = Multiprocess(config, sockets=[sock])
    if on_start is not None:
        on_start(_base(host, sock.getsockname()[1]))
    if stop_after is not None:
        timer = threading.Timer(stop_after, supervisor.should_exit.set)
        timer.daemon = True  # a Ctrl-C before it must not wait for it
        timer.start()
    try:
        supervisor.run()
    finally:
        sock.close()


@contextmanager
def in_thread(app: Any, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve `app` from a thread while the block runs; yields its base URL (port 0: a free one)."""
    server = _server(app, host, port, access_log=False)
    thread = threading.Thread(target=server.run, name="vaultmem-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + _START_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise OSError(f"the server did not start on {host}:{port}")
        time.sleep(0.01)
    try:
        yield _url(server, host)
    finally:
        server.should_exit = True
        thread.join(10)
