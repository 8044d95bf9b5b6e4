"""The index's SQLite file: its schema, connections and transactions, and a note's row.

A Record becomes one `notes` row (lists joined by line breaks, the sketch by spaces) and comes
back from it; index.py keeps the logic of what is written when.
"""

from __future__ import annotations

import contextlib
import math
import operator
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...text.decay import VERDICTS
from .records import Record

NOTE_FIELDS = ("id", "path", "kind", "title", "mtime_ns", "size", "sha", "fp", "type", "value", "score", "ts",
               "lifecycle", "source", "trust", "status", "namespace", "episode", "tags", "aliases", "links",
               "body", "stamp", "error", "sketch", "policy")
_LIST_FIELDS = ("tags", "aliases", "links")
_NOTE_VALUES = operator.attrgetter(*NOTE_FIELDS)  # a Record's row values in one C call
_LIST_AT = tuple(NOTE_FIELDS.index(f) for f in _LIST_FIELDS)
_SKETCH_AT = NOTE_FIELDS.index("sketch")

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes(doc INTEGER PRIMARY KEY, {", ".join(NOTE_FIELDS)});
CREATE UNIQUE INDEX IF NOT EXISTS notes_path ON notes(path);
CREATE INDEX IF NOT EXISTS notes_id ON notes(id);
CREATE INDEX IF NOT EXISTS notes_fp ON notes(fp);
CREATE INDEX IF NOT EXISTS notes_kind ON notes(kind);
CREATE TABLE IF NOT EXISTS delta(doc INTEGER PRIMARY KEY, terms TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tomb(doc INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS access(id TEXT PRIMARY KEY, uses INTEGER NOT NULL, last REAL NOT NULL);
CREATE TABLE IF NOT EXISTS logpos(file TEXT PRIMARY KEY, offset INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS notes_value ON notes(type, value);
CREATE INDEX IF NOT EXISTS notes_path_nocase ON notes(path COLLATE NOCASE);
-- the few notes with a decay policy of their own (pinned, half_life, decay_floor): read by every snapshot
CREATE INDEX IF NOT EXISTS notes_policy ON notes(doc, policy) WHERE policy != '';
-- folded hindsight feedback per note id (every device's events logs): votes, and the sum of ln(factor) of
-- its `decay` events (vaultmem decay); and pin events for adaptive λ
CREATE TABLE IF NOT EXISTS feedback(id TEXT PRIMARY KEY, good INTEGER NOT NULL, bad INTEGER NOT NULL, last REAL NOT NULL,
                                    scale REAL NOT NULL DEFAULT 0);
-- (each log line is folded once: logpos moves in the same transaction)
CREATE TABLE IF NOT EXISTS pins(file TEXT NOT NULL, id TEXT NOT NULL, event TEXT NOT NULL, ts REAL NOT NULL,
                                ratio REAL, age_hours REAL);
-- sketch keys (dedup.sketch_keys) of the notes not yet in a generation; a generation keeps the rest
CREATE TABLE IF NOT EXISTS dupkey(key INTEGER NOT NULL, path TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS dupkey_key ON dupkey(key);
CREATE INDEX IF NOT EXISTS dupkey_path ON dupkey(path);
-- the change feed (feed.py): what each change of the index did to a note, numbered in order
CREATE TABLE IF NOT EXISTS changes(seq INTEGER PRIMARY KEY, at REAL NOT NULL, action TEXT NOT NULL, origin TEXT NOT NULL,
                                   id TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL,
                                   status TEXT NOT NULL, was_path TEXT NOT NULL, was_namespace TEXT NOT NULL);
"""


INSERT_NOTE = f"INSERT INTO notes (doc, {', '.join(NOTE_FIELDS)}) VALUES ({', '.join('?' * (len(NOTE_FIELDS) + 1))})"
INSERT_KEY = "INSERT INTO dupkey VALUES (?, ?)"
UPSERT_ACCESS = ("INSERT INTO access VALUES (?, 1, ?) ON CONFLICT(id) DO UPDATE SET uses = uses + 1, "
                 "last = max(last, excluded.last)")

UPSERT_FEEDBACK = ("INSERT INTO feedback (id, good, bad, last) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET good = good + excluded.good, "
                   "bad = bad + excluded.bad, last = max(last, excluded.last)")
UPSERT_DECAY = ("INSERT INTO feedback (id, good, bad, last, scale) VALUES (?, 0, 0, 0, ?) ON CONFLICT(id) DO UPDATE "
                "SET scale = scale + excluded.scale")
INSERT_PIN = "INSERT INTO pins VALUES (?, ?, ?, ?, ?, ?)"


def fold_event(conn: sqlite3.Connection, log: str, ev: dict[str, Any]) -> None:
    """Fold one valid event of a device's events log (`log`: its path under devices/) into the tables."""
    kind, ts = ev.get("event"), float(ev.get("ts", 0))
    if kind == "access":
        conn.execute(UPSERT_ACCESS, (ev["id"], ts))
    elif kind == "feedback":
        vote = VERDICTS[ev["verdict"]]
        conn.execute(UPSERT_FEEDBACK, (ev["id"], int(vote > 0), int(vote < 0), ts))
    elif kind == "decay":
        conn.execute(UPSERT_DECAY, (ev["id"], math.log(ev["factor"])))
    elif kind in ("pin", "unpin"):
        conn.execute(INSERT_PIN, (log, ev["id"], kind, ts, ev.get("ratio"), ev.get("age_hours")))


MMAP_BYTES = 1 << 30  # address space, not memory: only the pages read are resident


def connect(path: Path) -> sqlite3.Connection:
    """A connection shared by this process's threads, in WAL mode, waiting up to a minute for a lock."""
    conn = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 60000")
    _set_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    # reads through a memory map instead of a read() per page: a recall's rows (bodies spread over
    # the file) cost ~15% less at 100k notes. vaultmem never shrinks the file in place (a rebuild
    # writes a new one, rows are deleted without a vacuum), which is what a map could not survive.
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # fail now if the file is not a database
    return conn


def _set_wal(conn: sqlite3.Connection, patience: float = 60.0) -> None:
    """Switch to WAL. Two processes opening a new index at once race for this switch, and SQLite
    answers the loser "database is locked" at once (its busy handler does not cover it): try again."""
    import time

    deadline = time.monotonic() + patience
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite found its file damaged or not a database at all (not, say, busy or full)."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    """One transaction: committed on leaving, rolled back on any exception."""
    conn.execute(begin)
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # a damaged file may fail this too: the first error tells more
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def drop_lookups(conn: sqlite3.Connection) -> list[str]:
    """Drop the notes table's secondary indexes; returns the statements that create them again."""
    found = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'notes' "
                         "AND sql IS NOT NULL").fetchall()
    for name, _ in found:
        conn.execute(f'DROP INDEX "{name}"')
    return [sql for _, sql in found]


def dup_keys(records: list[Record]) -> list[tuple[int, str]]:
    """(key, path) rows of the near-duplicate sketch of each memory (not entities or episodes)."""
    return [(key, rec.path) for rec in records for key in rec.sketch]


def to_row(rec: Record) -> list:
    """The values of a Record's `notes` row, in NOTE_FIELDS order."""
    values = list(_NOTE_VALUES(rec))
    for i in _LIST_AT:
        values[i] = "\n".join(values[i])
    values[_SKETCH_AT] = " ".join(map(str, values[_SKETCH_AT]))
    return values


def row_dict(values: tuple, columns: tuple[str, ...] = NOTE_FIELDS) -> dict[str, Any]:
    """A row's values by column name, its lists and sketch decoded."""
    row = dict(zip(columns, values))
    for f in _LIST_FIELDS:
        if f in row:
            row[f] = row[f].split("\n") if row[f] else []
    if "sketch" in row:
        row["sketch"] = [int(k) for k in row["sketch"].split()]
    return row


def record_from_row(values: tuple) -> Record:
    """The Record a full `notes` row was written from."""
    return Record(**row_dict(values))


def known_under(conn: sqlite3.Connection, paths: list[str]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of the indexed notes at these vault paths or below them (one query per 900
    paths, one more per path that may be a folder)."""
    known: dict[str, tuple[int, int]] = {}
    for start in range(0, len(paths), 900):
        part = paths[start:start + 900]
        rows = conn.execute(f"SELECT path, mtime_ns, size FROM notes WHERE path IN ({','.join('?' * len(part))})", part)
        known.update((path, (mtime, size)) for path, mtime, size in rows)
    for rel in paths:
        if not rel.endswith(".md") or rel not in known:  # a folder, or one named like a note
            rows = conn.execute("SELECT path, mtime_ns, size FROM notes WHERE path > ? AND path < ?",
                                (rel + "/", rel + "/\U0010ffff"))
            known.update((path, (mtime, size)) for path, mtime, size in rows)
    return known


def note_count(conn: sqlite3.Connection) -> int:
    """How many notes the index holds, counted over the notes table itself: a damaged page of it
    is found here, as the full read of the stat cache finds it (and the sidecar heals)."""
    return conn.execute("SELECT count(mtime_ns) FROM notes NOT INDEXED").fetchone()[0]


def stat_cache(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every indexed note as it was last seen, by path."""
    return {path: (mtime, size) for path, mtime, size in conn.execute("SELECT path, mtime_ns, size FROM notes")}


def note_shas(conn: sqlite3.Connection, paths: list[str]) -> dict[str, str]:
    """Stored content hashes of these notes, by path: its keys are the paths that have a row
    (one query per 900 paths, not one per path)."""
    out: dict[str, str] = {}
    for start in range(0, len(paths), 900):
        part = paths[start:start + 900]
        marks = ",".join("?" * len(part))
        out.update(conn.execute(f"SELECT path, sha FROM notes WHERE path IN ({marks})", part))
    return out


__all__ = ["INSERT_KEY", "INSERT_NOTE", "INSERT_PIN", "NOTE_FIELDS", "SCHEMA", "UPSERT_ACCESS", "UPSERT_DECAY",
           "UPSERT_FEEDBACK", "connect", "drop_lookups", "dup_keys", "fold_event", "is_damage", "known_under",
           "note_count", "note_shas", "record_from_row", "row_dict", "stat_cache", "to_row", "transaction"]
