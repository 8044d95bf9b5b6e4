"""The working set (SPEC §5, issue 17 item 8): a hot LRU of the memories a long-lived process (the MCP
server, the Hermes provider) wrote or used lately, which answers first.

Promotion: a memory enters, or moves to the front, when this process writes it (remember: created,
merged or unchanged), recalls it (each hit a recall records as a use: reinforcement.record_access;
a peek with record_access=False promotes nothing) or reads it (get, markdown, resolve).
Demotion: the least recently promoted leaves when the set is full (`working_set.size`, 2,048); a
memory whose file is gone or changed leaves at the lookup that finds it so; one whose index row is
gone (deleted, moved out of the index) leaves at the next recall.
Answering first:
- an exact lookup by id or title (get, markdown, every `resolve`) is answered from the set without the
  index, after one stat of the file proves it is the one the kept row was read from (size, mtime);
- recall ranks with one more channel, `working` (1 for a candidate in the set), weighed by
  `working_set.weight` (0.1): like strength, a prior that lifts what this session used among close
  matches, never over a much better one. It only re-ranks candidates the query matched.
A one-off CLI process has no working set: its ranking has no `working` channel and is unchanged.
Thread-safe: one lock around the ordered map; the docs a recall boosts are read under it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads with the first recall: a server builds its working set before answering anything
    import numpy as np

__all__ = ["Entry", "WorkingSet"]


@dataclass
class Entry:
    """One hot memory: its id, where it is, and (once known) its index row, document and file stat."""

    id: str
    path: str
    title: str
    row: dict[str, Any] | None = None
    doc: int = -1
    stat: tuple[int, int] | None = None  # (mtime_ns, size) of the file the row was read from


class WorkingSet:
    """A thread-safe LRU of hot memories, most recent last in its map."""

    def __init__(self, capacity: int = 2048):
        if capacity < 1:
            raise ValueError("a working set holds at least one memory")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._titles: dict[str, str] = {}  # title (as the index matches it: exactly) -> id
        # kept as entries come and go, so a recall reads them without a walk over the set: the entries
        # with a document (id -> doc), those without one yet, and the first as arrays once asked for
        self._docs: dict[str, int] = {}
        self._unknown: dict[str, None] = {}
        self._known: tuple[list[str], np.ndarray] | None = None  # (ids, docs) of _docs; None: made again when asked
        self.evicted = 0  # memories that left by LRU (for stats)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, note_id: object) -> bool:
        with self._lock:
            return note_id in self._entries

    def ids(self) -> list[str]:
        """The hot memories' ids, most recent first."""
        with self._lock:
            return list(reversed(self._entries))

    def promote(self, entries: Iterable[Entry]) -> None:
        """Put memories at the front (new ones in, known ones moved, their row kept unless a new one
        is given); the least recent leave past the capacity."""
        with self._lock:
            for entry in entries:
                if not entry.id:
                    continue
                old = self._entries.pop(entry.id, None)
                if old is not None and entry.row is None and old.path == entry.path:
                    entry = old
                elif old is not None:
                    self._untitle(old)
                self._entries[entry.id] = entry
                self._titles[entry.title] = entry.id
                self._place(entry)
            while len(self._entries) > self.capacity:
                _, gone = self._entries.popitem(last=False)
                self._untitle(gone)
                self._forget(gone.id)
                self.evicted += 1

    def demote(self, ids: Iterable[str]) -> None:
        """Take memories out (gone, changed, or no longer answerable)."""
        with self._lock:
            for note_id in ids:
                gone = self._entries.pop(note_id, None)
                if gone is not None:
                    self._untitle(gone)
                    self._forget(note_id)

    def _place(self, entry: Entry) -> None:
        """File an entry under known (with its document) or unknown; the arrays go when the known change."""
        if entry.doc >= 0:
            self._unknown.pop(entry.id, None)
            if self._docs.get(entry.id) != entry.doc:
                self._docs[entry.id] = entry.doc
                self._known = None
        else:
            self._unknown[entry.id] = None
            if self._docs.pop(entry.id, None) is not None:
                self._known = None

    def _forget(self, note_id: str) -> None:
        self._unknown.pop(note_id, None)
        if self._docs.pop(note_id, None) is not None:
            self._known = None

    def lookup(self, ref: str, root: str) -> dict[str, Any] | None:
        """The index row of a hot memory named by id or title whose file is unchanged since its row was
        read, moved to the front; None (and the memory demoted if its file changed) otherwise."""
        with self._lock:
            note_id = ref if ref in self._entries else self._titles.get(ref)
            entry = self._entries.get(note_id) if note_id else None
            if entry is None or entry.row is None:
                return None
        try:
            st = os.stat(os.path.join(root, entry.path))
            same = (st.st_mtime_ns, st.st_size) == entry.stat
        except OSError:
            same = False
        if not same:
            self.demote([entry.id])
            return None
        self.promote([entry])
        return dict(entry.row)

    def remember_row(self, row: dict[str, Any]) -> None:
        """Promote a memory with the index row just read for it (what lookup answers from, while its
        file keeps the size and mtime the row records)."""
        self.promote([Entry(row["id"], row["path"], row["title"], dict(row), -1, (row["mtime_ns"], row["size"]))])

    def docs(self, live: np.ndarray, find: Callable[[list[str]], dict[str, int]]) -> np.ndarray:
        """The index documents of the hot memories that are live in a snapshot, sorted: those not known
        (or dead there: the note was indexed again) are looked up with `find` (ids -> doc), and a memory
        the index no longer has is demoted. The known documents are kept as an array between calls."""
        import numpy as np

        with self._lock:
            if self._known is None:
                self._known = (list(self._docs), np.fromiter(self._docs.values(), dtype=np.int64, count=len(self._docs)))
            ids, docs = self._known
            unknown = list(self._unknown)
        alive = np.zeros(len(docs), dtype=bool)
        inside = docs < len(live)
        alive[inside] = live[docs[inside]]
        stale = [*unknown, *(ids[i] for i in np.flatnonzero(~alive))]
        if not stale:
            return np.sort(docs)
        found = find(stale)
        with self._lock:
            for note_id in stale:
                entry = self._entries.get(note_id)
                if entry is not None:
                    entry.doc = found.get(note_id, -1)
                    self._place(entry)
        self.demote([i for i in stale if i not in found])
        fresh = np.array([d for i, d in found.items() if d < len(live) and live[d]], dtype=np.int64)
        return np.union1d(docs[alive], fresh)

    def _untitle(self, entry: Entry) -> None:
        key = entry.title
        if self._titles.get(key) == entry.id:
            del self._titles[key]
