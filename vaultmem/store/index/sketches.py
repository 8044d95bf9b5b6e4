"""Reading a generation's near-duplicate sketch files (dup_key.bin, dup_doc.bin, written by
snapshot.py): which documents share a sketch key with a text. Memory-mapped and bisected without
numpy, so a single `remember` looking for near duplicates never imports it."""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import Any

from ...errors import IndexDamaged

__all__ = ["SketchReader", "open_sketches"]


class SketchReader:
    """The current generation's sketch files, opened once and kept while the files stay the same."""

    def __init__(self):
        self._open: tuple | None = None  # (stamp, sorted keys, their documents)

    def clear(self) -> None:
        self._open = None

    def docs(self, cache_dir: Path, generation: str, keys: list[int]) -> list[int]:
        """Documents of `generation` with any of these sketch keys (a note changed since has a new
        row: its old document number matches no row); [] when the generation has no sketch files."""
        if not generation:
            return []
        folder = cache_dir / f"gen-{generation}"
        try:
            st = os.stat(folder / "dup_key.bin")
        except FileNotFoundError:
            return []  # its files were removed by hand: the next compaction writes them again
        # a rebuild may reuse a generation's number: the file itself tells them apart
        stamp = (generation, st.st_ino, st.st_mtime_ns, st.st_size)
        found = self._open
        if found is None or found[0] != stamp:
            found = self._open = (stamp, *open_sketches(folder))
        _, sorted_keys, key_docs = found
        docs = set()
        for key in keys:
            docs.update(key_docs[bisect_left(sorted_keys, key):bisect_right(sorted_keys, key)])
        return sorted(docs)


def open_sketches(folder: Path) -> tuple[Any, Any]:
    """A generation's sorted sketch keys and their documents, memory-mapped; IndexDamaged when the
    two files are cut short or disagree."""
    import mmap

    views = []
    for name, code in (("dup_key.bin", "q"), ("dup_doc.bin", "I")):
        with open(folder / name, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            try:
                views.append(memoryview(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)).cast(code)
                             if size else ())
            except TypeError:  # not a whole number of values: cut short
                raise IndexDamaged(f"{folder.name}: {name} is cut short") from None
    if len(views[0]) != len(views[1]):
        raise IndexDamaged(f"{folder.name}: dup_key.bin and dup_doc.bin disagree")
    return views[0], views[1]
