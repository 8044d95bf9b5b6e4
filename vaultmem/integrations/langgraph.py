"""A LangGraph store whose items are notes of a vault: `VaultStore`, a `langgraph.store.base.BaseStore`.

    from vaultmem import Vault
    from vaultmem.integrations.langgraph import VaultStore

    graph = builder.compile(store=VaultStore(Vault("~/notes/agent-memory")))

An item is a note a person can read and edit in Obsidian (storeitems.py: which field goes where). Each
operation is a public Vault call, so the promises of the library hold (secrets redacted, hand edits kept,
one writer at a time, the caller's namespaces):
- namespace ("users", "alice") is the vault namespace "users.alice": a store over
  `vault.as_caller(Caller(namespace="users.alice"))` reads and writes that one (and `shared`); naming another
  in get or put is NamespaceDenied, and search and list_namespaces see only what the caller may read;
- get: a recall of the item's own tag (one posting list), the note then read as it is on disk (a person's
  edit shows at once); exact on the note's namespace and `store_key`;
- put: a note of its own (`merge: false`, never folded into another memory); put again supersedes it (the
  old note stays, linked, as history, with whatever a person wrote in it: nothing is lost), the same value
  again writes nothing; created_at is the first note's (`store_created`), updated_at the current one's
  timestamp; `index` is ignored (recall indexes every word), and so is a `ttl` (notes do not expire);
- delete (put None): vaultmem's forget: the note is archived, `vault.restore(id)` brings the item back;
- search: vaultmem's recall over the store's notes (`query` ranks them, `score` is the recall's final score;
  without a query the recall's order by strength, score None), then `filter` on each value;
- list_namespaces: the namespaces of the live items.

Operations of one batch run in the order given. Puts through the stores of one Vault (and of its views) take
turns, so two graph nodes or two requests putting one key never write two current notes; two processes doing
so at the same moment may (get then answers with the newer, and the next put supersedes that one).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import Memory, MissingExtra, NoteNotFound, Vault
from .storeitems import CREATED, KEY, fits, item_tags, jsonable, matches, note_of, path_tag, value_of

try:
    from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, Op, PutOp,
                                      Result, SearchItem, SearchOp, validate_op_namespace)
except ImportError:
    raise MissingExtra("vaultmem.integrations.langgraph", "langgraph") from None

__all__ = ["DEFAULT_LIFECYCLE", "DEFAULT_SOURCE", "VaultStore"]

DEFAULT_SOURCE = "langgraph"
DEFAULT_LIFECYCLE = "permanent"  # a stored item keeps its strength and gc never archives it (as a person's own note)
_LIVE = ["candidate"]  # statuses a lookup shows besides recall's default (active, needs-verification)
_FIRST_WINDOW = 50  # recall hits a search looks at first; more while its filter wants them
_LISTING = 10_000  # a listing's first window: one recall for most stores (a recall costs what it returns)


@dataclass(frozen=True)
class _Found:
    """An item and the note that holds it now."""

    item: Item
    memory: Memory


class VaultStore(BaseStore):
    """A LangGraph store over a vault (or a caller's view of one, `vault.as_caller(...)`): see the module
    docstring. `source` is who its notes say wrote them; `lifecycle` the half-life of new items' notes."""

    def __init__(self, vault: Vault, *, source: str = DEFAULT_SOURCE, lifecycle: str = DEFAULT_LIFECYCLE):
        self.vault = vault
        self.source = source
        self.lifecycle = lifecycle

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; a result for each (None for a put)."""
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """batch() on a worker thread: a vault's reads and writes are file and database IO."""
        ops = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)

    def _run(self, op: Op) -> Result:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            found = self._current(op.namespace, str(op.key))
            return None if found is None else found.item
        if isinstance(op, PutOp):
            return self._put(op.namespace, str(op.key), op.value)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise ValueError(f"VaultStore runs GetOp, PutOp, SearchOp and ListNamespacesOp, not {type(op).__name__}")

    # -- one item ----------------------------------------------------------------------------------
    def _current(self, namespace: tuple[str, ...], key: str) -> _Found | None:
        """The item's current note (the newest, should two processes have written one at once), or None."""
        hits = self.vault.recall("", tags=[path_tag([*namespace, key])], namespace=".".join(namespace),
                                 include=_LIVE, limit=10, record_access=False)
        found = [f for f in map(self._found, (h.id for h in hits)) if f is not None
                 and f.item.namespace == tuple(namespace) and f.item.key == key]
        return max(found, key=lambda f: f.item.updated_at, default=None)

    def _found(self, note_id: str) -> _Found | None:
        """The item a note holds, read as it is on disk; None for a note that is no store item (any more)."""
        try:
            memory = self.vault.get(note_id)
        except NoteNotFound:  # archived or deleted since the recall
            return None
        key = memory.meta.get(KEY)
        if not isinstance(key, str) or not memory.namespace:
            return None
        updated = _when(memory.timestamp) or dt.datetime.now(dt.timezone.utc)
        item = Item(value=value_of(memory.meta, memory.content), key=key, namespace=tuple(memory.namespace.split(".")),
                    created_at=_when(memory.meta.get(CREATED)) or updated, updated_at=updated)
        return _Found(item, memory)

    def _put(self, namespace: tuple[str, ...], key: str, value: Any) -> None:
        if not namespace or namespace[0] == "langgraph" or namespace == ("*",):
            raise InvalidNamespaceError(f"an item's namespace needs a first label other than 'langgraph' or '*', "
                                        f"not {namespace!r}")
        # one lock for the vault and all its views (a server's store per token): puts of one key take turns
        with self.vault.reused("langgraph-puts", None, threading.Lock):
            current = self._current(namespace, key)
            if value is None:
                if current is not None:
                    self.vault.forget(current.memory.id, reason=f"deleted through the LangGraph store ({self.source})")
                return None
            value = jsonable(dict(value))
            if current is not None and current.item.value == value:
                return None  # said already: no new note, no git diff
            body, properties, title = note_of(key, value, current.item.created_at.isoformat() if current else None)
            fields: dict[str, Any] = {"title": title} if title else {}
            if current is None:
                fields.update(tags=item_tags(namespace, key), lifecycle=self.lifecycle)
            else:  # the correction keeps the note's tags and lifecycle, a person's own among them
                fields.update(supersedes=current.memory.id)
            self.vault.remember(body, namespace=".".join(namespace), source=self.source, merge=False,
                                properties=properties, **fields)
        return None

    # -- many items --------------------------------------------------------------------------------
    def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        read: dict[str, _Found | None] = {}  # each note read once, however many windows show it
        kept: dict[tuple[tuple[str, ...], str], tuple[_Found, float]] = {}  # by item, in the order found
        for hits in self._windows(op.query or "", op.namespace_prefix, wanted):
            kept = {}
            for hit in hits:
                if not _under(hit.namespace, op.namespace_prefix):
                    continue
                if hit.id not in read:
                    read[hit.id] = self._found(hit.id)
                found = read[hit.id]
                if found is not None and (not op.filter or matches(found.item.value, op.filter)):
                    _keep(kept, found, hit.final)
            if len(kept) >= wanted:
                break
        page = list(kept.values())[op.offset:wanted]
        if op.query and page and self.vault.settings.reinforcement.record_access:
            self.vault.record_access([f.memory.id for f, _ in page])  # a recall's uses: what it returned
        return [_searched(found, score if op.query else None) for found, score in page]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        *_, hits = self._windows("", _fixed(op.match_conditions), _LISTING)  # the last window holds them all
        by_namespace: dict[tuple[str, ...], list[str]] = {}
        for hit in hits:
            if hit.namespace:
                by_namespace.setdefault(tuple(hit.namespace.split(".")), []).append(hit.id)
        conditions = op.match_conditions or ()
        # a namespace is listed for an item in it: one note read, unless a person tagged notes of theirs `langgraph`
        names = {name for name, ids in by_namespace.items()
                 if all(fits(name, c.match_type, c.path) for c in conditions) and any(map(self._found, ids))}
        if op.max_depth is not None:
            names = {n[:op.max_depth] for n in names}
        return sorted(names)[op.offset:op.offset + op.limit]

    def _windows(self, query: str, prefix: tuple[str, ...], wanted: int) -> Iterable[list[Any]]:
        """Recalls of the live items under a namespace prefix (its tag; in every namespace the caller may read),
        each four times as long as the one before, until one comes back short (there are no more) or holds
        `wanted` kept ones (the caller stops then)."""
        window = max(_FIRST_WINDOW, wanted)
        while True:
            hits = self.vault.recall(query, tags=[path_tag(prefix)], namespace="*", include=_LIVE, limit=window,
                                     record_access=False)
            yield hits
            if len(hits) < window:
                return
            window *= 4


def _keep(kept: dict[tuple[tuple[str, ...], str], tuple[_Found, float]], found: _Found, score: float) -> None:
    """Keep an item found by a search once: should two processes have written a current note of one key, the
    newer stands (as get answers), at the better rank of the two."""
    ident = (found.item.namespace, found.item.key)
    held = kept.get(ident)
    if held is None or found.item.updated_at > held[0].item.updated_at:
        kept[ident] = (found, score if held is None else max(score, held[1]))


def _fixed(conditions: Iterable[Any] | None) -> tuple[str, ...]:
    """The labels a listing's prefix condition fixes before its first wildcard (() for none)."""
    prefix = next((tuple(c.path) for c in conditions or () if c.match_type == "prefix"), ())
    return prefix[:prefix.index("*")] if "*" in prefix else prefix


def _under(namespace: str, prefix: tuple[str, ...]) -> bool:
    """Whether a note's vault namespace is the namespace `prefix` or one below it."""
    joined = ".".join(prefix)
    return not prefix or namespace == joined or namespace.startswith(joined + ".")


def _searched(found: _Found, score: float | None) -> SearchItem:
    item = found.item
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                      updated_at=item.updated_at, score=score)


def _when(text: Any) -> dt.datetime | None:
    """An aware time from a note's ISO 8601 text (a naive one is UTC); None for none or another shape."""
    if isinstance(text, dt.datetime):
        when = text
    else:
        try:
            when = dt.datetime.fromisoformat(str(text))
        except ValueError:
            return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
