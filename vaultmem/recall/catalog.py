"""Looking at the vault as a whole: list, stats and doctor (read-only; notes are never modified)."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..notes.conflicts import conflict_marker_line, is_sync_conflict_copy
from ..text import terms as text
from ..store.index.records import SEALED_TYPE, given_epoch, link_key

if TYPE_CHECKING:
    from ..store.store import Store


@dataclass
class Memory:
    """A note as the index knows it (what `show` and `list` return)."""

    id: str
    path: str
    title: str
    kind: str
    content: str
    tags: list[str]
    source: str
    lifecycle: str
    timestamp: str
    score: float
    type: str
    value: str
    status: str
    namespace: str
    links: list[str]
    aliases: list[str]
    meta: dict[str, Any]
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the properties' times in ISO 8601, as the note writes them)."""
        data = asdict(self)
        if self.meta:  # read from the file (show); a listed note has none, and `list` needs no note parser
            from ..notes.note import json_ready

            data["meta"] = json_ready(self.meta)
        return data


def memory_from_row(row: dict[str, Any], meta: dict[str, Any] | None = None) -> Memory:
    """Build a Memory from an index row (meta: the parsed frontmatter, when the file was read)."""
    return Memory(id=row["id"], path=row["path"], title=row["title"], kind=row["kind"], content=row["body"],
                  tags=row["tags"], source=row["source"], lifecycle=row["lifecycle"], timestamp=row["stamp"],
                  score=row["score"], type=row["type"], value=row["value"], status=row["status"],
                  namespace=row["namespace"], links=row["links"], aliases=row["aliases"], meta=meta or {},
                  error=row["error"] or "")


def read_meta(vault: Store, row: dict[str, Any]) -> dict[str, Any]:
    """The whole frontmatter of an indexed note, read from its file ({} when it cannot be parsed)."""
    from ..errors import NoteFormatError
    from ..notes.note import parse_note

    try:
        return parse_note((vault.root / row["path"]).read_bytes(), row["path"]).meta
    except (OSError, NoteFormatError):
        return {}


def list_memories(vault: Store, since: str | None = None, tags: list[str] | None = None,
                  kind: str = "memory", limit: int | None = None) -> list[Memory]:
    """Memories newest first, optionally written since a date and carrying every given tag.

    Raises VaultmemError for a `since` that is no YYYY-MM-DD or ISO 8601 time.
    """
    where, params = "kind = ?", [kind]
    if since:
        where += " AND ts >= ?"
        params.append(given_epoch(since))
    rows = vault.visible(vault.index.select_notes(where, tuple(params), order="ts DESC, path"))
    wanted = {text.normalize_tag(t) for t in tags or []}
    if wanted:
        rows = [r for r in rows if wanted <= {text.normalize_tag(t) for t in r["tags"]}]
    return [memory_from_row(r) for r in rows[:limit]]


def tag_counts(vault: Store) -> dict[str, int]:
    """Every tag of the vault's memories (normalised) with how many memories carry it."""
    counts: Counter = Counter()
    for row in vault.visible(vault.index.select_notes("kind = 'memory'")):
        counts.update({text.normalize_tag(t) for t in row["tags"]})
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def stats(vault: Store) -> dict[str, Any]:
    """Counts by kind, status, namespace and lifecycle, plus the sidecar's state (of the notes the
    caller may see: store/caller.py)."""
    rows = vault.visible(vault.index.select_notes())
    memories = [r for r in rows if r["kind"] == "memory"]
    return {
        "vault": str(vault.root),
        "device": vault.device,
        "notes": len(rows),
        "by_kind": dict(Counter(r["kind"] for r in rows)),
        "memories_by_status": dict(Counter(r["status"] for r in memories)),
        "memories_by_namespace": dict(Counter(r["namespace"] for r in memories)),
        "memories_by_lifecycle": dict(Counter(r["lifecycle"] for r in memories)),
        "unparsable": sum(1 for r in rows if r["error"]),
        "index": vault.index.info(),
    }


@dataclass
class DoctorReport:
    """Everything `doctor` found; `ok` when there is nothing to act on."""

    unparsable: list[dict[str, str]] = field(default_factory=list)
    bad_log_lines: list[dict[str, Any]] = field(default_factory=list)  # {path, line, problem}: skipped events
    duplicate_ids: dict[str, list[str]] = field(default_factory=dict)
    # {paths, reason}: memories the write pipeline keeps as one note (dedup.duplicate_groups)
    duplicate_memories: list[dict[str, Any]] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)
    broken_links: list[dict[str, str]] = field(default_factory=list)
    # {path, line}: a text merge that bypassed vaultmem's merge driver left git's markers in a note
    conflict_markers: list[dict[str, Any]] = field(default_factory=list)
    # a sync tool's copy of a note it could not reconcile (Syncthing, Dropbox, Obsidian Sync, iCloud)
    sync_conflicts: list[str] = field(default_factory=list)
    # {path, kinds}: secrets a person (or an old version) left in a note; found by --strict only
    secrets: list[dict[str, Any]] = field(default_factory=list)
    # {path, id, expires}: live notes whose `expires` / `valid_until` has passed; found by --strict only
    expired: list[dict[str, Any]] = field(default_factory=list)
    # {path, chars, bytes, limit}: memories longer than write.max_text_chars (written by hand, synced in), of
    # which the index holds the first `limit` characters
    oversized: list[dict[str, Any]] = field(default_factory=list)
    drift: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not (self.unparsable or self.bad_log_lines or self.duplicate_ids or self.duplicate_memories
                    or self.broken_links or self.conflict_markers or self.sync_conflicts or self.secrets
                    or self.expired or self.oversized or self.warnings)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; `fixes` names the command that folds each kind of finding back."""
        found = asdict(self)
        return {**found, "ok": self.ok, "fixes": {key: fix for key, fix in FIXES.items() if found[key]}}


FIXES = {"conflict_markers": "vaultmem repair", "sync_conflicts": "vaultmem repair", "duplicate_ids": "vaultmem repair",
         "expired": "vaultmem forget ID --reason expired (or a later expires)",
         "oversized": "split the note into several memories (or raise write.max_text_chars)"}
EXPIRY_KEYS = ("expires", "valid_until")  # a note's last day of validity (a date: through that day)


def doctor(vault: Store, strict: bool = False) -> DoctorReport:
    """Notes that cannot be parsed, duplicate ids and memories, missing ids, broken links, conflict
    markers, sync-conflict copies, memories over the text limit and index drift; `strict` (for CI and
    pre-commit hooks) also reads every note for secrets with the vault's policy."""
    report = DoctorReport(drift=_drift(vault))
    vault.refresh()
    report.warnings += [f"the index was damaged ({damage}); it has been rebuilt from the notes"
                        for damage in vault.index.check()]
    rows = vault.index.select_notes()
    report.unparsable = [{"path": r["path"], "error": r["error"]} for r in rows if r["error"]]
    by_id: dict[str, list[str]] = {}
    for r in rows:
        by_id.setdefault(r["id"], []).append(r["path"])
    report.duplicate_ids = {i: paths for i, paths in by_id.items() if len(paths) > 1}
    report.duplicate_memories = _duplicate_memories(vault, rows)
    # a daily episode note is named by its date; memories and entities need an id to be linked safely
    report.missing_ids = [r["path"] for r in rows
                          if r["id"].startswith("path-") and not r["error"] and r["kind"] != "episode"]
    report.broken_links = _broken_links(vault, rows)
    report.conflict_markers = [{"path": r["path"], "line": line} for r in rows
                               if (line := conflict_marker_line(r["body"])) is not None]
    report.sync_conflicts = sorted(r["path"] for r in rows if is_sync_conflict_copy(r["path"]))
    report.oversized = _oversized(vault, rows)
    report.bad_log_lines = _bad_log_lines(vault)
    if strict:
        report.secrets = _secrets(vault, rows)
        report.expired = _expired(vault, rows)
    import yaml

    if not getattr(yaml, "__with_libyaml__", False):
        report.warnings.append("PyYAML has no libyaml: indexing is about 8x slower (install PyYAML with libyaml)")
    return report


def _secrets(vault: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The notes whose title, body or properties hold what the policy calls a secret, with its kinds
    (never the secret itself)."""
    from ..write.policy import Policy

    policy = Policy.of(vault)  # the writer's own
    found = []
    for r in rows:
        kinds = policy.note_secrets(r["title"], r["body"], r["value"], r["source"], r["tags"], r["aliases"])
        if kinds:
            found.append({"path": r["path"], "kinds": kinds})
    return found


def _oversized(vault: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The memories whose text is longer than write.max_text_chars, as the write pipeline counts it (the
    index holds their beginning only). A file of no more bytes than that holds no more characters, so
    only larger files are read."""
    from ..errors import NoteFormatError
    from ..notes.note import parse_note

    limit = int(vault.settings.write.max_text_chars)
    found = []
    for r in rows:
        if r["kind"] != "memory" or r["size"] <= limit:
            continue
        try:
            data = (vault.root / r["path"]).read_bytes()
        except OSError:
            continue
        try:
            body = parse_note(data, r["path"]).body
        except NoteFormatError:
            body = data.decode("utf-8", errors="replace")
        chars = len(body.strip())
        if chars > limit:
            found.append({"path": r["path"], "chars": chars, "bytes": len(data), "limit": limit})
    return found


def _expired(vault: Store, rows: list[dict[str, Any]], now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Live notes (not archived, superseded or candidate) whose `expires` or `valid_until` has passed."""
    now = now or dt.datetime.now().astimezone()
    found = []
    for r in rows:
        if r["error"] or r["status"] in ("archived", "superseded"):
            continue
        try:
            data = (vault.root / r["path"]).read_bytes()
        except OSError:
            continue
        if not any(f"{key}:".encode() in data for key in EXPIRY_KEYS):
            continue  # most notes: no need to parse
        meta = read_meta(vault, r)
        until = next((meta[key] for key in EXPIRY_KEYS if meta.get(key)), None)
        end = _expiry(until)
        if end is not None and end < now:
            found.append({"path": r["path"], "id": r["id"], "expires": str(until)})
    return found


def _expiry(value: Any) -> dt.datetime | None:
    """When a note stops being valid: a date's end (its last day counts), a time as written (naive =
    local); None when the value is no date or time."""
    from ..errors import VaultmemError
    from ..write.drafts import parse_time

    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return parse_time(value + dt.timedelta(days=1))
    if not isinstance(value, (str, dt.datetime)) or not value:
        return None
    try:
        return parse_time(value)
    except VaultmemError:
        return None


def _duplicate_memories(vault: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Live memories that restate each other, oldest first (superseded and archived ones are history)."""
    from ..text.dedup import duplicate_groups

    settings = vault.settings.write
    live = sorted((r for r in rows if r["kind"] == "memory" and r["status"] in ("active", "candidate")
                   and not r["error"] and r["type"] != SEALED_TYPE), key=lambda r: (r["ts"], r["path"]))  # sealed: no words
    # the index holds each note's keys as the pipeline made them (one schema: one key scheme)
    return duplicate_groups(((r["path"], r["namespace"], r["fp"], r["type"], r["value"], text.plain_text(r["body"]),
                              r["sketch"] or None) for r in live),
                            settings.merge_types, float(settings.near_duplicate))


def _drift(vault: Store) -> dict[str, int]:
    """How far the index is behind the files (before doctor refreshes it)."""
    files = vault.index.scan()
    known = {r["path"]: (r["mtime_ns"], r["size"]) for r in vault.index.select_notes()}
    changed = sum(1 for rel, (_, m, s) in files.items() if rel in known and known[rel] != (m, s))
    return {"new": sum(1 for rel in files if rel not in known), "changed": changed,
            "deleted": sum(1 for rel in known if rel not in files)}


def _bad_log_lines(vault: Store) -> list[dict[str, Any]]:
    """The lines of the devices' event logs that folding them skips (a bad merge, a hand edit)."""
    from ..store.events import bad_lines, log_files

    found = []
    for path in log_files(vault.state / "devices", "events"):
        try:
            problems = bad_lines(path)
        except OSError as exc:
            problems = [(0, f"cannot be read ({exc.strerror})")]
        found += [{"path": vault.relpath(path), "line": line, "problem": problem} for line, problem in problems]
    return found


def _broken_links(vault: Store, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Links whose target is no note anywhere in the vault (Obsidian resolves by file name)."""
    names = set()
    for _, dirs, files in os.walk(vault.root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        names.update(link_key(f) for f in files)
    return [{"path": r["path"], "link": link} for r in rows for link in r["links"] if link_key(link) not in names]


__all__ = ["DoctorReport", "EXPIRY_KEYS", "FIXES", "Memory", "doctor", "list_memories", "memory_from_row",
           "read_meta", "stats", "tag_counts"]
