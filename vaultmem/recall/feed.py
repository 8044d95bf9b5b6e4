"""What changed since a reader last looked (Vault.changes): the index's change feed
(store/index/feed.py) as the caller may see it, behind a cursor the reader hands back.

A change to a note the caller may not see is left out. A note that left its sight (a person edited
its namespace to another agent's) is, for it, removed; one that came into it is created: a reader
that keeps a copy of what it sees stays right without learning anything of what it may not.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import InvalidValue
from ..store.index.feed import FeedPage, FeedRow
from ..store.store import Store

__all__ = ["Change", "Changes", "DEFAULT_LIMIT", "MAX_LIMIT", "changes"]

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_SEP = "."


@dataclass(frozen=True)
class Change:
    """One note's change: action created, changed, moved (from `moved_from`) or removed; origin
    `vaultmem` (written by vaultmem on this machine) or `disk` (found on disk: a person's edit, a
    pull); status '' for a removed note; `cursor` is the feed's position after it."""

    cursor: str
    action: str
    origin: str
    at: str
    id: str
    path: str
    kind: str
    namespace: str
    status: str
    moved_from: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (HTTP)."""
        return asdict(self)


@dataclass(frozen=True)
class Changes:
    """A page of the feed: pass `cursor` back as `since` for what comes next (at once when `more`).
    `reset`: the cursor given cannot be followed on from (another index, a rebuild, older than the
    changes kept); re-read what you keep, then follow from `cursor`."""

    cursor: str
    changes: list[Change] = field(default_factory=list)
    more: bool = False
    reset: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (HTTP)."""
        return {"cursor": self.cursor, "changes": [c.to_dict() for c in self.changes], "more": self.more,
                "reset": self.reset}


def changes(store: Store, since: str | None = None, limit: int = DEFAULT_LIMIT) -> Changes:
    """The changes after cursor `since` the caller may see, oldest first, at most `limit`; without
    `since`, none and the cursor of now (follow from it)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidValue(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    given = None if since is None else _position(since)
    store.index.catch_up(wait=False)  # a note created, moved or deleted by another program: seen now
    page = store.index.changes_after(given[1] if given else 0, 0 if given is None else limit)
    if given is None or not _follows(page, *given):
        return Changes(_cursor(page.epoch, page.last), reset=given is not None)
    found: list[Change] = []
    at = given[1]
    while True:
        for row in page.rows:
            at = row.seq
            seen = _as_seen(row, store.sees, _cursor(page.epoch, row.seq))
            if seen is not None:
                found.append(seen)
                if len(found) == limit:
                    break
        if len(found) == limit or len(page.rows) < limit:
            return Changes(_cursor(page.epoch, at), found, more=at < page.last)
        page = store.index.changes_after(at, limit)
        if not _follows(page, page.epoch, at):  # pruned past us meanwhile
            return Changes(_cursor(page.epoch, page.last), reset=True)


def _position(cursor: str) -> tuple[str, int]:
    epoch, _, seq = str(cursor).rpartition(_SEP)
    if not epoch or not seq.isdigit() or len(seq) > 18:
        raise InvalidValue("since must be a cursor the change feed gave (the `cursor` of its last answer)")
    return epoch, int(seq)


def _cursor(epoch: str, seq: int) -> str:
    return f"{epoch}{_SEP}{seq}"


def _follows(page: FeedPage, epoch: str, seq: int) -> bool:
    """Whether the feed holds every change after position `seq` of feed `epoch`."""
    return epoch == page.epoch and page.floor <= seq <= page.last


def _as_seen(row: FeedRow, sees: Any, cursor: str) -> Change | None:
    """The change as a caller that sees the namespaces `sees` accepts sees it, or None."""
    at = dt.datetime.fromtimestamp(row.at, dt.timezone.utc).astimezone().isoformat(timespec="milliseconds")
    if row.action == "removed":
        return Change(cursor, "removed", row.origin, at, row.id, row.path, row.kind, row.namespace, "") \
            if sees(row.namespace) else None
    before = bool(row.was_path) and sees(row.was_namespace)
    if sees(row.namespace):
        action = row.action if before else "created"
        return Change(cursor, action, row.origin, at, row.id, row.path, row.kind, row.namespace, row.status,
                      row.was_path if action == "moved" else "")
    if before:  # out of its sight now: gone, as far as it may know
        return Change(cursor, "removed", row.origin, at, row.id, row.was_path, row.kind, row.was_namespace, "")
    return None
