"""The HTTP API's routes: each reads its request, makes one Vault call on the request's view (guard.py)
and answers that result's to_dict(); FastAPI checks requests and writes /openapi.json from models.py.

Endpoints are plain functions run on the thread pool (pool.py: a Vault is shared between threads;
every view shares one index), their answers checked on the event loop. The token check is async: it
runs on the event loop, costs a hash and a stat of the token logs, and saves the pool a hop.
"""


import json
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from ... import Caller, VaultmemError, __version__
from ...errors import WatchLimit
from .guard import BodyLimit, Gate, RateLimit, Refused, problem, problem_of, validation_problem
from .models import (AskQuery, ChangesQuery, ChangesShape, ContextQuery, ForgetWhere, Health, Problem, Reason,
                     RecallQuery, Recalled, Remember, RememberedExplained, RememberedMany, RememberMany, Status,
                     Verdict)
from .pool import pooled
from .queries import QueryModel
from .storeroutes import store_routes
from ..shapes import Answered, FeedbackGiven, ForgetDone, Remembered, Shown, Told, Woven

__all__ = ["API", "DEFAULT_SOURCE", "RESCAN_S", "build_app", "from_environment"]

API = "/api/v1"
DEFAULT_SOURCE = "http"
RESCAN_S = 2.0  # without a watcher (the system allows no more file watches): a rescan this often
_LOG = logging.getLogger("vaultmem.http")
_ERRORS = {status: {"model": Problem} for status in (401, 403, 404, 409, 413, 422, 429)}

_bearer = HTTPBearer(auto_error=False, description="A token of `vaultmem token add`.")
_api_key = APIKeyHeader(name="x-api-key", auto_error=False, description="The same token (what langgraph-sdk sends).")


def build_app(vault: Any, *, loopback: bool = True, source: str = DEFAULT_SOURCE, namespace: str | None = None,
              trust: str | None = None, watch: bool = True) -> FastAPI:
    """The API over one open Vault (the owner's: it holds the tokens). `loopback`: the server listens
    on the loopback only, so a request without a token is the local caller (Vault.as_surface of
    `source`, `namespace`, `trust`) while the vault has no token. `watch`: keep the index current
    while it serves (Vault.watch; else a rescan every RESCAN_S seconds)."""
    owner = vault.as_caller(Caller())  # the owner's whatever $VAULTMEM_NAMESPACE says: it checks the tokens
    if owner.working_set is None:  # a server lives long: what it wrote or used answers first
        owner.use_working_set()
    local = owner.as_surface(source, namespace=namespace, trust=trust) if loopback else None
    settings = owner.settings.http
    gate = Gate(owner, local, RateLimit(settings.rate_per_minute))
    app = FastAPI(title="vaultmem", version=__version__, docs_url=None, redoc_url=None,
                  lifespan=lambda _: _serving(owner, watch), responses=_ERRORS,
                  description="Long-term memory kept as Markdown notes in a vault (README: Use it over HTTP).")
    _errors(app)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "PUT", "DELETE"], allow_headers=["authorization", "x-api-key",
                                                                                   "content-type"])

    def caller(writes: bool):
        async def view(bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                       key: Annotated[str | None, Depends(_api_key)], request: Request) -> Any:
            found, token = gate.view(bearer.credentials if bearer else key, writes)
            request.state.token = token
            return found
        return view

    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    _routes(app, Depends(caller(False)), Depends(caller(True)), settings.max_batch, source)
    return app


def from_environment() -> FastAPI:
    """The app of one worker process of `vaultmem serve --workers N`, from the options it was handed."""
    from . import OPTIONS_ENV
    from ..console import open_vault

    options = json.loads(os.environ[OPTIONS_ENV])
    return build_app(open_vault(options.pop("vault")), **options)


def _routes(app: FastAPI, reader: Any, writer: Any, max_batch: int, source: str) -> None:
    """Every endpoint; `reader` and `writer` are the dependencies that give a request its view."""
    Reader, Writer = Annotated[Any, reader], Annotated[Any, writer]
    _recall, _context, _ask, _changes = (QueryModel(m) for m in (RecallQuery, ContextQuery, AskQuery, ChangesQuery))

    @app.get(f"{API}/health", response_model=Health, tags=["server"])
    @pooled
    def health() -> dict:
        """Whether the server answers (no token needed, nothing of the vault shown)."""
        return {"status": "ok", "version": __version__}

    @app.get(f"{API}/status", response_model=Status, tags=["server"])
    @pooled
    def status(view: Reader, request: Request) -> dict:
        """Who the token is (name, scope, namespaces, trust) and the counts of what it may see."""
        return {"version": __version__, "caller": _caller(view, request.state.token), "stats": view.stats()}

    @app.post(f"{API}/memories", response_model=RememberedExplained, tags=["write"])
    @pooled
    def remember(body: Remember, view: Writer) -> dict:
        """Store a memory through the write pipeline (secrets redacted, duplicates merged, trust capped by the token)."""
        fields = body.model_dump(exclude_none=True, exclude={"text", "explain"})
        return view.remember(body.text, explain=body.explain, **{"source": source, **fields}).to_dict()

    @app.post(f"{API}/memories/batch", response_model=RememberedMany, tags=["write"])
    @pooled
    def remember_many(body: RememberMany, view: Writer) -> dict:
        """Store many memories at once, every item checked before the first is written; idempotent."""
        if len(body.items) > max_batch:
            raise Refused(413, "too_large", f"a batch holds at most {max_batch} memories (http.max_batch in "
                                            f".vaultmem/config.yaml), not {len(body.items)}")
        items = [{"source": source, **item.model_dump(exclude_none=True)} for item in body.items]
        results = view.remember_many(items, explain=body.explain)
        counts = {action: sum(1 for r in results if r.action == action) for action in ("created", "merged", "unchanged")}
        return {"total": len(results), **counts, "results": [r.to_dict() for r in results]}

    @app.get(f"{API}/recall", response_model=Recalled, tags=["read"], openapi_extra=_recall.openapi)
    @pooled
    def recall(q: Annotated[RecallQuery, _recall.depends], view: Reader) -> dict:
        """The memories that best match a query and/or tags, best first, with every filter of `vaultmem recall`."""
        options = q.model_dump(exclude={"query", "tags", "include"}, exclude_none=True)
        hits = view.recall(q.query, tags=q.tags or [], include=q.include or [], **options)
        return {"query": q.query, "hits": [h.to_dict() for h in hits], "suppressed": hits.suppressed}

    @app.get(f"{API}/context", response_model=Woven, tags=["read"], openapi_extra=_context.openapi)
    @pooled
    def context(q: Annotated[ContextQuery, _context.depends], view: Reader) -> dict:
        """The memories for a query as labelled lines within a token budget, for a prompt."""
        options = q.model_dump(exclude={"query", "budget_tokens", "tags"}, exclude_none=True)
        return view.context(q.query, q.budget_tokens, tags=q.tags or [], **options).to_dict()

    @app.get(f"{API}/ask", response_model=Answered, tags=["read"], openapi_extra=_ask.openapi)
    @pooled
    def ask(q: Annotated[AskQuery, _ask.depends], view: Reader) -> dict:
        """A direct answer from the value a note holds, or a declined one with the best candidates."""
        return view.ask(q.question, **q.model_dump(exclude={"question"}, exclude_none=True)).to_dict()

    @app.get(f"{API}/changes", response_model=ChangesShape, tags=["read"], openapi_extra=_changes.openapi)
    @pooled
    def changes(q: Annotated[ChangesQuery, _changes.depends], view: Reader) -> dict:
        """Notes created, changed, moved or removed since `since` (a person's edits too); pass `cursor` back."""
        return view.changes(q.since, q.limit).to_dict()

    @app.post(f"{API}/forget", response_model=ForgetDone, tags=["write"])
    @pooled
    def forget_where(body: ForgetWhere, view: Writer) -> dict:
        """Archive every memory matching all the selectors given (restorable; nothing is deleted)."""
        return view.forget_where(**body.model_dump(), namespace=None).to_dict()

    _note_routes(app, Reader, Writer)
    store_routes(app, Reader, Writer, source)


def _note_routes(app: FastAPI, Reader: Any, Writer: Any) -> None:
    """The endpoints of one note, named by id, vault path or title (URL-encoded)."""
    note = API + "/memories/{ref:path}"

    @app.post(note + "/feedback", response_model=FeedbackGiven, tags=["write"])
    @pooled
    def feedback(ref: str, body: Verdict, view: Writer) -> dict:
        """Say whether a recalled memory helped (wrong/outdated also mark it needs-verification)."""
        return view.feedback(ref, body.verdict, body.note).to_dict()

    @app.post(note + "/pin", response_model=FeedbackGiven, tags=["write"])
    @pooled
    def pin(ref: str, view: Writer) -> dict:
        """Keep a memory from decaying."""
        return view.pin(ref).to_dict()

    @app.delete(note + "/pin", response_model=FeedbackGiven, tags=["write"])
    @pooled
    def unpin(ref: str, view: Writer) -> dict:
        """Let a pinned memory decay again."""
        return view.unpin(ref).to_dict()

    @app.post(note + "/forget", response_model=Remembered, tags=["write"])
    @pooled
    def forget(ref: str, body: Reason, view: Writer) -> dict:
        """Archive one memory (moved to archive/, audited; restorable)."""
        return view.forget(ref, body.reason).to_dict()

    @app.post(note + "/restore", response_model=Remembered, tags=["write"])
    @pooled
    def restore(ref: str, view: Writer) -> dict:
        """Bring an archived memory back with the status it had."""
        return view.restore(ref).to_dict()

    @app.get(note + "/why", response_model=Told, tags=["read"])
    @pooled
    def why(ref: str, view: Reader) -> dict:
        """One memory's story, oldest first (its writing, merges, supersedes, commits, feedback, pins,
        forget/restore) and its strength now and in 30 days: `vaultmem why`."""
        return view.why(ref).to_dict()

    @app.get(note, response_model=Shown, tags=["read"])
    @pooled
    def show(ref: str, view: Reader) -> dict:
        """One note: its text, every property, tags, links."""
        return view.get(ref).to_dict()


def _caller(view: Any, token: Any) -> dict:
    caller = view.caller
    return {"name": caller.name, "scope": token.scope if token else "read-write",
            "namespaces": list(token.namespaces) if token else list(caller.own) or ["*"], "trust": caller.trust or ""}


def _errors(app: FastAPI) -> None:
    """Every error as JSON with a stable code (guard.py), in one place."""

    @app.exception_handler(Refused)
    async def refused(_: Request, exc: Refused) -> JSONResponse:
        return JSONResponse(problem(exc.code, exc.message), exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(validation_problem(list(exc.errors())), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "no_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(problem(code, str(exc.detail)), exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(VaultmemError)
    @app.exception_handler(OSError)
    async def failed(_: Request, exc: Exception) -> JSONResponse:
        status, body = problem_of(exc)
        return JSONResponse(body, status)

    @app.exception_handler(Exception)  # a bug: uvicorn logs its traceback, the client gets one line
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        status, body = problem_of(exc)
        return JSONResponse(body, status)


@asynccontextmanager
async def _serving(vault: Any, watch: bool) -> AsyncIterator[None]:
    """While the server serves: the index kept current (hand edits reach recall and the change feed
    within a second), the snapshot loaded in the background so the first recall is quick."""
    stop = threading.Event()
    watcher = _watcher(vault, stop) if watch else None
    threading.Thread(target=_warm, args=(vault,), name="vaultmem-warm", daemon=True).start()
    try:
        yield
    finally:
        stop.set()
        if watcher is not None:
            watcher.stop()


def _watcher(vault: Any, stop: threading.Event) -> Any:
    try:
        return vault.watch(on_error=lambda exc: _LOG.warning("watcher: %s (it tries again)", exc))
    except WatchLimit as exc:
        _LOG.warning("%s; rescanning every %g s instead", exc, RESCAN_S)
        threading.Thread(target=_rescans, args=(vault, stop), name="vaultmem-rescan", daemon=True).start()
        return None


def _rescans(vault: Any, stop: threading.Event) -> None:
    while not stop.wait(RESCAN_S):
        try:
            vault.refresh(wait=False)
        except Exception:  # a read says what is wrong; here a failed rescan only means the next one tries
            _LOG.warning("rescan of %s failed", vault.root, exc_info=True)


def _warm(vault: Any) -> None:
    try:
        vault.recall("", limit=1, record_access=False)
    except Exception:  # the first request says what is wrong
        _LOG.warning("loading the index failed", exc_info=True)
    finally:
        vault.close()  # this thread's index connection
