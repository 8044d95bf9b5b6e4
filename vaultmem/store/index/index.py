"""The index sidecar in `.vaultmem/cache/`: rebuildable, incremental, safe for several processes.

Layout (see README "Index sidecar"):
- `index.sqlite` (WAL): one row per note (fields, body, stat cache, content hash), the delta of
  notes written since the last generation, tombstones, folded access counts, log offsets.
- `gen-N/`: one immutable generation of flat numpy arrays (sorted term blob, posting lists, ranking
  columns) that memory-map in about a millisecond. A new generation is written beside the old one
  and switched to in one SQLite transaction, so a reader never sees a torn index.
Small changes go to the delta (kept in SQLite, loaded in memory); past a threshold the delta is
merged into a new generation. A refresh re-parses only files whose (mtime, size) changed and
confirms by content hash; when its scan is exactly the last full refresh's (the same digest of every
path, mtime and size, and no write since), it does not read the stat cache at all. The device logs'
events are folded in by folding.py.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import folderstate
from .. import heartbeat
from ...text import terms as text
from ...errors import IndexDamaged, VaultmemError
from ..files import remove_stale_temps, remove_tree
from .records import Record, encode_terms, index_terms
from .scan import RefreshStats, ScanRoot, look_at, map_chunks, scan_digest, walk
from .feed import ORIGIN_DISK, ORIGIN_VAULTMEM, ChangeFeed, Dropped
from .folding import EventFolding
from .freshness import Freshness
from .sidecar import SCHEMA_VERSION, Sidecar, heals
from .sketches import SketchReader, open_sketches
from .sqlrows import (INSERT_KEY, INSERT_NOTE, NOTE_FIELDS, drop_lookups, dup_keys, known_under, note_count, note_shas,
                      record_from_row, row_dict, stat_cache, to_row, transaction)
from ..writelock import DEFAULT_TIMEOUT

if TYPE_CHECKING:  # numpy and the snapshot load only when postings are built or read: a write does neither
    from ...settings import NoteDefaults
    from .snapshot import PostingsBuilder, Snapshot
    from .vectors import Vectors

CHUNK = 512  # files per parse job
BULK_ROWS = 5000  # rows from which an upsert that outnumbers the indexed notes rebuilds the lookups
RACY_NS = 2_000_000_000  # coarse file-system clocks: an mtime this close to a check proves nothing
Progress = Callable[[int, int], None]

# CROSS JOIN: the access (or delta) table is the outer loop; SQLite otherwise walks every note's id
# (at 300k notes: 52 ms for the uses, 85 ms for an empty delta, on every snapshot load)
_ACCESS = "SELECT n.doc, a.uses, a.last FROM access a CROSS JOIN notes n ON n.id = a.id"


def delta_since(columns: tuple[str, ...]) -> str:
    """The delta's rows from a document on, with these columns of their notes, in document order."""
    return (f"SELECT d.doc, d.terms, {', '.join('n.' + c for c in columns)} "
            "FROM delta d CROSS JOIN notes n ON n.doc = d.doc WHERE d.doc >= ? ORDER BY d.doc")


_ACCESS_SINCE = ("SELECT n.doc, a.uses, a.last FROM notes n JOIN access a ON a.id = n.id "
                 "WHERE n.doc >= ?")

# read by every snapshot, so they must cost nothing without feedback or policies: CROSS JOIN makes the
# (small) feedback table the outer loop, never a scan of every note; a partial index holds the policies
_FEEDBACK = "SELECT n.doc, f.good, f.bad, f.scale FROM feedback f CROSS JOIN notes n ON n.id = f.id"
_POLICIES = "SELECT doc, policy FROM notes WHERE policy != ''"


class Index(Freshness, EventFolding, ChangeFeed, Sidecar):
    """The sidecar of one vault; one instance may be shared by the threads of a process."""

    def __init__(self, cache_dir: Path, vault_root: Path, roots: list[ScanRoot], devices_dir: Path,
                 defaults: NoteDefaults, max_chars: int, compact_min: int = 256, compact_ratio: float = 0.02,
                 lock_timeout: float = DEFAULT_TIMEOUT):
        self.vault_root = vault_root
        self.roots = roots
        self.devices_dir = devices_dir
        self.defaults = defaults
        self.max_chars = max_chars  # of a memory's body, what is indexed (write.max_text_chars)
        self.compact_min = compact_min
        self.compact_ratio = compact_ratio
        self._lock = threading.RLock()  # the loaded snapshot's
        self._snapshot: Snapshot | None = None
        self._sketches = SketchReader()  # the current generation's near-duplicate sketch files, memory-mapped
        self._snapshot_version = ""
        self._wrote_in: set[str] = set()  # vault folders of the notes indexed since the last wrote()
        self._vectors: Vectors | None = None
        self._lock_timeout = lock_timeout
        super().__init__(cache_dir, lock_timeout)  # last: a damaged sidecar is rebuilt with the fields above

    @property
    def vectors(self) -> Vectors:
        """The semantic channel's vectors beside the sidecar (store/index/vectors.py), opened on first use."""
        with self._lock:
            if self._vectors is None:
                from .vectors import Vectors

                self._vectors = Vectors(self.cache_dir / "vectors", self._lock_timeout)
            return self._vectors

    def _forget_loaded(self) -> None:
        with self._lock:
            self._snapshot, self._snapshot_version = None, ""
            self._sketches.clear()

    def _rebuild(self) -> None:
        self.refresh(force=True)

    # -- refresh -------------------------------------------------------------------------------
    def scan(self, temps: list[str] | None = None, folders: dict[str, int] | None = None
             ) -> dict[str, tuple[ScanRoot, int, int]]:
        """Every note file under the scan roots: relative path -> (root, mtime_ns, size); the temp
        files of atomic writes found are added to `temps`, each folder's mtime_ns to `folders`."""
        found: dict[str, tuple[ScanRoot, int, int]] = {}
        prefix = len(str(self.vault_root)) + 1
        for root in self.roots:
            for path, mtime, size in walk(str(root.path), temps, folders):
                found[path[prefix:] if os.sep == "/" else path[prefix:].replace(os.sep, "/")] = (root, mtime, size)
        return found

    @heals
    def refresh(self, progress: Progress | None = None, force: bool = False, wait: bool = True) -> RefreshStats:
        """Bring the index in line with the files: parse what changed, drop what is gone.

        With force, every note is parsed again and the index rebuilt from scratch. With wait False
        (a read), nothing is done while another writer holds the lock (stats.skipped), nor while a
        live watcher keeps the index current (stats.watched, see heartbeat.py): the read answers
        from what is indexed instead of waiting for, say, a whole batch.
        """
        if not wait and not force and heartbeat.live(self.cache_dir):
            return RefreshStats(watched=True)
        with self._write_lock(wait) as held:
            if not held:
                return RefreshStats(skipped=True)
            if self._writer.depth == 1:
                self._follow_rebuild()
            conn = self._conn()
            stats = RefreshStats()
            self._wrote_in.clear()  # the scan below stores every folder's time
            started = time.time_ns()
            racy = int(self._meta(conn, "checked_ns", "0")) - RACY_NS
            temps: list[str] = []
            folders: dict[str, int] = {}
            files = self.scan(temps, folders)
            remove_stale_temps(temps)  # a killed writer's: under the lock, no live writer owns one
            stats.scanned = len(files)
            scanned, newest = scan_digest(files)
            # the very files of the last full look, none changed just before it (RACY_NS): nothing to compare
            same_files = newest < racy and scanned == self._meta(conn, "scanned") and note_count(conn) == len(files)
            known = {} if same_files else stat_cache(conn)
            if force or (not same_files and not known and len(files) > self.compact_min):
                self._build_first(conn, files, stats, started, progress)
                self.fold_events()
                folderstate.store_scanned(self, folders)
                with transaction(conn):  # a full look, but no measure of what a sweep alone costs
                    self._set_meta(conn, swept_ns=started)
                return stats
            todo = [] if same_files else [rel for rel, (_, mtime, size) in files.items()
                                         if known.get(rel) != (mtime, size) or mtime >= racy]
            gone = list(known.keys() - files.keys())
            looked_s = (time.time_ns() - started) / 1e9  # what a sweep costs when nothing changed
            shas = note_shas(conn, [rel for rel in todo if rel in known])
            records, restamped = self._read_changed(todo, files, shas, progress)
            if len(records) + len(restamped) < len(todo):  # one vanished or could not be read: look again next time
                scanned = ""
            stats.read = len(todo)
            stats.parsed = len(records)
            stats.added = sum(1 for rec in records if rec.path not in known)
            stats.updated = len(records) - stats.added
            stats.removed = len(gone)
            big = len(records) > self._threshold(conn)
            self._apply(conn, records, gone, restamped, to_delta=not big, checked_ns=started, replacing=known,
                        scanned=scanned)
            stats.compacted = self._maybe_compact(conn, progress, {r.path: r.terms for r in records} if big else None)
            self.fold_events()
            folderstate.store_scanned(self, folders)
            with transaction(conn):
                self._set_meta(conn, swept_ns=started, sweep_s=f"{looked_s:.6f}")
            return stats

    @heals
    def refresh_paths(self, paths: Iterable[str], folders: Iterable[str] = (), wait: bool = True) -> RefreshStats:
        """Bring the index in line with these vault paths only (the watcher's batch): a file is read
        again (its bytes decide), a folder stands for every note below it on disk and in the index,
        a path that is gone drops its rows; paths outside the scan roots are left alone.

        folders (absolute, as a scan names them) are those the changes touched: their times, taken
        before any file is read, are kept for catch_up (folderstate.store_watched), so a writer that
        comes after the watcher does not rescan what it has seen. An index never built is built.
        With wait False (a read), nothing is done while another writer holds the lock (stats.skipped).
        """
        with self._write_lock(wait) as held:
            if not held:
                return RefreshStats(skipped=True)
            if self._writer.depth == 1:
                self._follow_rebuild()
            conn = self._conn()
            if not self._meta(conn, "generation"):
                return self.refresh()
            times = folderstate.watched_times(folders)
            checked = int(self._meta(conn, "checked_ns", "0"))  # when the last full look was: not now
            paths = list(paths)
            files, named = look_at(str(self.vault_root), self.roots, paths)
            known = known_under(conn, paths)
            todo = [rel for rel, (_, mtime, size) in files.items()
                    if rel in named or known.get(rel) != (mtime, size) or mtime >= checked - RACY_NS]
            gone = [rel for rel in known if rel not in files]
            records, restamped = self._read_changed(todo, files, note_shas(conn, [r for r in todo if r in known]), None)
            stats = RefreshStats(scanned=len(files), read=len(todo), parsed=len(records), removed=len(gone))
            stats.added = sum(1 for rec in records if rec.path not in known)
            stats.updated = len(records) - stats.added
            big = len(records) > self._threshold(conn)
            self._apply(conn, records, gone, restamped, to_delta=not big, checked_ns=checked, replacing=known)
            stats.compacted = self._maybe_compact(conn, None, {r.path: r.terms for r in records} if big else None)
            folderstate.store_watched(self, times)
            return stats

    def names_in(self, folder: str) -> set[str]:
        """File names of the indexed notes directly in a vault-relative folder."""
        prefix = f"{folder}/" if folder else ""
        rows = self._conn().execute("SELECT path FROM notes WHERE path >= ? AND path < ?", (prefix, prefix + "\U0010ffff"))
        return {path[len(prefix):] for (path,) in rows if "/" not in path[len(prefix):]}

    def get_meta(self, key: str) -> str:
        """A value of the index's meta table ('' when unset)."""
        return self._meta(self._conn(), key)

    def set_meta(self, key: str, value: str) -> None:
        """Store a value in the index's meta table."""
        with self._write_lock(), transaction(self._conn()):
            self._set_meta(self._conn(), **{key: value})

    def _build_first(self, conn: sqlite3.Connection, files: dict, stats: RefreshStats, started: int,
                     progress: Progress | None) -> None:
        """Index every note from scratch: parse in workers, in path order, while the rows are stored
        and the postings collected as each chunk arrives, so parsing, storing and postings overlap.

        The old rows go in the same transaction, with the generation pointer: a reader that comes
        meanwhile finds no generation and waits for this build instead of mixing old and new.
        """
        from .snapshot import COLUMNS, PostingsBuilder

        items = [(rel, root.kind, root.folder, mtime, size, "") for rel, (root, mtime, size) in sorted(files.items())]
        chunks = [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]
        postings = PostingsBuilder()
        columns: dict[str, list] = {name: [] for name in COLUMNS}
        with transaction(conn):
            for table in ("notes", "delta", "tomb", "dupkey"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM meta WHERE key IN ('generation', 'n_base')")
            self._restart_feed(conn)
            sketches: list[list[int]] = []
            for recs, _ in map_chunks(str(self.vault_root), chunks, self.defaults, self.max_chars):
                first = postings.n_docs
                for rec in recs:
                    postings.add(rec.terms)
                    sketches.append(rec.sketch)
                    for name in COLUMNS:
                        columns[name].append(getattr(rec, name))
                conn.executemany(INSERT_NOTE, [(first + i, *to_row(rec)) for i, rec in enumerate(recs)])
                if progress:
                    progress(postings.n_docs, len(items))
            # until the generation below exists, the next refresh must rebuild it from these rows
            self._set_meta(conn, next_doc=postings.n_docs, checked_ns=started, needs_compaction=1, scanned="")
        self._switch(conn, postings, columns, list(range(postings.n_docs)), sketches)
        stats.read = len(items)
        stats.parsed = stats.added = postings.n_docs
        stats.compacted = True

    def _read_changed(self, todo: list[str], files: dict, shas: dict[str, str],
                      progress: Progress | None) -> tuple[list[Record], list[tuple[int, int, str]]]:
        """Records of the files whose bytes changed; the others only get their stat cache moved.

        Large refreshes parse in worker processes, one per core.
        """
        items = [(rel, files[rel][0].kind, files[rel][0].folder, files[rel][1], files[rel][2], shas.get(rel, ""))
                 for rel in todo]
        chunks = [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]
        root = str(self.vault_root)
        records: list[Record] = []
        restamped: list[tuple[int, int, str]] = []
        done = 0
        for recs, stamps in map_chunks(root, chunks, self.defaults, self.max_chars):
            records.extend(recs)
            restamped.extend(stamps)
            done += len(recs) + len(stamps)
            if progress:
                progress(done, len(items))
        return records, restamped

    @heals
    def upsert(self, records: list[Record], gone: Iterable[str] = (), restamped: Iterable[tuple[int, int, str]] = ()
               ) -> None:
        """Store notes vaultmem itself just wrote (no rescan needed); drop the rows of `gone` paths and
        move the stat cache of `restamped` (mtime_ns, size, path) ones."""
        with self._write_lock():
            self._wrote_in.update(rel.rpartition("/")[0] for rel in
                                  (*(r.path for r in records), *gone, *(path for _, _, path in restamped)))
            conn = self._conn()
            big = len(records) > self._threshold(conn)
            self._apply(conn, records, list(gone), list(restamped), to_delta=not big, checked_ns=time.time_ns(),
                        origin=ORIGIN_VAULTMEM)
            self._maybe_compact(conn, None, {r.path: r.terms for r in records} if big else None)

    def _apply(self, conn: sqlite3.Connection, records: list[Record], gone: list[str],
               restamped: list[tuple[int, int, str]], to_delta: bool = True, checked_ns: int = 0,
               replacing: set[str] | dict | None = None, scanned: str = "", origin: str = ORIGIN_DISK) -> None:
        """Write changed rows; with to_delta False their terms wait for the compaction that follows
        (flagged in the same transaction, so a crash before it still ends in a compaction).

        checked_ns is when the files were looked at: a file modified within RACY_NS of it may have
        changed again in the same mtime tick, so the next refresh re-hashes it (as git does).
        replacing holds the paths already in the index (None: look each record up). scanned is the
        scan_digest of a full refresh whose scan the stat cache now holds exactly; every other
        write forgets it, so only a scan of unchanged files matches it. origin: who made the
        change, for the change feed (feed.py).
        """
        with transaction(conn):
            if replacing is None:  # in the transaction: another writer may have indexed one meanwhile
                replacing = set(note_shas(conn, [r.path for r in records]))
            self._set_meta(conn, checked_ns=checked_ns, scanned=scanned)
            if not (records or gone or restamped):
                return
            next_doc = int(self._meta(conn, "next_doc", "0"))
            dropped = {rel: self._drop(conn, rel) for rel in gone}
            replaced = {rec.path: self._drop(conn, rec.path) for rec in records if rec.path in replacing}
            conn.executemany("UPDATE notes SET mtime_ns = ?, size = ? WHERE path = ?", restamped)
            records = sorted(records, key=lambda rec: rec.path)  # the order a generation keeps
            docs = range(next_doc, next_doc + len(records))
            # more new rows than old ones (a first import): building the lookups afresh after the
            # inserts is ~40% cheaper than updating them row by row
            rebuilt = drop_lookups(conn) if len(records) >= max(BULK_ROWS, next_doc) else []
            conn.executemany(INSERT_NOTE, [(doc, *to_row(rec)) for doc, rec in zip(docs, records)])
            for sql in rebuilt:
                conn.execute(sql)
            if to_delta:  # else the generation about to be written holds their sketch keys
                conn.executemany(INSERT_KEY, dup_keys(records))
                conn.executemany("INSERT INTO delta VALUES (?, ?)",
                                 [(doc, encode_terms(rec.terms)) for doc, rec in zip(docs, records)])
            self._set_meta(conn, next_doc=next_doc + len(records), version=int(self._meta(conn, "version", "0")) + 1)
            self._log_changes(conn, origin, {p: old for p, old in dropped.items() if old}, records,
                              {p: old for p, old in replaced.items() if old})
            if not to_delta:
                self._set_meta(conn, needs_compaction=1)

    def _drop(self, conn: sqlite3.Connection, rel: str) -> Dropped | None:
        """Remove a path's row; the (id, kind, namespace) it held, or None when it had none."""
        row = conn.execute("SELECT doc, id, kind, namespace FROM notes WHERE path = ?", (rel,)).fetchone()
        if row is None:
            return None
        doc = row[:1]
        conn.execute("DELETE FROM notes WHERE doc = ?", doc)
        conn.execute("DELETE FROM dupkey WHERE path = ?", (rel,))
        if conn.execute("DELETE FROM delta WHERE doc = ?", doc).rowcount == 0:
            conn.execute("INSERT OR IGNORE INTO tomb VALUES (?)", doc)
        return row[1:]

    def _threshold(self, conn: sqlite3.Connection) -> float:
        return max(self.compact_min, self.compact_ratio * int(self._meta(conn, "n_base", "0")))

    def _maybe_compact(self, conn: sqlite3.Connection, progress: Progress | None,
                       fresh: dict[str, Any] | None = None) -> bool:
        pending = conn.execute("SELECT (SELECT count(*) FROM delta) + (SELECT count(*) FROM tomb)").fetchone()[0]
        if (self._meta(conn, "generation") and self._meta(conn, "needs_compaction") != "1"
                and pending <= self._threshold(conn)):
            return False
        self._compact(conn, progress, fresh or {})
        return True

    @heals
    def compact(self, progress: Progress | None = None) -> None:
        """Merge the delta into a new generation now."""
        with self._write_lock():
            self._compact(self._conn(), progress, {})

    def _compact(self, conn: sqlite3.Connection, progress: Progress | None, fresh: dict[str, Any]) -> None:
        """Write a new generation of every live note, renumbered densely in document order.

        Notes unchanged since the current generation keep their postings (carried over in numpy,
        never re-read); the others' terms come from `fresh` (just parsed), else the delta, else
        their stored text re-tokenised.
        """
        import numpy as np

        from .snapshot import COLUMNS, PostingsBuilder

        rows = conn.execute(f"SELECT doc, path, {', '.join(COLUMNS)}, sketch FROM notes ORDER BY doc").fetchall()
        generation = self._meta(conn, "generation")
        n_base = int(self._meta(conn, "n_base", "0")) if generation else 0
        base = self.cache_dir / f"gen-{generation}"
        if n_base and not base.is_dir():
            n_base = 0  # the generation's files are gone: rebuild every note's terms
        carried = [row[0] for row in rows if row[0] < n_base]
        rest = rows[len(carried):]
        delta_terms = dict(conn.execute("SELECT doc, terms FROM delta"))
        missing = [row[0] for row in rest if row[1] not in fresh and row[0] not in delta_terms]
        stored = self._stored_records(conn, missing)
        postings = PostingsBuilder()
        if carried:
            postings.carry(base, np.asarray(carried, dtype=np.int64))
        for i, row in enumerate(rest):
            terms = fresh.get(row[1])
            if terms is None:
                cached = delta_terms.get(row[0])
                terms = cached if cached is not None else index_terms(stored[row[0]])
            postings.add(terms)
            if progress and i % 4096 == 0:
                progress(len(carried) + i, len(rows))
        columns = {name: [row[2 + i] for row in rows] for i, name in enumerate(COLUMNS)}
        self._switch(conn, postings, columns, [row[0] for row in rows], [row[-1] for row in rows])

    def _switch(self, conn: sqlite3.Connection, postings: PostingsBuilder, columns: dict[str, list],
                docs: list[int], sketches: list) -> None:
        """Write a new generation and make it current; `docs` are the rows' numbers, which become 0..n-1;
        sketches their sketch keys (lists, or the stored text) in the same order."""
        from .snapshot import write_generation

        generation = int(self._meta(conn, "generation", "0") or 0) + 1
        write_generation(self.cache_dir / f"gen-{generation}", postings, columns, sketches)
        with transaction(conn):
            if any(old != new for new, old in enumerate(docs)):  # a first index is already in order
                conn.execute("UPDATE notes SET doc = -1 - doc")
                conn.executemany("UPDATE notes SET doc = ? WHERE doc = ?",
                                 [(new, -1 - old) for new, old in enumerate(docs)])
            conn.execute("DELETE FROM delta")
            conn.execute("DELETE FROM tomb")
            conn.execute("DELETE FROM dupkey")
            self._set_meta(conn, generation=generation, n_base=len(docs), next_doc=len(docs), needs_compaction=0,
                           version=int(self._meta(conn, "version", "0")) + 1)
        self._drop_old_generations(generation)

    def _stored_records(self, conn: sqlite3.Connection, docs: list[int]) -> dict[int, Record]:
        """Records rebuilt from the stored rows of these documents (to re-tokenise them)."""
        out: dict[int, Record] = {}
        for start in range(0, len(docs), 900):
            part = docs[start:start + 900]
            marks = ",".join("?" * len(part))
            for row in conn.execute(f"SELECT doc, {', '.join(NOTE_FIELDS)} FROM notes WHERE doc IN ({marks})", part):
                out[row[0]] = record_from_row(row[1:])
        return out

    def _drop_old_generations(self, current: int) -> None:
        # Keep the previous generation: a reader that read the old pointer may still be opening it.
        for gen in self.cache_dir.glob("gen-*"):
            suffix = gen.name[4:]
            if suffix.isdigit() and int(suffix) < current - 1:
                remove_tree(gen)

    # -- reading -------------------------------------------------------------------------------
    @heals
    def snapshot(self) -> Snapshot:
        """The current index as immutable arrays; reloaded only when another write happened.

        A sidecar that was never built (a fresh clone, a deleted cache) is built first.
        """
        self._follow_rebuild()
        if not self._meta(self._conn(), "generation"):
            self.refresh()
        conn = self._conn()
        found = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('version', 'generation')").fetchall())
        version = found.get("version", "0") + ":" + found.get("generation", "0")
        with self._lock:
            if self._snapshot is None or version != self._snapshot_version:
                self._snapshot = self._load(conn, self._snapshot)
                self._snapshot_version = version
            return self._snapshot

    def _load(self, conn: sqlite3.Connection, prev: Snapshot | None = None) -> Snapshot:
        """Read the index; from `prev` (the snapshot loaded before) only what changed since, while
        its generation is still the current one."""
        import numpy as np

        from .snapshot import COLUMNS, advance_snapshot, load_snapshot

        rows_since = delta_since(COLUMNS)
        missing_in = None
        for _ in range(3):
            with transaction(conn, "BEGIN"):
                generation = self._meta(conn, "generation", "")
                n_base = int(self._meta(conn, "n_base", "0"))
                next_doc = int(self._meta(conn, "next_doc", "0"))
                folder = self.cache_dir / f"gen-{generation}" if generation else None
                grows = prev is not None and folder is not None and self._same_generation(prev, folder, n_base, next_doc)
                tombs = np.fromiter((r[0] for r in conn.execute("SELECT doc FROM tomb")), dtype=np.int64)
                in_delta = {doc for (doc,) in conn.execute("SELECT doc FROM delta")} if grows else set()
                delta = conn.execute(rows_since, (prev.size if grows else 0,)).fetchall()
                access_version = self._meta(conn, "access_version", "0")
                # the uses of every note cost a scan of the notes (~10 ms at 15k); when no access event
                # was folded since prev, only the documents written since can have gained theirs
                new_uses = grows and access_version == prev.access_version
                access = conn.execute(_ACCESS_SINCE if new_uses else _ACCESS, (prev.size,) if new_uses else ()).fetchall()
                entities = conn.execute("SELECT title, aliases FROM notes WHERE kind = 'entity'").fetchall()
                own = {"feedback": conn.execute(_FEEDBACK).fetchall(), "policies": conn.execute(_POLICIES).fetchall()}
            if grows:
                return advance_snapshot(prev, next_doc, tombs, in_delta, delta, access, entities, access_version,
                                        all_uses=not new_uses, **own)
            try:
                return load_snapshot(folder, n_base, next_doc, tombs, delta, access, entities, int(generation or 0), prev,
                                     access_version, **own)
            except FileNotFoundError as exc:
                if generation == missing_in:
                    raise IndexDamaged(f"gen-{generation}: {os.path.basename(exc.filename)} is missing") from None
                missing_in = generation  # a compaction may have switched generations while we read: read again
        raise VaultmemError("the index kept changing while it was being read; try again")

    @staticmethod
    def _same_generation(prev: Snapshot, folder: Path, n_base: int, next_doc: int) -> bool:
        """Whether prev was read from this generation (same folder, not one a rebuild wrote anew)."""
        from .snapshot import generation_stamp

        try:
            stamp = generation_stamp(folder)
        except FileNotFoundError:
            return False
        return (prev.generation, prev.stamp, prev.n_base) == (int(folder.name[4:]), stamp, n_base) and next_doc >= prev.size

    @heals
    def check(self) -> list[str]:
        """Look the sidecar over (SQLite's quick check, the current generation's files), rebuilding
        it if damaged; returns the damage this object found and repaired so far (for doctor)."""
        self._quick_check()
        snap = self._load(self._conn())
        if snap.generation:
            open_sketches(self.cache_dir / f"gen-{snap.generation}")
        return list(self.repairs)

    @heals
    def rows(self, docs: Iterable[int], generation: int, columns: tuple[str, ...] = NOTE_FIELDS
             ) -> dict[int, dict[str, Any]] | None:
        """Rows of these documents (the named columns of NOTE_FIELDS, every one by default), or None
        when the index moved to another generation."""
        docs = [int(d) for d in docs]
        conn = self._conn()
        with transaction(conn, "BEGIN"):
            if int(self._meta(conn, "generation", "0") or 0) != generation:
                return None
            marks = ",".join("?" * len(docs))
            found = conn.execute(f"SELECT doc, {', '.join(columns)} FROM notes WHERE doc IN ({marks})", docs)
            return {row[0]: row_dict(row[1:], columns) for row in found}

    @heals
    def select_notes(self, where: str = "1", params: tuple = (), order: str = "path",
                     columns: tuple[str, ...] = NOTE_FIELDS) -> list[dict[str, Any]]:
        """Rows of the notes table matching a SQL condition (all columns, or the ones named)."""
        conn = self._conn()
        sql = f"SELECT {', '.join(columns)} FROM notes WHERE {where} ORDER BY {order}"
        return [row_dict(r, columns) for r in conn.execute(sql, params)]

    @heals
    def entity_state(self) -> tuple:
        """Changes whenever an entity note is added, removed or edited (a cache key)."""
        return tuple(self._conn().execute(
            "SELECT count(*), max(mtime_ns), sum(size), max(doc) FROM notes WHERE kind = 'entity'").fetchone())

    @heals
    def path_taken(self, rel: str) -> bool:
        """Whether a note is indexed at this vault path in any letter case (Obsidian on macOS and
        Windows sees `Note.md` and `note.md` as one file)."""
        return self._conn().execute("SELECT 1 FROM notes WHERE path = ? COLLATE NOCASE LIMIT 1",
                                    (rel,)).fetchone() is not None

    @heals
    def near_duplicate_paths(self, keys: list[int]) -> list[str]:
        """Paths of memory notes sharing a sketch key with a text (dedup.sketch_keys), oldest first."""
        if not keys:
            return []
        conn = self._conn()
        docs = self._sketch_docs(conn, keys)
        marks = ", ".join("?" * len(keys))
        in_docs = f"doc IN ({', '.join(map(str, docs))}) OR " if docs else ""
        rows = conn.execute(f"SELECT path FROM notes WHERE {in_docs}path IN (SELECT path FROM dupkey WHERE key IN "
                            f"({marks})) ORDER BY ts, path", keys)
        return [r[0] for r in rows]

    def _sketch_docs(self, conn: sqlite3.Connection, keys: list[int]) -> list[int]:
        """Documents of the current generation with any of these sketch keys (sketches.py)."""
        return self._sketches.docs(self.cache_dir, self._meta(conn, "generation"), keys)

    @heals
    def count(self, where: str = "1", params: tuple = ()) -> int:
        """How many notes match a SQL condition."""
        return self._conn().execute(f"SELECT count(*) FROM notes WHERE {where}", params).fetchone()[0]

    @heals
    def exists(self, where: str = "1", params: tuple = ()) -> bool:
        """Whether any note matches a SQL condition (stops at the first: a count reads them all)."""
        return self._conn().execute(f"SELECT 1 FROM notes WHERE {where} LIMIT 1", params).fetchone() is not None

    @heals
    def info(self) -> dict[str, Any]:
        """Generation, delta size and files of the sidecar (for stats and doctor)."""
        conn = self._conn()
        size = sum(p.stat().st_size for p in self.cache_dir.rglob("*") if p.is_file())
        return {
            "generation": int(self._meta(conn, "generation", "0") or 0),
            "notes_in_generation": int(self._meta(conn, "n_base", "0")),
            "delta": conn.execute("SELECT count(*) FROM delta").fetchone()[0],
            "tombstones": conn.execute("SELECT count(*) FROM tomb").fetchone()[0],
            "schema_version": SCHEMA_VERSION,
            "tokenizer_version": text.TOKENIZER_VERSION,
            "sidecar_bytes": size,
        }


__all__ = ["BULK_ROWS", "CHUNK", "Index", "Progress", "RACY_NS", "delta_since"]
