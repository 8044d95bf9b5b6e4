"""The HTTP server (`vaultmem serve`): the vault's memories as a JSON API for agents that are not in
Python or not on the vault's machine.

    vaultmem serve --vault ~/notes/agent-memory        # http://127.0.0.1:8765/api/v1/…, /openapi.json

FastAPI on uvicorn: FastAPI writes the OpenAPI document from the same pydantic models that check
each request (models.py), so the document cannot drift from what the server accepts; uvicorn runs
its plain endpoints on a thread pool over one shared Vault. Both are the optional `http` extra,
imported only when a server is built (app.py): importing this package, or vaultmem, never needs them.

Safe by default (guard.py): it listens on 127.0.0.1 unless --host says otherwise, and refuses any
other address while the vault has no token (`vaultmem token add`); once one exists every request
needs one. Each request runs as its token's caller: its namespaces, its trust, its name in the audit.
"""

from __future__ import annotations

import ipaddress
import json
import os
from typing import Any

from ..console import VAULT_ENV, installed, open_vault
from ...errors import MissingExtra, VaultmemError

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "OPTIONS_ENV", "loopback", "serve"]

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765
OPTIONS_ENV = "VAULTMEM_SERVE_OPTIONS"  # how `serve --workers N` hands its options to each worker process


def loopback(host: str) -> bool:
    """Whether an address to listen on is this machine's loopback only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def serve(vault: str | os.PathLike[str] | None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
          source: str = "http", namespace: str | None = None, trust: str | None = None, watch: bool = True,
          access_log: bool = False, stop_after: float | None = None, on_start: Any = None, workers: int = 1) -> None:
    """Open the vault (--vault, else $VAULTMEM_VAULT, else $OBSIDIAN_VAULT_PATH) and serve it until
    Ctrl-C or SIGTERM (or `stop_after` seconds), from `workers` processes. `on_start(url)` is called
    once it listens. Raises VaultmemError: MissingExtra without the extra, a refusal to listen beyond
    the loopback without a token."""
    if not (installed("fastapi") and installed("uvicorn")):  # first: without them nothing else matters
        raise MissingExtra("the HTTP server", "http")
    if vault is None:
        vault = next((os.environ[name] for name in VAULT_ENV if os.environ.get(name)), None)
    opened = open_vault(vault)
    local = loopback(host)
    if not local and not opened.as_caller(_owner()).tokens():
        raise VaultmemError(f"serving on {host} needs a token, or anyone who can reach it reads the vault: make one "
                            "with `vaultmem token add NAME --namespace N` (without a token only 127.0.0.1 is served)")
    options = {"loopback": local, "source": source, "namespace": namespace, "trust": trust, "watch": watch}
    if workers > 1:
        from .run import run_workers

        os.environ[OPTIONS_ENV] = json.dumps({"vault": str(opened.root), **options})
        run_workers(host, port, workers, access_log=access_log, stop_after=stop_after, on_start=on_start)
        return
    from .app import build_app
    from .run import run

    run(build_app(opened, **options), host, port, access_log=access_log, stop_after=stop_after, on_start=on_start)


def _owner() -> Any:
    from ... import Caller

    return Caller()
