"""Notes a writer has created or changed but not written yet: each is written once, when it flushes.

A batch merges into and supersedes notes it created minutes earlier. Writing each change as it
comes would rewrite those files again and again, and replacing a file that already reached the
disk is slow where the file system discards freed blocks at once (ext4 `discard`: ~3 ms a file
here, against 0.2 ms for a new one). So new notes wait in memory with their index records, edits
apply to the waiting text, and a flush writes every note once: new ones under a name nothing
else has taken, changed ones only if nobody saved them since they were read (else the edits are
made again over the person's text).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import VaultmemError, WriteConflict
from ...store.index.records import content_hash, retitle

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ...store.index.records import Record
    from ...store.store import Store

CREATE_MIN = 2000  # new notes at a batch's last flush for a worker to create them (fewer: created here)
# (properties, body) -> (property changes, a paragraph to append or None)
Edit = Callable[[dict[str, Any], str], tuple[dict[str, Any], str | None]]


class StaleNote(Exception):
    """A note on disk is no longer the text the index knew (PendingNotes.load); data: what it holds now."""

    def __init__(self, rel: str, data: bytes | None):
        super().__init__(rel)
        self.rel = rel
        self.data = data


@dataclass
class _Pending:
    data: bytes                     # the text to write
    sha: str | None                 # hash of the bytes read from disk; None for a new note
    record: Record | None = None    # a new note's index record, while its text is the draft's
    edits: list[Edit] = field(default_factory=list)  # since it was read: made again over a person's save
    source: Callable[[], tuple[dict[str, Any], str]] | None = None  # a new note's properties and body
    fields: tuple[dict[str, Any], str] | None = None  # a new note's properties and body, once edited
    role: str = ""                  # a new note's folder role (memories, inbox)
    drafted: Record | None = None   # a new note's record before its first edit


class PendingNotes:
    """The notes one writer has not written yet, by vault path, in the order first touched."""

    def __init__(self, vault: Store, durable: bool):
        self.vault = vault
        self.durable = durable
        self._open: dict[str, _Pending] = {}
        self.renamed: dict[str, str] = {}  # vault path reserved -> path written (the name was taken meanwhile)
        self.written: dict[str, Record | bytes] = {}  # path written -> its index record, or its bytes to parse

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, rel: str) -> bool:
        return rel in self._open

    def create(self, rel: str, data: bytes, record: Record, source: Callable[[], tuple[dict, str]], role: str) -> None:
        """A new note in folder role `role`, to be written under `rel` (reserved by the caller) or
        the next free name; source() gives the properties and body it was rendered from."""
        self._open[rel] = _Pending(data, None, record, source=source, role=role)

    def load(self, rel: str, known_sha: str) -> None:
        """Read a note from disk for the edits to come, if it is still the text the index knew
        (known_sha): a note saved since was decided on from stale knowledge, and one caught
        mid-save (empty, its frontmatter gone) is no note to merge into. Raises StaleNote then,
        with what the file holds now (None: it is gone), for the caller to decide again.
        """
        if rel in self._open:
            return
        written = self.written.get(rel)
        if written is not None:  # this writer wrote it at an earlier flush of the batch
            known_sha = written.sha if not isinstance(written, bytes) else content_hash(written)
        path = self.vault.root / rel
        try:
            data = self.vault.read_current(path, known_sha)
        except FileNotFoundError:
            raise StaleNote(rel, None) from None
        if content_hash(data) != known_sha:
            raise StaleNote(rel, data)
        self._open[rel] = _Pending(data, known_sha)

    def peek(self, rel: str) -> tuple[dict[str, Any], str]:
        """The properties and body a loaded (or waiting) note has now, edits so far included."""
        from ...notes.note import parse_note

        pending = self._open[rel]
        if pending.source is not None:
            return pending.fields or pending.source()
        note = parse_note(pending.data, rel)
        return note.meta, note.body

    def edit(self, rel: str, edit: Edit) -> tuple[dict[str, Any], str]:
        """Change a note (waiting, or read from disk now); returns its new properties and body.

        A note this writer created is changed on its properties and rendered again (nobody else has
        seen its text); a note from disk is changed line by line (notes.writing.update_fields), keeping
        whatever a person wrote.
        """
        from ...notes.note import parse_note
        from ...notes.writing import render_new

        pending = self._open.get(rel)
        if pending is None:
            data = (self.vault.root / rel).read_bytes()
            pending = self._open[rel] = _Pending(data, content_hash(data))
        if pending.drafted is None:
            pending.drafted = pending.record
        pending.record = None
        pending.edits.append(edit)
        if pending.source is not None:
            meta, body = pending.fields or pending.source()
            changes, appended = edit(meta, body)
            meta = {**meta, **changes}  # a changed property keeps its place, a new one goes last
            if appended is not None:
                body = _appended(body, appended)
            pending.fields = (meta, body)
            pending.data = render_new(meta, body).encode("utf-8")
            return meta, body
        note = parse_note(pending.data, rel)
        new_text = _apply(note, edit)
        pending.data = new_text.encode("utf-8")
        after = parse_note(new_text, rel)
        return after.meta, after.body

    def flush(self, pool: Executor | None = None, index_early: Callable[[list[Record]], None] | None = None) -> None:
        """Write every waiting note once (see the module docstring).

        With `pool` (a batch's worker processes) and `index_early`, the workers create the new
        notes' files while this process indexes them: index_early gets their records before the
        files exist (reserved paths, and the mtime the files are given); once it returns and the
        files are written, `written` holds each record with its final path and stat, for the caller
        to mend the few rows that differ (a name taken meanwhile, a file system that kept its own time).
        """
        new = [(rel, p) for rel, p in self._open.items() if p.sha is None]
        if pool is not None and index_early is not None and len(new) >= CREATE_MIN:
            self._create_in(pool, new, index_early)
        else:  # from one thread: creates in one folder take the folder's lock in the kernel
            for rel, pending in new:
                self._write_new(rel, pending, self._try_create(rel, pending))
        for rel, pending in self._open.items():
            if pending.sha is not None:
                self._write_changed(rel, pending)
        self._open.clear()

    def _create_in(self, pool: Executor, new: list[tuple[str, _Pending]],
                   index_early: Callable[[list[Record]], None]) -> None:
        from ...store.files import create_files

        root = self.vault.root
        for under in {rel.rpartition("/")[0] for rel, _ in new}:
            self.vault.check_folder(root / under)
        where = os.path.join(str(root), "")  # vault paths use '/': fine for open() everywhere, and no pathlib per note
        # one job, so one worker: creates in one folder serialise on its lock, a second creator only waits.
        # Every file gets the same modification time, so the rows indexed meanwhile are right from the
        # start (restamping ~100,000 rows once the files exist rewrote ~70 MB of the index). It lies a
        # racy window before now: no later edit can carry it, and the next refresh need not re-hash them
        from ...store.index.index import RACY_NS

        stamp = time.time_ns() - RACY_NS
        job = pool.submit(create_files, [(where + rel, p.data) for rel, p in new], stamp)
        records = [self._record_of(rel, p) for rel, p in new]
        for record in records:
            record.mtime_ns = stamp
        index_early(records)
        try:
            for (rel, pending), stat in zip(new, job.result()):
                self._write_new(rel, pending, stat)
        except BaseException:  # a full disk, a dead worker, Ctrl-C: no row may name a note not written
            self.vault.index.upsert([], gone=[rel for rel, _ in new if rel not in self.written])
            raise

    def _record_of(self, rel: str, pending: _Pending) -> Record:
        """A new note's record; a note edited while it waited is rendered again from its fields."""
        if pending.record is None:
            from ...store.index.records import rendered_record

            if pending.fields is None:
                raise VaultmemError(f"{rel}: a new note waiting to be written has neither its record nor its fields")
            pending.record = rendered_record(pending.data, *pending.fields, rel, pending.role, (0, len(pending.data)),
                                             self.vault.settings.defaults, like=pending.drafted,
                                             max_chars=self.vault.settings.write.max_text_chars)
        return pending.record

    def _try_create(self, rel: str, pending: _Pending) -> tuple[int, int] | None:
        """Create a new note under its reserved name: its (mtime_ns, size), or None if the name is taken."""
        under, _, name = rel.rpartition("/")
        try:
            st = self.vault.create_note(self.vault.root / under, name, pending.data, durable=self.durable)
        except WriteConflict:
            return None
        return st.st_mtime_ns, st.st_size

    def _write_new(self, rel: str, pending: _Pending, stat: tuple[int, int] | None) -> None:
        """Record a new note written under its reserved name (stat: its mtime_ns and size), or write
        it under the next free one: someone created a file of that name after it was reserved (None)."""
        under, _, name = rel.rpartition("/")
        folder = self.vault.root / under
        if stat is None:
            def taken(candidate: str) -> bool:
                return f"{under}/{candidate}" in self._open or f"{under}/{candidate}" in self.written

            name, st = self.vault.create_numbered(folder, name[:-3], pending.data, durable=self.durable, first=1,
                                                  skip=taken)
            stat = st.st_mtime_ns, st.st_size
        final = f"{under}/{name}"
        if final != rel:
            self.renamed[rel] = final
        record = self._record_of(rel, pending)
        record.mtime_ns, record.size = stat
        if record.path != final:
            record.path = final
            retitle(record, name[:-3])  # the title is the file name: its words are terms
        self.written[final] = record

    def _write_changed(self, rel: str, pending: _Pending) -> None:
        if not pending.edits:  # loaded for an edit that was not made after all
            return
        path: Path = self.vault.root / rel
        try:
            self.vault.write_text(path, pending.data, expected_sha=pending.sha, durable=self.durable)
        except WriteConflict:  # saved by someone (Obsidian) since it was read: make the edits over their text
            pending.data = self.vault.edit_note(path, _replay(pending.edits, rel), durable=self.durable).encode("utf-8")
        self.written[rel] = pending.data


def _appended(text: str, paragraph: str) -> str:
    return text.rstrip("\n") + "\n\n" + paragraph + "\n"


def _apply(note: Any, edit: Edit) -> str:
    """The note's new text after one edit, changed line by line."""
    from ...notes.writing import update_fields

    changes, appended = edit(note.meta, note.body)
    new_text = update_fields(note, changes)
    return new_text if appended is None else _appended(new_text, appended)


def _replay(edits: list[Edit], rel: str) -> Callable[[Any], str]:
    """All the edits again, over a text someone saved meanwhile (for Store.edit_note)."""
    def replay(note: Any) -> str:
        from ...notes.note import parse_note

        new_text = ""
        for i, edit in enumerate(edits):
            new_text = _apply(note if i == 0 else parse_note(new_text, rel), edit)
        return new_text

    return replay


__all__ = ["PendingNotes", "StaleNote"]
