"""Who may ask, how much, and what an error looks like: the HTTP server's token check, rate limit,
body limit and its one mapping of errors to status codes and JSON.

A request carries its token as `Authorization: Bearer TOKEN` or `x-api-key: TOKEN` (what
langgraph-sdk sends). It then runs on a view of the vault for the token's caller (Token.caller:
its namespaces, its trust, its name in the audit log); a read token may not write (403). Without
any token the server answers only when it listens on the loopback and the vault has no token at
all: as the local caller `vaultmem serve` was started as (its --namespace and --trust). Once a
vault has a token, every request needs one.

Every error is `{"code", "message"}` (and `field`, `errors` for a request that does not fit): the
code is the error's class in snake_case (not_found, namespace_denied, write_conflict, …) or the
server's own (unauthorized, read_only, rate_limited, too_large, invalid_request); the message is the
sentence the CLI prints. Never a traceback: anything unexpected is `internal`, logged on the server.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

from ...errors import (AmbiguousNote, ConfigError, InvalidValue, MissingArgument, MissingExtra, NamespaceDenied,
                       NoteFormatError, NoteNotFound, OwnerOnly, PolicyViolation, UnsafePath, VaultmemError, VaultNotFound,
                       WriteConflict)
from ..console import error_message

__all__ = ["BodyLimit", "Gate", "Refused", "RateLimit", "problem", "problem_of", "validation_problem"]

# the status of each library error, the first that matches; the rest of VaultmemError is a 400
_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NoteNotFound, 404), (NamespaceDenied, 403), (OwnerOnly, 403), (AmbiguousNote, 409), (WriteConflict, 409),
    (NoteFormatError, 409), (MissingArgument, 422), (InvalidValue, 422), (PolicyViolation, 422), (UnsafePath, 400),
    (VaultNotFound, 503), (ConfigError, 500), (MissingExtra, 501))
# errors of the layers below, which a surface does not import: by class name
_STATUS_BY_NAME = {"LockTimeout": 503, "IndexDamaged": 503}


class Refused(Exception):
    """A request the server itself turns away (auth, scope, rate, size): its status, code and message."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


def problem(code: str, message: str, **more: Any) -> dict[str, Any]:
    """The JSON body of an error."""
    return {"code": code, "message": message, **more}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def problem_of(exc: Exception) -> tuple[int, dict[str, Any]]:
    """(status, body) for an exception a call raised: a library error by its class, a disk error as
    503, anything else as `internal` (its traceback goes to the server's log, never to the client)."""
    if isinstance(exc, VaultmemError):
        status = next((s for kind, s in _STATUS if isinstance(exc, kind)), _STATUS_BY_NAME.get(type(exc).__name__, 400))
        code = "not_found" if isinstance(exc, NoteNotFound) else _snake(type(exc).__name__)
        if isinstance(exc, MissingArgument):  # named as the JSON fields are: the Python API's parameters
            return status, problem(code, exc.said({name: name for name in exc.names}))
        return status, problem(code, (error_message(exc) or str(exc)).removeprefix("Error: "))
    if isinstance(exc, OSError):
        return 503, problem("os_error", (error_message(exc) or str(exc)).removeprefix("Error: "))
    return 500, problem("internal", "unexpected error; the server's log has the details")


def _field(loc: tuple[Any, ...]) -> str:
    """A validation error's place as the client wrote it: `limit`, `items.3.text` (the body as a whole: body)."""
    parts = [str(p) for p in loc[1:]] if loc and loc[0] in ("body", "query", "path", "header") else [str(p) for p in loc]
    return ".".join(parts) or "body"


def validation_problem(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The 422 body for a request that does not fit its model: every field named, no value repeated
    (a secret sent in the wrong field is not sent back)."""
    found = []
    for err in errors:
        if err.get("type") == "json_invalid":
            found.append({"field": "body", "message": f"not JSON ({err.get('ctx', {}).get('error', 'invalid')})"})
        elif err.get("type") == "missing" and err.get("loc") == ("body",):
            found.append({"field": "body", "message": "a JSON body is required"})
        else:
            found.append({"field": _field(tuple(err.get("loc", ()))), "message": err.get("msg", "invalid")})
    message = "; ".join(f"{e['field']}: {e['message']}" for e in found)
    return problem("invalid_request", message, field=found[0]["field"] if found else "body", errors=found)


class RateLimit:
    """Per token: `per_minute` requests a minute, in bursts of up to a tenth of that (a token bucket);
    0: no limit. Shared by the server's threads."""

    def __init__(self, per_minute: int, clock=time.monotonic):
        self.rate = per_minute / 60.0
        self.burst = max(1.0, per_minute / 10.0)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (tokens left, when counted)
        self._lock = threading.Lock()

    def wait(self, name: str) -> float:
        """Take one request of this token's allowance: 0 when it may go, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            left, then = self._buckets.get(name, (self.burst, now))
            left = min(self.burst, left + (now - then) * self.rate)
            if left < 1:
                self._buckets[name] = (left, now)
                return (1 - left) / self.rate
            self._buckets[name] = (left - 1, now)
            return 0.0


class Gate:
    """Turns a request's token into the vault view it runs on (see the module docstring)."""

    def __init__(self, vault: Any, local: Any | None, rate: RateLimit):
        self.vault = vault  # the owner's: it holds the tokens
        self.local = local  # the tokenless caller's view, on the loopback only (None elsewhere)
        self.rate = rate
        self._views: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def view(self, secret: str | None, writes: bool) -> tuple[Any, Any]:
        """(the view a request runs on, its Token or None). Raises Refused: 401 without a valid token,
        403 when a read token writes, 429 past its rate."""
        if not secret:
            if self.local is not None and not self.vault.tokens():
                return self.local, None
            raise Refused(401, "unauthorized", "this server needs a token: send it as `Authorization: Bearer "
                          "TOKEN` or `x-api-key: TOKEN` (vaultmem token add makes one)",
                          {"WWW-Authenticate": "Bearer"})
        token = self.vault.token_for(secret)
        if token is None:
            raise Refused(401, "unauthorized", "the token is not valid here (unknown or revoked)",
                          {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        if writes and not token.writes:
            raise Refused(403, "read_only", f"token {token.name!r} may only read (scope read): this request writes")
        delay = self.rate.wait(token.name)
        if delay:
            raise Refused(429, "rate_limited", f"token {token.name!r} made more requests than http.rate_per_minute "
                          "allows; try again shortly", {"Retry-After": str(max(1, round(delay + 0.5)))})
        return self._view_for(token), token

    def _view_for(self, token: Any) -> Any:
        view = self._views.get(token)
        if view is None:
            with self._lock:
                view = self._views.setdefault(token, self.vault.as_caller(token.caller()))
        return view


class BodyLimit:
    """ASGI middleware: a request body over `max_bytes` is a 413 in the API's JSON before any of it
    reaches the app (by its Content-Length, or counted as it arrives); the rest is read whole and
    handed on. (FastAPI's own max_body_size answers in plain text, and not on every path.)"""

    def __init__(self, app: Any, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._too_large(send)
                return
            more = message.get("more_body", False)
        body, given = b"".join(chunks), False

        async def replay() -> dict:
            nonlocal given
            if given:  # the app waits for the client to leave: the real receive tells
                return await receive()
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _too_large(self, send: Any) -> None:
        data = json.dumps(problem("too_large", f"the request body is over {self.max_bytes} bytes "
                                               "(http.max_body_bytes in .vaultmem/config.yaml)")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": data})
