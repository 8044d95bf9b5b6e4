"""The change feed: every note the index added, changed, moved or dropped, numbered in the order it
did (`seq`), so a client elsewhere (an agent over HTTP) can ask what changed since it last looked.
A mixin of index.Index; its rows are the `changes` table, written in the transaction of the change.

The feed is the index's, so a cache like it. A cursor names its feed (`feed_epoch`, random, made with
the table: a new or rebuilt sidecar has another) and a position in it. A cursor of another epoch,
older than the rows kept (`feed_floor`: FEED_KEEP rows are), or from before a full rebuild (which
records no rows) cannot be answered: the reader re-reads what it needs and follows on.

Each row says where its change came from: `vaultmem` (a vaultmem process on this machine wrote the
note: Index.upsert) or `disk` (a refresh found it so: a person's edit, a git pull, a copy).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from .sidecar import heals
from .sqlrows import transaction

__all__ = ["FEED_KEEP", "ChangeFeed", "FeedPage", "FeedRow", "ORIGIN_DISK", "ORIGIN_VAULTMEM"]

FEED_KEEP = 10_000  # the newest rows kept: a git pull of more than that is a reset for a reader behind it
ORIGIN_VAULTMEM, ORIGIN_DISK = "vaultmem", "disk"
_COLUMNS = "seq, at, action, origin, id, path, kind, namespace, status, was_path, was_namespace"


@dataclass(frozen=True)
class FeedRow:
    """One change: action created, changed, moved or removed; was_path and was_namespace are the
    note's before it (a changed or moved note's; '' for created and removed ones)."""

    seq: int
    at: float
    action: str
    origin: str
    id: str
    path: str
    kind: str
    namespace: str
    status: str
    was_path: str = ""
    was_namespace: str = ""


@dataclass(frozen=True)
class FeedPage:
    """Rows after a position, read in one transaction with the feed's epoch, floor and last seq."""

    epoch: str
    floor: int
    last: int
    rows: list[FeedRow]


# a dropped row, as index._drop returns it: (id, kind, namespace) of the note a path held
Dropped = tuple[str, str, str]


def feed_rows(origin: str, at: float, gone: dict[str, Dropped], records: list[Any],
              replaced: dict[str, Dropped]) -> list[tuple]:
    """The feed's rows (without seq) for one change of the index: paths gone, records written
    (`replaced`: the rows they took the place of, by path). A gone note whose id a record carries
    moved there."""
    moved_from = {old[0]: path for path, old in gone.items() if old[0]}
    moves: set[str] = set()
    written = []
    for rec in records:
        old = replaced.get(rec.path)
        source = moved_from.get(rec.id) if old is None and rec.id else None
        if old is not None:
            action, was = "changed", (rec.path, old[2])
        elif source is not None and source not in moves:
            moves.add(source)
            action, was = "moved", (source, gone[source][2])
        else:
            action, was = "created", ("", "")
        written.append((at, action, origin, rec.id, rec.path, rec.kind, rec.namespace, rec.status, *was))
    removed = [(at, "removed", origin, old[0], path, old[1], old[2], "", "", "")
               for path, old in gone.items() if path not in moves]
    return removed + written


class ChangeFeed:
    """Index's change feed (see the module docstring); needs `_conn`, `_meta` and `_set_meta`."""

    def _log_changes(self, conn: sqlite3.Connection, origin: str, gone: dict[str, Dropped], records: list[Any],
                     replaced: dict[str, Dropped]) -> None:
        """Number and store one change's rows, keeping the newest FEED_KEEP (in the caller's transaction)."""
        rows = feed_rows(origin, time.time(), gone, records, replaced)
        if not rows:
            return
        first = int(self._meta(conn, "feed_seq", "0")) + 1
        last = first + len(rows) - 1
        cut = last - FEED_KEEP  # rows at or below it are not kept
        conn.executemany(f"INSERT INTO changes ({_COLUMNS}) VALUES (?{', ?' * 10})",
                         [(first + i, *row) for i, row in enumerate(rows) if first + i > cut])
        if cut > int(self._meta(conn, "feed_floor", "0")):
            conn.execute("DELETE FROM changes WHERE seq <= ?", (cut,))
            self._set_meta(conn, feed_floor=cut)
        self._set_meta(conn, feed_seq=last)

    def _restart_feed(self, conn: sqlite3.Connection) -> None:
        """A full rebuild records no rows: every cursor up to now becomes a reset (in its transaction)."""
        seq = int(self._meta(conn, "feed_seq", "0")) + 1
        conn.execute("DELETE FROM changes")
        self._set_meta(conn, feed_seq=seq, feed_floor=seq)

    @heals
    def changes_after(self, seq: int, limit: int) -> FeedPage:
        """Up to `limit` rows after position `seq`, oldest first, with the feed's epoch, floor and end."""
        conn = self._conn()
        with transaction(conn, "BEGIN"):  # one read: the rows and the meta that numbers them agree
            meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('feed_epoch', 'feed_floor', "
                                     "'feed_seq')"))
            found = conn.execute(f"SELECT {_COLUMNS} FROM changes WHERE seq > ? ORDER BY seq LIMIT ?",
                                 (seq, limit)).fetchall()
        return FeedPage(meta.get("feed_epoch", ""), int(meta.get("feed_floor", "0")), int(meta.get("feed_seq", "0")),
                        [FeedRow(*row) for row in found])
