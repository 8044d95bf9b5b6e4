"""Forgetting by selection (SPEC §7, issue 17 item 4): archive many memories in one pass, delete
them on request, and restore an archived one.

A forget is the AND of its selectors (ids, tags, a query, a time range, a source) and needs a
reason. Archiving moves each note to `archive/` with `status: archived`; a hard forget deletes the
file. Either way one pass holds the write lock once, updates the index once, appends one audit batch
(who, what, why, and the status the note had, which `restore` puts back) and adds one line per note
to today's episode note. The audit of a hard delete keeps the note's id, title, path and content
hash, never its text: a hard forget is how a secret or a mistake leaves the vault, and the device log
is synced with it.

Many notes at once stay fast: the archived copies are written without an fsync each and the disk is
synced once before the originals are removed, so a crash leaves a note in both folders, never in none.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import getpass
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MissingArgument, VaultmemError
from ..store.files import file_mode, sync_files
from ..store.index.records import content_hash, given_epoch, tag_term
from ..text import terms as text
from ..write.episodes import append_episodes

if TYPE_CHECKING:
    from ..store.store import Store

ARCHIVED = "archived"


@dataclass(frozen=True)
class Selection:
    """Which memories a forget is about: every selector given must match (AND); at least one is needed.

    since/until: YYYY-MM-DD or ISO 8601, on the note's write time (a bare `until` date includes its day).
    namespaces: only notes in these (None: every namespace; an agent's surface passes what it may read).
    """

    ids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    query: str = ""
    since: str | None = None
    until: str | None = None
    source: str | None = None
    namespaces: tuple[str, ...] | None = None

    def empty(self) -> bool:
        """Whether no selector is given (a forget of everything is never meant)."""
        return not (self.ids or self.tags or self.query.strip() or self.since or self.until or self.source)


@dataclass
class Forgotten:
    """What a forget (or gc) did or, with dry_run, would do: `notes` [{id, title, path, to, status,
    ...}], `skipped` [{id, path, why}] (edited meanwhile: left as it is)."""

    action: str  # archived, deleted, would-archive, would-delete
    reason: str
    notes: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json, MCP, Hermes)."""
        return asdict(self)


@dataclass(frozen=True)
class _Line:
    """A day-note line of a forget: `- HH:MM Forgot [[name]]: reason` (append_episodes renders it)."""

    when: dt.datetime
    text: str

    def render(self) -> str:
        return f"- {self.when.astimezone():%H:%M} {self.text}"


def who() -> dict[str, str]:
    """The device and user an audit event names as its author."""
    from ..store.events import device_id

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        user = ""
    return {"device": device_id(), "user": user}


def forget_where(vault: Store, selection: Selection, reason: str, *, dry_run: bool = False, hard: bool = False,
                 now: float | None = None) -> Forgotten:
    """Archive (or with hard, delete) every memory the selection matches, with the reason audited.

    Raises MissingArgument without a reason or a selector, UnsafePath for an id that is a path out of
    the vault, NoteNotFound for an id that names no note.
    """
    reason = _one_line(reason)
    if not reason:
        raise MissingArgument("a forget needs a reason, kept in the audit log", ["reason"])
    if selection.empty():
        raise MissingArgument("say what to forget", ["ids", "tags", "query", "since", "until", "source"])
    with writing(vault, dry_run):
        vault.index.catch_up()
        rows = select(vault, selection)
        return forget_rows(vault, rows, reason, "forget", dry_run=dry_run, hard=hard, now=now)


def writing(vault: Store, dry_run: bool) -> contextlib.AbstractContextManager:
    """The writers' lock for a pass that moves notes; a dry run only reads, and never makes an agent's
    write wait."""
    return contextlib.nullcontext() if dry_run else vault.index.writing()


def forget_rows(vault: Store, rows: list[dict[str, Any]], reason: str, event: str, *, dry_run: bool = False,
                hard: bool = False, now: float | None = None, extra: dict[str, dict[str, Any]] | None = None
                ) -> Forgotten:
    """Archive or delete these index rows (the caller holds the write lock); `event` names the audit
    event (forget, gc), `extra` adds fields per id to its notes and events (gc: score, last use)."""
    rows = [r for r in rows if r["status"] != ARCHIVED or hard]
    extra = extra or {}
    verb = "delete" if hard else "archive"
    if dry_run:
        notes = [{**_summary(r, r["path"] if hard else ""), **extra.get(r["id"], {})} for r in rows]
        return Forgotten(f"would-{verb}", reason, notes, dry_run=True)
    stamp = time.time() if now is None else now
    moved, skipped = (_delete(vault, rows) if hard else _archive(vault, rows))
    author = who()
    notes = [{**_summary(row, to), **extra.get(row["id"], {})} for row, to in moved]
    events = [{"event": event, "action": "delete" if hard else "archive", "reason": reason, **author, "ts": stamp,
               **note, "path": note["to"] or note["path"], "from": note["path"]} for note in notes]
    lines = [f"Deleted “{row['title']}”: {reason}" if hard else f"Forgot [[{Path(to).stem}]]: {reason}"
             for row, to in moved]
    commit_moves(vault, moved, lines, events, stamp)
    return Forgotten("deleted" if hard else "archived", reason, notes, skipped)


def commit_moves(vault: Store, moved: list[tuple[dict, str]], lines: list[str], events: list[dict], stamp: float
                 ) -> None:
    """After notes moved (or were deleted: new path ""): their lines into the day's episode note (unless
    `write.episodes` is off), one index upsert of the new files and the day note, one audit batch."""
    when = dt.datetime.fromtimestamp(stamp).astimezone()
    records: dict[str, Any] = {}
    if lines and vault.settings.write.episodes:
        append_episodes(vault, [_Line(when, line) for line in lines], records=records)
    records.update((to, vault.record_for(vault.root / to)) for _, to in moved if to)
    vault.index.upsert(list(records.values()), gone=[row["path"] for row, _ in moved])
    vault.index.wrote()
    vault.audit(events)


def select(vault: Store, selection: Selection) -> list[dict[str, Any]]:
    """The memory rows matching every selector, in path order (ids resolved first: a bad one fails).

    Tags and query words are looked up in the index's posting lists (tags normalised as recall's
    --tag does), the rest filters those rows; without either, one SQL query over the notes."""
    ids = {_memory(vault, ref)["id"] for ref in selection.ids}
    since = given_epoch(selection.since) if selection.since else None
    until = given_epoch(selection.until, end_of_day=True) if selection.until else None
    terms = [tag_term(t) for t in selection.tags] + text.query_terms(selection.query)
    if selection.query.strip() and not text.query_terms(selection.query):
        return []  # words that name no term (punctuation only) match nothing
    rows = _rows_with_terms(vault, terms) if terms else vault.index.select_notes("kind = 'memory'")
    return sorted((r for r in rows if r["kind"] == "memory" and (not ids or r["id"] in ids)
                   and (since is None or r["ts"] >= since) and (until is None or r["ts"] <= until)
                   and (selection.source is None or r["source"] == selection.source)
                   and (selection.namespaces is None or r["namespace"] in selection.namespaces)
                   and vault.sees(r["namespace"])),  # what the caller may change (store/caller.py)
                  key=lambda r: r["path"])


def _rows_with_terms(vault: Store, terms: list[str]) -> list[dict[str, Any]]:
    """Rows of the live notes whose index terms include every one of these."""
    import numpy as np

    for _ in range(3):
        snap = vault.index.snapshot()
        docs = None
        for term in terms:
            found = np.unique(snap.postings(term)[0])
            docs = found if docs is None else np.intersect1d(docs, found, assume_unique=True)
        docs = docs[snap.live[docs]] if docs is not None and len(docs) else np.array([], dtype=np.int64)
        rows = vault.index.rows(docs, snap.generation) if len(docs) else {}
        if rows is not None:
            return list(rows.values())
    raise VaultmemError("the index kept changing while the selection was read; try again")


def _memory(vault: Store, ref: str) -> dict[str, Any]:
    row = vault.resolve(ref)
    if row["kind"] != "memory":
        raise VaultmemError(f"{row['path']} is not a memory (it is a {row['kind']} note)")
    return row


def _summary(row: dict[str, Any], to: str) -> dict[str, Any]:
    return {"id": row["id"], "title": row["title"], "path": row["path"], "to": to,
            "status": row["status"] or "active", "sha": row["sha"]}


def _one_line(reason: str | None) -> str:
    return " ".join((reason or "").split())


def _archive(vault: Store, rows: list[dict[str, Any]]) -> tuple[list[tuple[dict, str]], list[dict]]:
    """Write each note, status archived, into the archive folder; sync once; remove the originals
    that did not change meanwhile (an edited one keeps its place, its copy is removed)."""
    return relocate(vault, rows, vault.folders["archive"], lambda row: {"status": ARCHIVED})


def relocate(vault: Store, rows: list[dict[str, Any]], folder: Path, changes: Callable[[dict[str, Any]], dict]
             ) -> tuple[list[tuple[dict, str]], list[dict]]:
    """Move notes to `folder` with `changes(row)` made to their properties (restore uses it too):
    ([(row, new vault path)], [skipped: {id, path, why}])."""
    from ..notes.note import parse_note
    from ..notes.writing import update_fields

    folder.mkdir(parents=True, exist_ok=True)
    taken = {name.lower() for name in os.listdir(folder)}
    copies, skipped = [], []
    for row in rows:
        src = vault.root / row["path"]
        try:
            data = src.read_bytes()
        except FileNotFoundError:
            skipped.append({"id": row["id"], "path": row["path"], "why": "gone from disk"})
            continue
        if content_hash(data) != row["sha"]:
            skipped.append({"id": row["id"], "path": row["path"], "why": "edited since it was indexed"})
            continue
        new_text = update_fields(parse_note(data, row["path"]), changes(row))
        copies.append((row, src, data, _create(vault, folder, src, new_text.encode("utf-8"), taken)))
    if copies:
        sync_files([dst for *_, dst in copies])  # one flush for every copy: from here a crash leaves a note twice, never nowhere
    moved = []
    for row, src, data, dst in copies:
        if content_hash(src.read_bytes()) != content_hash(data):  # saved by a person meanwhile: theirs wins
            dst.unlink()
            skipped.append({"id": row["id"], "path": row["path"], "why": "edited during the forget"})
            continue
        src.unlink()
        moved.append((row, vault.relpath(dst)))
    return moved, skipped


def _create(vault: Store, folder: Path, src: Path, data: bytes, taken: set[str]) -> Path:
    """Create a moved note under the first free readable name (`stem.md`, `stem 2.md`, …), with its mode."""
    name, _ = vault.create_numbered(folder, src.stem, data, durable=False, skip=lambda n: n.lower() in taken,
                                    mode=file_mode(src))
    taken.add(name.lower())
    return folder / name


def _delete(vault: Store, rows: list[dict[str, Any]]) -> tuple[list[tuple[dict, str]], list[dict]]:
    """Remove each note's file unless it changed since it was indexed (then it is skipped)."""
    moved, skipped = [], []
    for row in rows:
        src = vault.root / row["path"]
        try:
            same = content_hash(src.read_bytes()) == row["sha"]
        except FileNotFoundError:
            skipped.append({"id": row["id"], "path": row["path"], "why": "gone from disk"})
            continue
        if not same:
            skipped.append({"id": row["id"], "path": row["path"], "why": "edited since it was indexed"})
            continue
        src.unlink()
        moved.append((row, ""))
    return moved, skipped


__all__ = ["ARCHIVED", "Forgotten", "Selection", "commit_moves", "forget_rows", "forget_where", "relocate", "select", "who", "writing"]
