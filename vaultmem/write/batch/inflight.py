"""What a write holds between its decisions and the disk, and `finish`, which puts it there.

One object for a write's in-flight state, a single memory or a batch of a hundred thousand: the notes
waiting to be written (PendingNotes) and the file names reserved for them (FreeNames), the vault
paths changed in order, the day-note lines and the audit events owed, and a batch's worker processes. The Writer (write/pipeline.py) decides; this
object persists. `finish` runs as named steps:

1. `_write_notes`: the waiting notes go to disk (a worker creates them in a large batch while the
   others index them early and plan the day notes);
2. `_write_day_notes`: the day notes' lines, as planned, or appended again if a note took a name
   other than its lines were planned with;
3. `_start_flush`: a batch fsyncs once for all its files, in a thread while the index is updated;
4. `_index`: early rows fixed (a note renamed meanwhile, a file system's own times), the audit
   events appended, every other changed note indexed once.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ...store.files import sync_files
from ...store.index.records import Record
from ..episodes import DayPlan, EpisodeLine, append_episodes, index_planned, plan_days, write_planned
from .names import FreeNames
from .pending import PendingNotes

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from ...store.store import Store

__all__ = ["PARSE_CHUNK", "InFlight"]

PARSE_CHUNK = 16  # day notes (and notes from disk) per worker job at the end of a batch


class InFlight:
    """A write's state on its way to disk: one per Writer (see the module docstring)."""

    def __init__(self, vault: Store, durable: bool):
        self.vault = vault
        self.durable = durable
        self.notes = PendingNotes(vault, durable)
        self.names = FreeNames(vault, durable)  # the file names reserved for the new notes
        self.changed: dict[str, None] = {}  # vault paths written, in order
        self.episodes: list[EpisodeLine] = []
        self.audit: list[dict[str, Any]] = []
        self.pool: Executor | None = None  # a large batch's worker processes (drafts.worker_pool)
        # filled by finish's steps
        self._early: dict[str, tuple[int, int]] = {}  # new notes indexed while a worker made them: path -> stat
        self._plans: list[DayPlan] = []  # the day notes' next text, worked out meanwhile
        self._day_jobs: list[Future] = []  # their records, built by the workers not creating files
        self._days: dict[str, Record] = {}

    def changes(self, rel: str) -> None:
        """Note that this write changes the note at `rel` (indexed by finish, in order)."""
        self.changed[rel] = None

    def finish(self) -> None:
        """Write the waiting notes and the day notes, flush a batch, update the index (once) and
        append the audit events."""
        self._write_notes()
        renamed = self.renamed_titles()
        self._write_day_notes(renamed)
        syncing = self._start_flush()
        try:
            self._index(renamed)
        finally:
            if syncing is not None:
                syncing.join()

    # -- the steps ------------------------------------------------------------------------------
    def _write_notes(self) -> None:
        def index_early(records: list[Record]) -> None:
            if self.episodes and self.pool is not None:  # a worker creates the notes: the others index these
                self._plans.extend(plan_days(self.vault, self.episodes, strict=False))
                self._day_jobs.extend(index_planned(self.vault, self.pool, self._plans, PARSE_CHUNK))
            self._early.update((rec.path, (rec.mtime_ns, rec.size)) for rec in records)
            self.vault.index.upsert(records)

        self.notes.flush(self.pool, index_early)

    def _write_day_notes(self, renamed: dict[str, str]) -> None:
        if self._day_jobs and not renamed:
            for rel in write_planned(self.vault, self._plans, self._day_jobs, self._days, durable=self.durable):
                self.changes(rel)
        elif self.episodes:  # (or a note took another name than its lines were planned with)
            for job in self._day_jobs:
                job.cancel()
            lines = [EpisodeLine(e.when, renamed.get(e.title, e.title), e.source) for e in self.episodes]
            for rel in append_episodes(self.vault, lines, durable=self.durable, records=self._days):
                self.changes(rel)

    def _start_flush(self) -> threading.Thread | None:
        """One flush for a whole batch (notes and day notes) instead of one fsync per file; the disk
        works while this thread indexes (os.sync lets go of the GIL). A single write synced each file."""
        if self.durable or not self.changed:
            return None
        changed = [self.vault.root / self.notes.renamed.get(rel, rel) for rel in self.changed]
        syncing = threading.Thread(target=sync_files, args=(changed,), name="vaultmem-sync")
        syncing.start()
        return syncing

    def _index(self, renamed: dict[str, str]) -> None:
        written, moves = self.notes.written, self.notes.renamed
        # an early row moves to the name the note was written under, or gets its file's stat if that is
        # not the one it was indexed with (the files are stamped with it as they are created)
        moved = [rel for rel in self._early if rel in moves]
        indexed = {rel: stat for rel, stat in self._early.items() if rel not in moves}
        restamped = [(rec.mtime_ns, rec.size, rel) for rel, stat in indexed.items()
                     for rec in (written[rel],) if (rec.mtime_ns, rec.size) != stat]
        finals = [rel for rel in (moves.get(rel, rel) for rel in self.changed) if rel not in indexed
                  and rel not in self._days and (rel in written or (self.vault.root / rel).exists())]
        # notes from disk, and day notes not indexed ahead, are parsed for their records: in the workers, if any
        jobs = self._parse_ahead([rel for rel in finals if not isinstance(written.get(rel), Record)])
        if moved or restamped:  # (rare: a name taken meanwhile, a file system keeping its own times)
            self.vault.index.upsert([], gone=moved, restamped=restamped)
        if self.audit:
            self.vault.audit([dict(e, title=renamed[e["title"]]) if e.get("title") in renamed else e
                              for e in self.audit])
        ahead = {rec.path: rec for job in jobs for rec in job.result()[0]}
        if finals or self._days:
            self.vault.index.upsert([*(self._record(rel, ahead) for rel in finals), *self._days.values()])

    # -- helpers --------------------------------------------------------------------------------
    def _record(self, rel: str, ahead: dict[str, Record]) -> Record:
        written = self.notes.written.get(rel)
        if isinstance(written, Record):
            return written
        return ahead.get(rel) or self.vault.record_for(self.vault.root / rel, written)

    def _parse_ahead(self, rels: list[str]) -> list[Future]:
        """Jobs parsing these files into records in the batch's workers (none without them, or for a few)."""
        if self.pool is None or len(rels) < 2 * PARSE_CHUNK:
            return []
        from ...store.index.records import build_records

        items = []
        for rel in rels:
            path = self.vault.root / rel
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            items.append((rel, *self.vault.kind_of(path), st.st_mtime_ns, st.st_size, ""))
        root, settings = str(self.vault.root), self.vault.settings
        return [self.pool.submit(build_records, root, items[i:i + PARSE_CHUNK], settings.defaults,
                                 settings.write.max_text_chars)
                for i in range(0, len(items), PARSE_CHUNK)]

    def renamed_titles(self) -> dict[str, str]:
        """Old title -> new, for the notes written under another name than they reserved (rare)."""
        return {old.rpartition("/")[2][:-3]: new.rpartition("/")[2][:-3] for old, new in self.notes.renamed.items()}
