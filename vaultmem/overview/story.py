"""`vaultmem why ID`: one memory's story, oldest first, put together from what the vault already holds.

Its audit events (written, merged, superseded, forgotten, restored, confirmed, encrypted) from every device's
audit log; its feedback, pins and decay from the events logs (a byte search for its id, so the cost follows
this note's lines, not the vault's); the supersede chain from the notes' own `supersedes` / `superseded_by`;
the commits that changed its file, when the vault is in a git repository (from the git history cache,
store/githistory.py: at its path now and at every path vaultmem moved it from, bounded to MAX_COMMITS, and one
`git cat-file --batch` for the versions, whose bodies are compared here; a rename by hand is not followed);
and its strength now and a month from now, by the report's replay (overview/history.py). Without git the story says so.
An encrypted note's text is never shown without the passphrase (nor its versions' diffs).
"""

from __future__ import annotations

import difflib
import shutil
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import NoteNotFound, VaultmemError
from ..notes.note import extract_links, parse_note
from ..recall.hindsight import ranking_config
from ..store.events import events_naming
from ..store.gitcmd import GitError, read_blobs
from ..store.githistory import Change, git_history
from ..store.index.records import SEALED_TYPE
from ..text.times import local_iso
from .history import DAY, strength_at
from .storydata import Story

if TYPE_CHECKING:
    from ..store.store import Store

MAX_COMMITS = 100  # commits of one note read from git: its newest ones
MAX_DIFF_LINES = 12  # lines of a body diff shown per commit
MAX_CHAIN = 20  # notes followed each way along a supersede chain
SNIPPET = 160  # characters of a note's text shown
SEALED_TEXT = "(encrypted: give the passphrase to read it)"
_STATUS_EVENTS = {"forget": "forgotten", "gc": "forgotten by gc", "restore": "restored", "confirm": "confirmed",
                  "encrypt": "encrypted", "decrypt": "decrypted", "rekey": "sealed under a new passphrase"}
_EVENT_WORDS = {"pin": "pinned", "unpin": "unpinned"}


def why(vault: Store, ref: str, now: float | None = None) -> Story:
    """The story of the memory named by id, path or title, as far as the caller may see it (Store.resolve).

    Raises NoteNotFound (also for another namespace's note), UnsafePath, AmbiguousNote."""
    row = vault.resolve(ref)
    if row["kind"] != "memory":
        raise VaultmemError(f"{row['path']} is not a memory (it is a {row['kind']} note): why tells a memory's story")
    stamp = time.time() if now is None else now
    sealed = _locked(vault, row)
    title, meta, body = _note(vault, row)
    story = Story(row["id"], title, row["path"], row["namespace"], row["status"],
                  SEALED_TEXT if sealed else _snippet(body, 4 * SNIPPET))
    audit = events_naming(vault.state / "devices", "audit", row["id"])
    logged = events_naming(vault.state / "devices", "events", row["id"])
    used = [e for _, e in logged if e.get("id") == row["id"]]  # a byte search can also match another field
    story.events = _audit_story(row, audit, body if not sealed else SEALED_TEXT)
    story.events += _use_story(used)
    sealed_file = row["type"] == SEALED_TYPE  # a diff of ciphertext tells nothing
    commits, story.git = _git_story(vault, row, sealed_file, audit)
    story.events += commits
    first = next((e.pop("first_text") for e in commits if "first_text" in e), None)
    if first is not None:  # the note's text now may be an edit's: the written event tells what git first held
        for event in story.events:
            if event["kind"] == "created" and "text" in event:
                event["text"] = first
    story.events.sort(key=lambda e: (e["ts"], e["kind"] != "created", e["order"]))  # written, then what it did
    for event in story.events:
        event.pop("order", None)
    story.chain = _chain(vault, row, meta)
    story.strength = _strength(vault, row, used, stamp)
    return story


def _locked(vault: Store, row: dict[str, Any]) -> bool:
    """An encrypted note this Vault has no passphrase for: its text is not shown."""
    return row["type"] == SEALED_TYPE and vault.keyring.passphrase() is None


def _note(vault: Store, row: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The note's title, properties and body: an encrypted one opened when the Vault has its passphrase."""
    if row["type"] == SEALED_TYPE and not _locked(vault, row):
        from ..recall.sealed import opened_memory

        try:
            opened = opened_memory(vault, row)
        except (OSError, VaultmemError):  # not under this passphrase, or tampered: told as locked
            return row["title"], {}, SEALED_TEXT
        return opened.title, opened.meta, opened.content
    try:
        note = parse_note((vault.root / row["path"]).read_bytes(), row["path"])
    except (OSError, VaultmemError):
        return row["title"], {}, row.get("body") or ""
    return row["title"], note.meta, note.body


def _event(ts: float, kind: str, what: str, by: str = "", order: int = 0, **extra: Any) -> dict[str, Any]:
    return {"ts": round(float(ts), 3), "when": local_iso(ts), "kind": kind, "what": what, "by": by, "order": order,
            **extra}


def _snippet(text: str, limit: int = SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _who(device: str, event: dict[str, Any]) -> str:
    """Who an audit event says did it: the source or caller it names, and the device."""
    parts = [str(event[k]) for k in ("source", "caller") if isinstance(event.get(k), str) and event[k]]
    if isinstance(event.get("user"), str) and event["user"]:
        parts.append(f"user {event['user']}")
    return ", ".join([*dict.fromkeys(parts), f"device {device}"])


def _audit_story(row: dict[str, Any], audit: list[tuple[str, dict[str, Any]]],
                 text: str) -> list[dict[str, Any]]:
    """The audit events of this note, in words; a note with no record of its writing starts at its timestamp."""
    found: list[dict[str, Any]] = []
    for order, (device, ev) in enumerate(audit):
        ts = float(ev["ts"]) if isinstance(ev.get("ts"), (int, float)) else None
        kind = ev.get("event")
        if ts is None:  # logged before events carried their time: placed by the note's own
            ts = float(row["ts"])
        mine = ev.get("id") == row["id"]
        if kind == "remember" and mine and ev.get("action") == "created":
            found.append(_event(ts, "created", "written", _who(device, ev), order, text=_snippet(text, 4 * SNIPPET)))
        elif kind == "remember" and mine and ev.get("action") == "merged":
            found.append(_event(ts, "merged", "a restatement or the same value merged into it", _who(device, ev), order))
        elif kind == "supersede" and mine:
            found.append(_event(ts, "superseded", f"superseded by “{ev.get('title', '')}”", _who(device, ev), order,
                                other=ev.get("by", "")))
        elif kind == "supersede" and ev.get("by") == row["id"]:
            found.append(_event(ts, "supersedes", f"replaced “{_title_of(ev)}”", _who(device, ev), order,
                                other=ev["id"]))
        elif kind in _STATUS_EVENTS and mine:
            reason = f": {ev['reason']}" if isinstance(ev.get("reason"), str) and ev["reason"] else ""
            found.append(_event(ts, kind, _STATUS_EVENTS[kind] + reason, _who(device, ev), order))
        elif kind == "edit" and mine and ev.get("because") not in ("pin", "unpin"):  # a pin is told by its event
            fields = ", ".join(map(str, ev.get("fields") or []))
            found.append(_event(ts, "edited", f"properties {fields} changed by {ev.get('because', 'vaultmem')}",
                                _who(device, ev), order))
    if not any(e["kind"] == "created" for e in found):
        found.insert(0, _event(float(row["ts"]), "created", "written (no audit record of it: by hand, by an import "
                               "or before vaultmem logged writes; the time is the note's timestamp)",
                               str(row.get("source") or ""), -1, text=_snippet(text, 4 * SNIPPET)))
    return found


def _title_of(ev: dict[str, Any]) -> str:
    """The title of a note an event names, by its path (the note may have moved or gone since)."""
    path = str(ev.get("path") or "")
    return path.rsplit("/", 1)[-1].removesuffix(".md") or str(ev.get("id", ""))


def _use_story(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Feedback, pins and decay one by one; uses summed up at the first of them."""
    found: list[dict[str, Any]] = []
    uses = sorted(float(e["ts"]) for e in events if e["event"] == "access")
    if uses:
        found.append(_event(uses[0], "used", f"recalled {len(uses)} time{'s' if len(uses) != 1 else ''}, the last "
                            f"on {local_iso(uses[-1])[:10]}", order=10**6))
    for order, ev in enumerate(events):
        if ev["event"] == "feedback":
            note = f" ({ev['note']})" if isinstance(ev.get("note"), str) and ev["note"] else ""
            found.append(_event(ev["ts"], "feedback", f"feedback: {ev['verdict']}{note}", order=order))
        elif ev["event"] in _EVENT_WORDS:
            found.append(_event(ev["ts"], ev["event"], _EVENT_WORDS[ev["event"]], order=order))
        elif ev["event"] == "decay":
            found.append(_event(ev["ts"], "decay", f"weakened × {float(ev['factor']):g}", order=order))
    return found


def _git_story(vault: Store, row: dict[str, Any], sealed: bool,
               audit: list[tuple[str, dict[str, Any]]]) -> tuple[list[dict[str, Any]], str]:
    """The commits that changed the note's file at any of its paths (its newest MAX_COMMITS), each with a short
    diff of its body: the commits from the git history cache (store/githistory.py), the blobs through one
    `git cat-file --batch`."""
    if shutil.which("git") is None:
        return [], "git is not installed: the story is the audit log's alone"
    try:
        history = git_history(vault.root, vault.index.cache_dir)
    except GitError:
        return [], "the vault is not in a git repository: the story is the audit log's alone (no edits by hand)"
    commits = _moves(history.changes(_paths(row, audit)))[-MAX_COMMITS:]
    if not commits:
        return [], "in git, but no commit holds this note yet"
    shas = {sha for c in commits for sha in (c.old, c.new) if sha}
    texts = {sha: _body(data) for sha, data in read_blobs(history.top, shas).items()}
    found = []
    for order, c in enumerate(commits):
        before, after = texts.get(c.old), texts.get(c.new)
        what = {"A": "first committed" if order == 0 else "committed again", "D": "removed in git",
                "R": "moved in git"}.get(c.status, "changed in git")
        event = _event(c.ts, "commit", f"{what}: {c.subject}", c.author, order, commit=c.sha[:12])
        if not sealed and before is not None and after is not None:
            event["diff"] = _diff(before, after)
        if not sealed and order == 0 and c.status == "A" and after is not None:
            event["first_text"] = _snippet(after, 4 * SNIPPET)  # its text as written, before any later edit
        found.append(event)
    more = " (the newest of them)" if len(commits) == MAX_COMMITS else ""
    return found, f"git: {len(commits)} commit{'s' if len(commits) != 1 else ''} of this note{more}"


def _paths(row: dict[str, Any], audit: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The note's path now and every path its audit events name (vaultmem's moves: forget, restore …).
    A rename by hand, outside vaultmem, is not among them."""
    named = [ev.get(key) for _, ev in audit if ev.get("id") == row["id"] for key in ("path", "from", "to")]
    return [row["path"], *(p for p in named if isinstance(p, str) and p)]


def _moves(changes: list[Change]) -> list[Change]:
    """One change per commit: a removal and an addition in one commit are a move (status R), from the
    removed blob to the added one; any other second path of one commit is left out."""
    found: list[Change] = []
    for change in changes:
        if not found or found[-1].sha != change.sha:
            found.append(change)
        elif found[-1].status == "D" and change.status == "A":
            found[-1] = replace(change, status="R", old=found[-1].old)
    return found


def _body(data: bytes) -> str:
    try:
        return parse_note(data).body
    except VaultmemError:
        return data.decode("utf-8", "replace")


def _diff(before: str, after: str) -> list[str]:
    """The body lines a commit removed and added (at most MAX_DIFF_LINES); [] when the body did not change."""
    lines = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
             if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return [_snippet(line, SNIPPET) for line in lines[:MAX_DIFF_LINES]] + (
        [f"… {len(lines) - MAX_DIFF_LINES} more lines"] if len(lines) > MAX_DIFF_LINES else [])


def _chain(vault: Store, row: dict[str, Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The notes this one replaced and that replaced it, followed each way, oldest first (this one marked).
    A note the caller may not see, or that is gone, ends the chain on that side."""
    older, newer = _follow(vault, meta, "supersedes"), _follow(vault, meta, "superseded_by")
    if not older and not newer:
        return []
    here = {"id": row["id"], "title": row["title"], "timestamp": local_iso(float(row["ts"])), "status": row["status"],
            "this": True}
    return [*reversed(older), here, *newer]


def _follow(vault: Store, meta: dict[str, Any], key: str) -> list[dict[str, Any]]:
    found, seen = [], set()
    while len(found) < MAX_CHAIN:
        links = extract_links(meta.get(key)) if isinstance(meta.get(key), str) else []
        if not links:
            break
        try:
            other = vault.resolve(links[0].split("|")[0])
        except (NoteNotFound, VaultmemError):
            break
        if other["id"] in seen:
            break
        seen.add(other["id"])
        _, meta, body = _note(vault, other)
        found.append({"id": other["id"], "title": other["title"], "timestamp": local_iso(float(other["ts"])),
                      "status": other["status"], "text": SEALED_TEXT if _locked(vault, other) else _snippet(body)})
    return found


def _strength(vault: Store, row: dict[str, Any], events: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """Its effective strength now and 30 days on without further use, as recall would rate it."""
    events = sorted(events, key=lambda e: float(e.get("ts", 0)))
    config = ranking_config(vault)
    (today, month), half_life = strength_at(row, events, config, np.array([now, now + 30 * DAY]), now)
    uses = [float(e["ts"]) for e in events if e["event"] == "access"]
    return {"score": float(row["score"]), "lifecycle": row["lifecycle"] or "", "half_life_hours": half_life,
            "uses": len(uses), "last_access": local_iso(max(uses)) if uses else "", "effective": round(float(today), 4),
            "in_30_days": round(float(month), 4)}


__all__ = ["MAX_COMMITS", "Story", "why"]
