"""What a refresh looks at: the folders it scans, the walk over them, the parse jobs, its figures."""

from __future__ import annotations

import hashlib
import marshal
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import is_temp_name
from .records import Record, build_records

if TYPE_CHECKING:
    from ...settings import NoteDefaults


@dataclass(frozen=True)
class ScanRoot:
    """A folder the index scans, the kind of note it holds and its folder role (memories, inbox …)."""

    path: Path
    kind: str
    folder: str


@dataclass
class RefreshStats:
    """What one refresh did."""

    scanned: int = 0
    read: int = 0
    parsed: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    compacted: bool = False
    skipped: bool = False  # another writer held the lock: nothing was looked at (a read's refresh)
    watched: bool = False  # a live watcher keeps the index current: nothing was looked at (a read's refresh)


# Listing a folder through its descriptor makes each stat resolve one name, not the whole path from
# the root: ~15% of a refresh at 10k notes. (Windows lists by path.)
_BY_FD = os.scandir in os.supports_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def walk(folder: str, temps: list[str] | None = None, folders: dict[str, int] | None = None
         ) -> Iterator[tuple[str, int, int]]:
    """Markdown files below a folder, hidden entries and symbolic links skipped: (path, mtime_ns, size).

    The paths of atomic_write's temp files met on the way are added to `temps`; folders, if given,
    gets each folder's mtime_ns, taken before it is listed (folderstate.py).
    Plain strings and an explicit stack: at 100k notes, pathlib and nested generators cost more
    than the stat calls themselves.
    """
    stack = [folder]
    while stack:
        where = stack.pop()
        handle: int | str = where
        try:
            if _BY_FD:
                handle = os.open(where, _DIR_FLAGS)
            if folders is not None:
                folders[where] = os.stat(handle).st_mtime_ns
            entries = os.scandir(handle)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            _close(handle)
            if folders is not None:
                folders.pop(where, None)
            continue
        try:
            with entries:
                yield from _listed(entries, where + os.sep, stack, temps)
        finally:
            _close(handle)


def _close(handle: int | str) -> None:
    if isinstance(handle, int):
        os.close(handle)


def _listed(entries: Iterable[os.DirEntry[str]], base: str, stack: list[str], temps: list[str] | None
            ) -> Iterator[tuple[str, int, int]]:
    """walk's files among one folder's entries (`base`: its path and a separator); sub-folders go on the stack."""
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            if temps is not None and is_temp_name(name):
                temps.append(base + name)
            continue
        if name.endswith(".md"):
            try:
                st = entry.stat(follow_symlinks=False)  # a link (not S_ISREG) may point outside the vault
            except OSError:
                continue  # removed while we looked
            if stat.S_ISREG(st.st_mode):
                yield base + name, st.st_mtime_ns, st.st_size
        elif entry.is_dir(follow_symlinks=False):
            stack.append(base + name)


def scan_digest(files: dict[str, tuple[ScanRoot, int, int]]) -> tuple[str, int]:
    """A digest of every (path, mtime_ns, size) a scan found, in its order (Index.scan's result), and
    the newest mtime_ns among them."""
    stamps = [(rel, mtime, size) for rel, (_, mtime, size) in files.items()]
    newest = max((stamp[1] for stamp in stamps), default=0)
    # marshal version 2 writes no back-references, so equal lists give equal bytes in any process
    return hashlib.blake2b(marshal.dumps(stamps, 2), digest_size=16).hexdigest(), newest


def root_of(vault_root: str, roots: Sequence[ScanRoot], rel: str) -> ScanRoot | None:
    """The scan root holding a vault path (or being it); None outside them or under a hidden name."""
    if any(part.startswith(".") for part in rel.split("/")):
        return None
    path = os.path.join(vault_root, rel)
    for root in roots:
        base = str(root.path)
        if path == base or path.startswith(base + os.sep):
            return root
    return None


def look_at(vault_root: str, roots: Sequence[ScanRoot], paths: Iterable[str]
            ) -> tuple[dict[str, tuple[ScanRoot, int, int]], set[str]]:
    """The note files at or below these vault paths, as Index.scan gives them (a path that is gone
    or outside the roots gives none), and which of them were named themselves."""
    files: dict[str, tuple[ScanRoot, int, int]] = {}
    named: set[str] = set()
    prefix = len(vault_root) + 1
    for rel in paths:
        root = root_of(vault_root, roots, rel)
        if root is None:
            continue
        path = os.path.join(vault_root, rel)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            for found, mtime, size in walk(path):
                sub = found[prefix:].replace(os.sep, "/")
                files[sub] = (root_of(vault_root, roots, sub) or root, mtime, size)
        elif stat.S_ISREG(st.st_mode) and rel.endswith(".md"):
            files[rel] = (root, st.st_mtime_ns, st.st_size)
            named.add(rel)
    return files, named


def map_chunks(root: str, chunks: list[list[tuple]], defaults: NoteDefaults, max_chars: int
               ) -> Iterator[tuple[list[Record], list[tuple]]]:
    """build_records over chunks: in worker processes when there is enough work and more than one core."""
    from ..workers import process_pool, worker_count

    workers = worker_count()
    if workers < 2 or len(chunks) < 4:
        for chunk in chunks:
            yield build_records(root, chunk, defaults, max_chars)
        return
    with process_pool(workers, ["vaultmem.store.index.records"]) as pool:
        yield from pool.map(build_records, [root] * len(chunks), chunks, [defaults] * len(chunks),
                            [max_chars] * len(chunks))


__all__ = ["RefreshStats", "ScanRoot", "look_at", "map_chunks", "root_of", "scan_digest", "walk"]
