"""The index's files as a whole: the SQLite connection of each thread, the schema, the writers'
lock, and healing. The sidecar is a cache, so a damaged one (a disk error, a crash of the file
system, a sync tool that copied half a file) is rebuilt from the notes, never a dead end.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ...text import terms as text
from ...errors import IndexDamaged, VaultmemError
from ..files import remove_tree
from .sqlrows import SCHEMA, connect, is_damage, transaction
from ..writelock import WriteLock, notice

SCHEMA_VERSION = 9  # 6: near-duplicate keys from seeded hashes (dedup.sketch_keys); 7: per-note policy, feedback, pins;
# 8: decay events folded (feedback.scale); 9: the change feed (changes, feed_epoch)
_DB = "index.sqlite"

Method = TypeVar("Method", bound=Callable[..., Any])


def heals(method: Method) -> Method:
    """An operation of the sidecar that, finding it damaged, rebuilds it and runs once more.

    Only the outermost such call of a thread heals: an inner one's caller still holds the old connection.
    """
    @functools.wraps(method)
    def run(self: Sidecar, *args: Any, **kwargs: Any) -> Any:
        local = self._local
        if getattr(local, "running", False):
            return method(self, *args, **kwargs)
        local.running = True
        try:
            try:
                return method(self, *args, **kwargs)
            except (sqlite3.DatabaseError, IndexDamaged) as exc:
                if not (isinstance(exc, IndexDamaged) or is_damage(exc)):
                    raise
                self._heal(exc)
            return method(self, *args, **kwargs)
        finally:
            local.running = False
    return run  # type: ignore[return-value]


def usable_cache(cache_dir: Path, vault_root: Path) -> Path:
    """The vault's cache folder, or, when it cannot be written (a read-only vault: a synced snapshot,
    a CD, a shared folder), this machine's cache for that vault, where the index is built from the
    notes instead: $VAULTMEM_HOME/cache/<hash of the vault's path>, else $XDG_CACHE_HOME/vaultmem/…,
    else ~/.cache/vaultmem/…."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        os.close(os.open(cache_dir / "write.lock", os.O_RDWR | os.O_CREAT, 0o644))
        return cache_dir
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR):  # a sync tool's mix-up, a stray copy
            raise _in_the_way(cache_dir, exc) from None
        if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
    home = os.environ.get("VAULTMEM_HOME")
    base = (Path(home) / "cache" if home else
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vaultmem")
    fallback = base / hashlib.sha256(os.fsencode(vault_root)).hexdigest()[:16]
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def _in_the_way(cache_dir: Path, exc: OSError) -> VaultmemError:
    """The error for a file where the cache folder must be (EEXIST, ENOTDIR), or a folder where its lock file must be."""
    folder = exc.errno == errno.EISDIR
    where = Path(exc.filename) if folder and exc.filename else cache_dir
    return VaultmemError(f"{where} is a {'folder' if folder else 'file'}, where vaultmem keeps its index "
                         f"{'lock file' if folder else 'folder'}: move it away and run the command again (the index "
                         "is rebuilt from the notes)")


class Sidecar:
    """The files under `.vaultmem/cache/`; Index adds what they hold. Shared by a process's threads."""

    def __init__(self, cache_dir: Path, lock_timeout: float):
        self.cache_dir = cache_dir
        self.repairs: list[str] = []  # damage this object found and rebuilt (for doctor)
        self._local = threading.local()
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._writer = WriteLock(cache_dir / "write.lock", lock_timeout)
        self.released: Callable[[], None] | None = None  # called once the outermost writing() let go (the Store's hooks)
        heals(Sidecar._ensure_schema)(self)

    # -- connections -------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.cache_dir / _DB)
            # which file it is: a rebuild by another process puts a new one in its place
            st = os.stat(self.cache_dir / _DB)
            self._local.conn, self._local.file = conn, (st.st_dev, st.st_ino)
        return conn

    def close(self) -> None:
        """Close this thread's database connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _replaced(self) -> bool:
        """Whether another process rebuilt the sidecar since this thread connected (the old file,
        unlinked, stays readable through the open connection, and its inode stays taken)."""
        if getattr(self._local, "conn", None) is None:
            return False
        try:
            st = os.stat(self.cache_dir / _DB)
        except FileNotFoundError:
            return True
        return (st.st_dev, st.st_ino) != self._local.file

    def _follow_rebuild(self) -> None:
        """Leave a sidecar another process replaced, for the new one (at the start of an operation)."""
        if self._replaced():
            self.close()
            self._forget_loaded()
            self._ensure_schema()

    def _forget_loaded(self) -> None:
        """Drop what was read from the files (Index: the loaded snapshot)."""

    # -- schema ----------------------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        """Create the tables; drop them all first when the schema or tokenizer version changed."""
        wanted = {"schema_version": str(SCHEMA_VERSION), "tokenizer_version": str(text.TOKENIZER_VERSION)}
        if self._versions(self._conn()) == wanted:  # the common case needs no lock: a reader never waits
            return
        with self._write_lock():
            conn = self._conn()
            if self._versions(conn) != wanted:
                self._wipe(conn)
            conn.executescript(SCHEMA)
            with transaction(conn):
                self._set_meta(conn, schema_version=SCHEMA_VERSION, tokenizer_version=text.TOKENIZER_VERSION)
                # the change feed's name (feed.py): kept while these tables are, new with new ones
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('feed_epoch', ?)", (os.urandom(6).hex(),))

    @staticmethod
    def _versions(conn: sqlite3.Connection) -> dict[str, str]:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            return {}
        return dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('schema_version', 'tokenizer_version')"))

    def scrub(self) -> None:
        """Drop every table, generation and free page of the sidecar, the change feed with them (a new feed:
        a follower's cursor is a reset); the next refresh indexes the notes anew. For `vaultmem encrypt` of a
        note that was plain: no trace of its words stays in the index's files."""
        with self._write_lock():
            conn = self._conn()
            self._wipe(conn)
            conn.execute("VACUUM")  # the freed pages, which still held the old rows, rewritten away
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._forget_loaded()
            self._ensure_schema()

    def _wipe(self, conn: sqlite3.Connection) -> None:
        """Forget everything (new sidecar, or schema/tokenizer changed): a refresh rebuilds it from the notes."""
        with transaction(conn):
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                conn.execute(f'DROP TABLE "{table}"')
        for gen in self.cache_dir.glob("gen-*"):
            remove_tree(gen)

    def _meta(self, conn: sqlite3.Connection, key: str, default: str = "") -> str:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def _set_meta(self, conn: sqlite3.Connection, **values: Any) -> None:
        for key, value in values.items():
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))

    # -- the writers' lock -----------------------------------------------------------------------
    @contextmanager
    def _write_lock(self, wait: bool = True) -> Iterator[bool]:
        """One writer at a time across processes and threads (readers never wait).

        Yields whether it is held: with wait False, False at once when another writer has it.
        """
        if not self._writer.acquire(wait):
            yield False
            return
        try:
            yield True
        finally:
            self._writer.release()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The writers' lock, for a whole write pipeline run: two processes remembering the same
        thing at once must not both find it new."""
        outermost = False
        try:
            with self._write_lock():
                outermost = self._writer.depth == 1
                if outermost:
                    self._follow_rebuild()
                yield
        finally:  # what was written before a failure is on disk too: its hooks run
            if outermost and self.released is not None:
                self.released()

    @property
    def writer_busy(self) -> bool:
        """Whether a thread of this process holds the writers' lock now."""
        return self._writer.depth > 0

    # -- healing ---------------------------------------------------------------------------------
    def _heal(self, damage: Exception) -> None:
        """Rebuild a damaged sidecar from the notes, under the lock; when another process did it
        meanwhile, just use the new one."""
        with self._write_lock():
            if self._replaced():
                self._follow_rebuild()
                return
            notice(f"index damaged ({damage}): rebuilding from the notes")
            self.repairs.append(str(damage))
            self.close()
            self._forget_loaded()
            for stale in self.cache_dir.glob(_DB + "*"):
                stale.unlink()
            for gen in self.cache_dir.glob("gen-*"):
                remove_tree(gen)
            self._ensure_schema()
            self._rebuild()

    def _rebuild(self) -> None:
        """Index every note again (Index.refresh(force=True))."""
        raise NotImplementedError

    def _quick_check(self) -> None:
        """SQLite's own check of its file; raises IndexDamaged with its first finding."""
        found = self._conn().execute("PRAGMA quick_check").fetchone()[0]
        if found != "ok":
            raise IndexDamaged(f"{_DB}: {found}")


__all__ = ["SCHEMA_VERSION", "Sidecar", "heals", "usable_cache"]
