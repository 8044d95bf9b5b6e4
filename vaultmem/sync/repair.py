"""`vaultmem repair` (issue 16 item 4): fold back into their notes what bypassed the merge driver, by the
driver's own rules (mergedriver.merge_copies).

- A note with git's conflict markers (a GitHub web merge, Obsidian Git on mobile), in its properties or its
  body, diff3 style or not, nested or not: split into the two sides (and the ancestor, when every block
  holds one) and merged; lines both sides changed go into the driver's callout and the note becomes
  needs-verification.
- A sync tool's copy (Syncthing's `x.sync-conflict-…`, Dropbox's and Obsidian Sync's `x (… conflicted
  copy …)`) and any second file holding a memory's `id` (iCloud's `x 2.md`, a hand copy): merged into the
  original note and removed; a copy whose original is gone takes the original's name.

Nothing is lost: every file repair rewrites or removes is first copied byte for byte to
`.vaultmem/repair-backup/<UTC time>/<its vault path>`, and every repair is an event in this device's
audit log naming the files and the backup. What repair cannot merge (a copy that is no note, a binary
file, markers that do not pair up, a note made read-only) is left as it is and reported. A second run
finds nothing to do.
"""

from __future__ import annotations

import re
import stat
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..notes.conflicts import conflict_marker_line, copy_original, split_conflict
from ..errors import VaultmemError
from ..store.files import atomic_write
from ..store.index.records import content_hash
from .mergedriver import CALLOUT, merge_copies

if TYPE_CHECKING:
    from ..store.store import Store

__all__ = ["Repair", "RepairReport", "repair"]

BACKUP_DIR = "repair-backup"
_NUMBERED = re.compile(r" \d+$")  # iCloud's and Finder's `x 2.md`, and vaultmem's own numbered names
_NESTING = 16  # conflict blocks inside conflict blocks, resolved from the outside in, at most this deep


@dataclass
class Repair:
    """One repair: the note folded into (`path`), the copies folded in, where the old bytes went."""

    kind: str  # markers | copy | duplicate-id
    path: str
    copies: list[str] = field(default_factory=list)
    backup: list[str] = field(default_factory=list)
    callout: bool = False  # both sides changed something: kept in a callout, the note needs verification
    reason: str = ""  # why it was skipped


@dataclass
class RepairReport:
    """What repair did (or, with dry_run, would do) and what it had to leave for a person."""

    dry_run: bool
    repaired: list[Repair] = field(default_factory=list)
    skipped: list[Repair] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was left for a person."""
        return not self.skipped

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"dry_run": self.dry_run, "repaired": [asdict(r) for r in self.repaired],
                "skipped": [asdict(r) for r in self.skipped], "ok": self.ok}


class _Skip(Exception):
    """A repair that cannot be done; its message says why."""


# -- conflict markers -----------------------------------------------------------------------------------------
def _resolved(data: bytes, path: str, depth: int = 0) -> tuple[bytes, bool]:
    """A note's bytes with every conflict block merged away, and whether a callout had to keep both texts.

    Raises _Skip: the markers do not pair up, or a side is no note vaultmem can read.
    """
    text = _text(data)
    if conflict_marker_line(text) is None:
        return data, False
    split = split_conflict(text)
    if split is None or depth >= _NESTING:
        raise _Skip("its conflict markers do not pair up (<<<<<<<, =======, >>>>>>>); fix it by hand")
    base, ours, theirs = split
    ours_b, clash_o = _resolved(ours.encode("utf-8"), path, depth + 1)
    theirs_b, clash_t = _resolved(theirs.encode("utf-8"), path, depth + 1)
    base_b = None if base is None or conflict_marker_line(base) is not None else base.encode("utf-8")
    merged = merge_copies(ours_b, theirs_b, path, base_b)
    if merged is None:
        raise _Skip("a side of its conflict is no note vaultmem can read (bad properties); fix it by hand")
    return merged, clash_o or clash_t or _flagged(merged, ours_b, theirs_b)


def _flagged(merged: bytes, *sides: bytes) -> bool:
    """Whether the merge added the driver's callout (no side had as many)."""
    mark = CALLOUT.encode("utf-8")
    return merged.count(mark) > max(side.count(mark) for side in sides)


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Skip("it is not UTF-8 text (a binary file?); left as it is") from None


# -- copies ---------------------------------------------------------------------------------------------------
def _copy_groups(vault: Store, files: list[str]) -> list[tuple[str, str, list[str]]]:
    """(kind, original, copies): sync tools' copies by name, then the files that share one memory id."""
    on_disk = set(files)
    groups: dict[str, tuple[str, list[str]]] = {}
    for rel in files:
        folder, _, name = rel.rpartition("/")
        original = copy_original(name)
        if original:
            groups.setdefault(f"{folder}/{original}" if folder else original, ("copy", []))[1].append(rel)
    copies = {c for _, members in groups.values() for c in members}
    by_id: dict[str, list[str]] = {}
    for row in vault.index.select_notes(columns=("id", "path")):
        if row["path"] in on_disk and not row["id"].startswith("path-"):
            by_id.setdefault(row["id"], []).append(row["path"])
    for paths in by_id.values():
        rest = sorted(p for p in paths if p not in copies)
        if len(rest) < 2:
            continue
        original = min(rest, key=lambda p: (p not in groups, _looks_copied(p, on_disk), len(p), p))
        groups.setdefault(original, ("duplicate-id", []))[1].extend(p for p in rest if p != original)
    return [(kind, original, sorted(members)) for original, (kind, members) in sorted(groups.items())]


def _looks_copied(rel: str, on_disk: set[str]) -> bool:
    """`x 2.md` beside an `x.md`: the copy of the two (iCloud, Finder, a hand duplicate)."""
    stem = rel[:-3]
    match = _NUMBERED.search(stem)
    return bool(match) and f"{stem[:match.start()]}.md" in on_disk


# -- the run --------------------------------------------------------------------------------------------------
class _Run:
    """One repair run: the files' bytes as repair left them, and the backup folder of this run."""

    def __init__(self, vault: Store, dry_run: bool):
        self.vault, self.dry_run = vault, dry_run
        self.report = RepairReport(dry_run)
        self.backup = vault.state / BACKUP_DIR / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.files = sorted(vault.index.scan())
        self.resolved: dict[str, bytes] = {}  # notes whose markers were merged away (a dry run writes none)

    def markers(self) -> None:
        for rel in self.files:
            data = self._read(rel)
            if data is None or b"<<<<<<<" not in data:
                continue
            item = Repair("markers", rel)
            try:
                merged, item.callout = _resolved(data, rel)
                self._writable(rel)
                self.resolved[rel] = merged
                if not self.dry_run:
                    item.backup.append(self._back_up(rel, data))
                    self.vault.write_text(self.vault.root / rel, merged, expected_sha=content_hash(data))
            except (_Skip, VaultmemError, OSError) as why:  # one note's trouble stops no other repair
                self._skipped(item, why)
                continue
            self._done(item)

    def copies(self) -> None:
        for kind, original, copies in _copy_groups(self.vault, self.files):
            item = Repair(kind, original, copies)
            try:
                self._fold(item)
            except (_Skip, VaultmemError, OSError) as why:
                self._skipped(item, why)
                continue
            self._done(item)

    def _fold(self, item: Repair) -> None:
        """Merge the copies into the original one by one; write it; back the old files up; remove the copies."""
        path = self.vault.root / item.path
        first = path.exists()
        before = self._read(item.path) if first else None
        current = self._current(item.path) if first else self._current(item.copies[0])
        if current is None:
            raise _Skip("its files changed while repair ran; run it again")
        _text(current)
        for rel in item.copies[0 if first else 1:]:
            data = self._current(rel)
            if data is None:
                continue
            _text(data)
            merged = merge_copies(current, data, item.path)
            if merged is None:
                raise _Skip(f"{rel} or its original is no note vaultmem can read (binary, bad properties); "
                            "fold it in by hand")
            item.callout = item.callout or _flagged(merged, current, data)
            current = merged
        for rel in [item.path] * first + item.copies:
            self._writable(rel)
        if self.dry_run:
            return
        olds = {rel: self._read(rel) for rel in [item.path] * first + item.copies}
        item.backup += [self._back_up(rel, data) for rel, data in olds.items() if data is not None]
        if first and before is not None:
            if current != before:
                self.vault.write_text(path, current, expected_sha=content_hash(before))
        else:
            self.vault.write_text(path, current, expected_sha=None)
        for rel in item.copies:
            data = olds[rel]
            if data is not None and content_hash((self.vault.root / rel).read_bytes()) == content_hash(data):
                (self.vault.root / rel).unlink()

    def _current(self, rel: str) -> bytes | None:
        """A file's bytes as this run left them (its markers merged away, in a dry run too)."""
        return self.resolved.get(rel) or self._read(rel)

    def _read(self, rel: str) -> bytes | None:
        try:
            return (self.vault.root / rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def _writable(self, rel: str) -> None:
        """Raises _Skip for a note its owner made read-only (repair honours that, root or not)."""
        path = self.vault.root / rel
        if path.exists() and not path.stat().st_mode & stat.S_IWUSR:
            raise _Skip(f"{rel} is read-only; make it writable to repair it")

    def _back_up(self, rel: str, data: bytes) -> str:
        target = self.backup / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            atomic_write(target, data)
        return self.vault.relpath(target)

    def _done(self, item: Repair) -> None:
        self.report.repaired.append(item)
        if not self.dry_run:
            self.vault.audit([{"event": "repair", "kind": item.kind, "path": item.path, "copies": item.copies,
                               "backup": item.backup, "callout": item.callout}])

    def _skipped(self, item: Repair, why: BaseException) -> None:
        item.reason = str(why) if isinstance(why, _Skip) else f"{type(why).__name__}: {why}"
        item.backup = []
        self.report.skipped.append(item)


def repair(vault: Store, dry_run: bool = False) -> RepairReport:
    """Fold conflict markers, sync tools' copies and duplicate-id copies back into their notes (see the
    module's docstring); with dry_run, only say what would be done. Under the vault's write lock."""
    with vault.index.writing():
        vault.index.catch_up()
        run = _Run(vault, dry_run)
        run.markers()
        if not dry_run and run.report.repaired:
            vault.index.refresh()  # the repaired notes' ids, for the copies' groups
        run.copies()
        if not dry_run and run.report.repaired:
            vault.index.refresh()
    return run.report

