"""Whether a note may have appeared, gone or been replaced in the note folders since the index looked.

A single `remember` must see every note the vault holds (a fresh `git clone`, a `git pull`, a copy
by hand, a `remember` killed after its note was written but before the index heard of it), yet a
full refresh stats every file. A folder's modification time changes whenever an entry in it is
created, renamed over or deleted — which is how every one of those cases lands (git and atomic
saves write a new file and rename it; a kill leaves a file the folder gained). So the index keeps
the modification time of every folder it scans, and a writer refreshes only when one differs.

What it cannot see: a file rewritten in place (its folder keeps its time) — a merge re-reads such
a note before changing it (write/pipeline.py), and recall's refresh re-hashes it; and, on a file system
whose clock ticks coarsely, a file created by another program in the same tick as vaultmem's own
write. After its own writes, a writer stores the new time of the folders it wrote notes into, and
of no other (a folder another program changed meanwhile stays stale). A single remember trusts
that nothing else created a file in those folders between its check and its write, a window of
milliseconds under the write lock: listing a 10k-note folder costs more than the whole remember.
A batch, whose window is seconds to minutes, stores a folder's time only when the folder holds
exactly the notes and sub-folders the index knows.

A running watcher (sync/watch.py) is told of every change in the folders it watches: after each
batch it keeps the times of the folders the batch touched, taken before it read any file, so the
writers after it find nothing stale (store_watched).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol


class Index(Protocol):
    """What folder times need of index.Index (a protocol: the index imports this module)."""

    vault_root: Path
    roots: Sequence[Any]  # scan.ScanRoot

    def names_in(self, folder: str) -> set[str]: ...
    def get_meta(self, key: str) -> str: ...
    def set_meta(self, key: str, value: str) -> None: ...

META_KEY = "folders"


def folder_times(folders: Iterable[str]) -> dict[str, int]:
    """mtime_ns of each folder (a path as the scan gives it) that exists."""
    out: dict[str, int] = {}
    for folder in folders:
        try:
            out[folder] = os.stat(folder).st_mtime_ns
        except OSError:
            continue
    return out


def unchanged(index: Index) -> bool:
    """Whether every scanned folder has the time the index last stored for it (none stored: False)."""
    stored = _stored(index)
    if not stored:
        return False
    roots = [str(root.path) for root in index.roots if root.path.is_dir()]
    if any(root not in stored for root in roots):
        return False
    return folder_times(stored) == stored


def store_scanned(index: Index, times: dict[str, int]) -> None:
    """Keep the folder times a full scan saw (taken before each folder was listed)."""
    index.set_meta(META_KEY, json.dumps(times, separators=(",", ":")))


def store_after_write(index: Index, wrote_in: set[str], verify: bool = False) -> None:
    """After vaultmem's own writes: keep the new time of each changed folder that it wrote notes into
    (vault-relative `wrote_in`); with verify, only if the folder holds exactly the notes and sub-folders
    the index knows. Any other changed folder stays stale, and the next writer refreshes."""
    stored = _stored(index)
    if not stored:
        return
    root = str(index.vault_root)
    mine = {os.path.join(root, rel) if rel else root for rel in wrote_in}
    now = folder_times(folder for folder in stored if folder in mine)
    changed = [folder for folder, mtime in now.items() if stored.get(folder) != mtime]
    if not changed:
        return
    for folder in changed:
        if not verify or _holds_indexed(index, folder, stored):
            stored[folder] = now[folder]
    index.set_meta(META_KEY, json.dumps(stored, separators=(",", ":")))


def watched_times(folders: Iterable[str]) -> dict[str, int | None]:
    """The watcher's look at the folders its changes touched, before it reads a file: mtime_ns of
    each, None for one that is gone."""
    folders = list(folders)
    times = folder_times(folders)
    return {folder: times.get(folder) for folder in folders}


def store_watched(index: Index, times: dict[str, int | None]) -> None:
    """After the watcher applied every change it was told of in these folders: keep their times
    (taken before it read them, so a change that lands meanwhile leaves them stale); a folder that is
    gone leaves the map with the folders below it. A folder outside the scan roots is left out."""
    stored = _stored(index)
    if not stored or not times:
        return
    roots = [str(root.path) for root in index.roots]
    for folder, mtime in times.items():
        if mtime is None:
            for known in [f for f in stored if f == folder or f.startswith(folder + os.sep)]:
                del stored[known]
        elif any(folder == root or folder.startswith(root + os.sep) for root in roots):
            stored[folder] = mtime
    index.set_meta(META_KEY, json.dumps(stored, separators=(",", ":")))


def _holds_indexed(index: Index, folder: str, stored: dict[str, int]) -> bool:
    rel = folder[len(str(index.vault_root)) + 1:].replace(os.sep, "/")
    notes, subfolders = _listing(folder)
    return notes == index.names_in(rel) and subfolders <= {os.path.basename(f) for f in stored
                                                           if os.path.dirname(f) == folder}


def _listing(folder: str) -> tuple[set[str], set[str]]:
    """The note file names and the sub-folder names directly in a folder (hidden ones skipped)."""
    notes: set[str] = set()
    subfolders: set[str] = set()
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if name.endswith(".md") and entry.is_file(follow_symlinks=False):
                notes.add(name)
            elif entry.is_dir(follow_symlinks=False):
                subfolders.add(name)
    return notes, subfolders


def _stored(index: Index) -> dict[str, int]:
    try:
        stored = json.loads(index.get_meta(META_KEY) or "{}")
    except ValueError:
        return {}
    return stored if isinstance(stored, dict) else {}


__all__ = ["folder_times", "store_after_write", "store_scanned", "store_watched", "unchanged", "watched_times"]
