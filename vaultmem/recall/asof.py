"""recall --as-of: the vault as it stood at a past moment (issue 30).

Made from what the vault already records, never from a second copy of it:

- When each memory was written: its `remember` audit event (every device's log), else the note's own
  `timestamp` (a note written by hand, imported, or logged before audit events carried their time).
  A note written after the moment is absent.
- Its status then: the audit events that changed it (supersede, forget and gc, restore, confirm), each
  with its time. A note superseded or forgotten after the moment is current again; one confirmed after it
  is still a candidate. An event logged before events carried a time cannot be placed and is taken as
  having happened before the moment (the status stays today's).
- Its strength then: uses, feedback and decay replayed up to the moment (recall/replay.py), with
  the moment as "now" for the half-life.
- Its text then, when the vault is in git: a note whose file changed after the moment (a commit dated
  after it, or an uncommitted change saved after it) is ranked by the text git held at the last commit
  before the moment, not by today's. Without git, today's text stands for it. The files committed after the
  moment come from the git history cache (store/githistory.py), not from a `git log` of the whole vault.

Not brought back: a note deleted since (forget --hard, gc --hard, removed by hand) whose file is gone,
and an encrypted note's past status (its date applies; its status is today's).

An as-of recall reads and never writes: it records no use and leaves a working set as it is.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError
from ..store.events import log_files, read_new_lines
from ..store.gitcmd import GitError, read_blobs, run_git
from ..store.githistory import git_history
from ..store.index.records import SEALED_TYPE, Record, build_record
from ..text.times import local_iso
from .replay import Replay, read_events

if TYPE_CHECKING:
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

__all__ = ["Then", "past"]

AUDIT, TIMESTAMP, GIT = "audit log", "note timestamp", "git"
_ACTIVE = "active"
_ROW_COLUMNS = ("doc", "id", "path", "title", "status", "ts", "kind", "namespace", "lifecycle", "score", "policy", "type")


@dataclass
class Then:
    """A snapshot as the vault stood at `moment`, what dated each of its notes, and the notes whose text
    changed since, as git held them then (ranked apart: the index only knows today's text)."""

    moment: float
    snap: Snapshot
    dated: dict[str, list] = field(default_factory=dict)  # id -> [dated by, written (POSIX s), status then, text]
    old: list[tuple[dict[str, Any], Record]] = field(default_factory=list)  # (index row as then, record then)
    born: dict[str, float] = field(default_factory=dict)  # id -> when it was written (every note of the vault)
    git: str = ""  # what git could say, in words

    def told(self, note_id: str) -> dict[str, Any]:
        """What a hit says of the moment: the date asked, what dated the note, its status then, its text's source."""
        told: dict[str, Any] = {"date": local_iso(self.moment)}
        if note_id in self.dated:
            by, when, status, text = self.dated[note_id]
            told.update(dated_by=by, written=local_iso(when), status=status, text=text)
        return told


def past(vault: Store, snap: Snapshot, moment: float) -> Then:
    """The vault of `snap` as it stood at `moment` (POSIX seconds)."""
    rows = _rows(vault, snap)
    written, marks = _audit(vault)
    _undated_supersedes(vault, snap, rows, written, marks)
    live = snap.live.copy()
    status_codes = snap.codes["status"].copy()
    vocab = list(snap.vocab["status"])
    then = Then(moment, snap)
    for row in rows:
        doc, note_id = int(row["doc"]), row["id"]
        if not live[doc]:
            continue
        when, by = (written[note_id], AUDIT) if note_id in written else (float(row["ts"]), TIMESTAMP)
        then.born[note_id] = when
        if when > moment:
            live[doc] = False
            continue
        now_status = row["status"] or _ACTIVE
        status = _status_then(marks.get(note_id, []), now_status, moment)
        if status != now_status:
            status_codes[doc] = _code(vocab, status)
        then.dated[note_id] = [by, when, status, "today's"]
    by_path = {r["path"]: r for r in rows if live[int(r["doc"])]}
    old, then.git = _git_then(vault, moment, by_path)
    for path, (commit, rec) in old.items():
        row = by_path[path]
        if rec.id != row["id"] or rec.type == SEALED_TYPE:  # another note held the path then, or it was encrypted
            continue
        live[int(row["doc"])] = False  # ranked by its text then, apart (Then.old)
        status = then.dated[row["id"]][2]
        then.old.append(({**row, "status": status if status != _ACTIVE else ""}, rec))
        then.dated[row["id"]][3] = f"git {commit[:12]} (its file changed since)"
    replayed = Replay(snap, read_events(vault), _doc_of(snap, rows)).until(moment)
    then.snap = replace(replayed, live=live, codes={**snap.codes, "status": status_codes},
                        vocab={**snap.vocab, "status": vocab}, memo={})
    return then


def _rows(vault: Store, snap: Snapshot) -> list[dict[str, Any]]:
    """The index rows of the snapshot's notes, read once per snapshot (a long-lived process asks again)."""
    rows = snap.memo.get("as_of_rows")
    if rows is None:
        rows = [r for r in vault.index.select_notes("1", columns=_ROW_COLUMNS) if int(r["doc"]) < snap.size]
        snap.memo["as_of_rows"] = rows
    return rows


def _doc_of(snap: Snapshot, rows: list[dict[str, Any]]) -> dict[str, int]:
    """Each note id's document, made once per snapshot from its rows (_rows)."""
    doc_of = snap.memo.get("as_of_docs")
    if doc_of is None:
        doc_of = snap.memo["as_of_docs"] = {r["id"]: int(r["doc"]) for r in rows}
    return doc_of


def _code(vocab: list[str], name: str) -> int:
    """The status's code in the snapshot's vocabulary, added to it (a copy) when no note has it today."""
    if name == _ACTIVE and "" in vocab and _ACTIVE not in vocab:
        return vocab.index("")
    if name not in vocab:
        vocab.append(name)
    return vocab.index(name)


# -- the audit log --------------------------------------------------------------------------------

def _audit(vault: Store) -> tuple[dict[str, float], dict[str, list[tuple[float, str, str]]]]:
    """From every device's audit log: when each note was written (its first `remember … created`), and the
    dated status changes of each (time, status before, status after), oldest first."""
    written: dict[str, float] = {}
    marks: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for path in log_files(vault.state / "devices", "audit"):
        try:
            events, _ = read_new_lines(path, 0)
        except OSError:  # unreadable: what it holds cannot date anything
            continue
        for ev in events:
            ts, note_id = ev.get("ts"), ev.get("id")
            if not isinstance(ts, (int, float)) or isinstance(ts, bool) or not isinstance(note_id, str):
                continue
            mark = _mark(ev)
            if ev.get("event") == "remember" and ev.get("action") == "created":
                written[note_id] = min(float(ts), written.get(note_id, float("inf")))
            elif mark is not None:
                marks[note_id].append((float(ts), *mark))
    for found in marks.values():
        found.sort()
    return written, marks


def _mark(ev: dict[str, Any]) -> tuple[str, str] | None:
    """(status before, status after) of an audit event that changed a note's status; None for the rest."""
    kind, action = ev.get("event"), ev.get("action")
    before = ev.get("status") if isinstance(ev.get("status"), str) and ev.get("status") else _ACTIVE
    if kind == "supersede":
        return _ACTIVE, "superseded"
    if kind in ("forget", "gc") and action == "archive":
        return before, "archived"
    if kind == "restore":
        return "archived", before
    if kind == "confirm":
        return "candidate", _ACTIVE
    return None


def _status_then(marks: list[tuple[float, str, str]], now_status: str, moment: float) -> str:
    """The status set by the last change at or before the moment; before the first change, what it changed."""
    if not marks:
        return now_status
    earlier = [after for ts, _, after in marks if ts <= moment]
    return earlier[-1] if earlier else marks[0][1]


def _undated_supersedes(vault: Store, snap: Snapshot, rows: list[dict[str, Any]], written: dict[str, float],
                        marks: dict[str, list[tuple[float, str, str]]]) -> None:
    """A superseded note with no dated supersede event (written by hand, imported, or logged before events
    carried a time) was superseded when the note naming it in `supersedes` was written: that note's
    audit time, else its timestamp. Adds those marks in place; the notes linking to it are found by the
    index's link term, and only their frontmatter is read."""
    from ..notes.note import extract_links, parse_note
    from ..store.index.records import link_key, link_term

    waiting = [r for r in rows if r["status"] == "superseded" and not any(a == "superseded" for _, _, a in
                                                                           marks.get(r["id"], []))]
    if not waiting:
        return
    by_doc = {int(r["doc"]): r for r in rows}
    for row in waiting:
        key = link_key(row["title"])
        linking, _ = snap.postings(link_term(row["title"]))
        for doc in linking.tolist():
            other = by_doc.get(int(doc))
            if other is None or other["id"] == row["id"] or not snap.live[int(doc)]:
                continue
            try:
                meta = parse_note((vault.root / other["path"]).read_bytes(), other["path"]).meta
            except (OSError, VaultmemError):  # unreadable or not a note now: it dates nothing
                continue
            named = meta.get("supersedes")
            if isinstance(named, str) and any(link_key(link.split("|")[0]) == key for link in extract_links(named)):
                when = written.get(other["id"], float(other["ts"]))
                marks[row["id"]].append((when, _ACTIVE, "superseded"))
                marks[row["id"]].sort()
                break


# -- git ------------------------------------------------------------------------------------------

def _git_then(vault: Store, moment: float, by_path: dict[str, dict[str, Any]]
              ) -> tuple[dict[str, tuple[str, Record]], str]:
    """{path: (commit, the note's record at the last commit before the moment)} for each live note whose
    file changed after the moment, and what git said, in words."""
    if shutil.which("git") is None:
        return {}, "git is not installed: notes are taken with today's text"
    at = f"@{int(moment)}"
    base = run_git(vault.root, "rev-list", "-1", f"--before={at}", "HEAD", check=False)
    if base.returncode != 0:
        return {}, "not a git repository: notes are taken with today's text"
    commit = base.stdout.strip()
    if not commit:
        return {}, "git has no commit from before that date: notes are taken with today's text"
    try:
        history = git_history(vault.root, vault.index.cache_dir)
    except GitError:
        return {}, "not a git repository: notes are taken with today's text"
    dirty = run_git(vault.root, "diff", "--no-renames", "--name-only", "--relative", "-z", "HEAD", "--", ".",
                    check=False)
    paths = {p for p in history.changed_after(moment) if p in by_path}
    paths |= {p for p in dirty.stdout.split("\0") if p in by_path and _saved_after(vault, p, moment)}
    if not paths:
        return {}, f"git: no note changed since commit {commit[:12]}"
    shas: dict[str, str] = {}
    ordered = sorted(paths)
    for start in range(0, len(ordered), 500):  # a command line's length
        listed = run_git(vault.root, "ls-tree", "-z", commit, "--", *ordered[start:start + 500], check=False)
        for entry in listed.stdout.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob" and path in paths:
                shas[path] = parts[2]
    blobs = read_blobs(history.top, set(shas.values()))
    found = {}
    for path, sha in shas.items():
        kind, role = vault.kind_of(vault.root / path)
        found[path] = (commit, build_record(blobs[sha], path, kind, role, (0, 0), vault.settings.defaults,
                                            max_chars=vault.settings.write.max_text_chars))
    return found, (f"git: {len(found)} note{'s' if len(found) != 1 else ''} changed since taken as of commit "
                   f"{commit[:12]}")


def _saved_after(vault: Store, path: str, moment: float) -> bool:
    try:
        return os.stat(vault.root / path).st_mtime > moment
    except OSError:
        return False
