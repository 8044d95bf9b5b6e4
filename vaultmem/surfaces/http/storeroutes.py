"""The LangGraph server's store routes, the requests `langgraph-sdk`'s `client.store` sends, answered by
VaultStore over the request's view: an agent written against a LangGraph deployment's store points at a vault.

    PUT /store/items              {namespace, key, value, index?, ttl?}       -> 204
    GET /store/items?namespace=alice.food&key=k                               -> the item, or null
    DELETE /store/items           {namespace, key}                            -> 204 (archived, restorable)
    POST /store/items/search      {namespace_prefix, filter, limit, offset, query}  -> {"items": [...]}
    POST /store/namespaces        {prefix, suffix, max_depth, limit, offset}  -> {"namespaces": [[...], ...]}

Status codes and bodies are the LangGraph server's (an item not found is `null`, as its get_item answers, so
the SDK's get_item gives None); errors are the API's JSON. A LangGraph namespace ("alice", "food") is the vault
namespace `alice.food`: a token reaches it when it names `alice.food` (a token of `alice` does not). `index`,
`ttl` and `refresh_ttl` are taken and ignored: recall indexes every word and a note does not expire.

The langgraph extra is imported by the first store request, not before: `vaultmem serve` without it serves
everything else, and these routes answer 501 `missing_extra` naming it.
"""

from typing import Annotated, Any

from fastapi import FastAPI, Response

from ... import MissingExtra, VaultmemError
from .guard import Refused
from .models import Problem, StoreDelete, StoreGetQuery, StoreItem, StoreItems, StoreListNamespaces, StoreNamespaces, \
    StorePut, StoreSearch
from .pool import pooled
from .queries import QueryModel

__all__ = ["STORE", "store_routes"]

STORE = "/store"  # where the LangGraph server has them (no /api/v1: the SDK's paths are fixed)
_ROUTE = {"tags": ["langgraph store"], "responses": {501: {"model": Problem}}}


def store_routes(app: FastAPI, Reader: Any, Writer: Any, source: str) -> None:
    """The five store routes; `source` is what the notes they write say wrote them (the server's)."""

    @app.put(f"{STORE}/items", status_code=204, response_class=Response, **_ROUTE)
    @pooled
    def put_item(body: StorePut, view: Writer) -> None:
        """Put an item: a note of its own; put again supersedes it (the old note kept as history)."""
        _answer(lambda: _store(view, source).put(tuple(body.namespace), body.key, body.value))

    item_query = QueryModel(StoreGetQuery)

    @app.get(f"{STORE}/items", response_model=StoreItem | None, openapi_extra=item_query.openapi, **_ROUTE)
    @pooled
    def get_item(q: Annotated[StoreGetQuery, item_query.depends], view: Reader) -> dict | None:
        """An item as its note is on disk now (a person's edit shows at once); null when there is none."""
        item = _answer(lambda: _store(view, source).get(tuple(q.namespace.split(".")), q.key))
        return None if item is None else item.dict()

    @app.delete(f"{STORE}/items", status_code=204, response_class=Response, **_ROUTE)
    @pooled
    def delete_item(body: StoreDelete, view: Writer) -> None:
        """Delete an item: its note is archived (vaultmem's forget; `restore` brings it back)."""
        _answer(lambda: _store(view, source).delete(tuple(body.namespace), body.key))

    @app.post(f"{STORE}/items/search", response_model=StoreItems, **_ROUTE)
    @pooled
    def search_items(body: StoreSearch, view: Reader) -> dict:
        """Items under a namespace prefix: ranked by recall for a `query`, kept by `filter` on their values."""
        found = _answer(lambda: _store(view, source).search(tuple(body.namespace_prefix), query=body.query,
                                                            filter=body.filter, limit=body.limit, offset=body.offset))
        return {"items": [item.dict() for item in found]}

    @app.post(f"{STORE}/namespaces", response_model=StoreNamespaces, **_ROUTE)
    @pooled
    def list_namespaces(body: StoreListNamespaces, view: Reader) -> dict:
        """The namespaces of the live items the token may read."""
        found = _answer(lambda: _store(view, source).list_namespaces(
            prefix=_labels(body.prefix), suffix=_labels(body.suffix), max_depth=body.max_depth, limit=body.limit,
            offset=body.offset))
        return {"namespaces": [list(name) for name in found]}


def _store(view: Any, source: str) -> Any:
    """A store over the request's view (it does no IO until asked; puts of every view take turns)."""
    try:
        from ...integrations.langgraph import VaultStore
    except MissingExtra:
        raise MissingExtra("the LangGraph store (/store/… routes)", "langgraph") from None
    return VaultStore(view, source=source)


def _answer(call: Any) -> Any:
    """call(), with what the request got wrong (a namespace label, a filter operator) as a 422."""
    try:
        return call()
    except VaultmemError:
        raise
    except ValueError as exc:  # langgraph's InvalidNamespaceError is one, and the filter's unknown operator
        code = "invalid_namespace" if type(exc).__name__ == "InvalidNamespaceError" else "invalid_value"
        raise Refused(422, code, str(exc)) from None


def _labels(given: list[str] | None) -> tuple[str, ...] | None:
    return None if not given else tuple(given)
