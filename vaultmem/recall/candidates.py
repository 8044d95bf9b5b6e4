"""A recall's candidates: the documents its posting lists name, and where each posting entry falls
among them, in work that follows the posting lists a query reads, never the size of the vault.

Every array here is candidate-sized or posting-sized. The one vault-sized thing is a scratch array of
each thread (a document's place among the current candidates, -1 for none), made once and reused by
every recall of that thread: filled for the candidates on the way in, emptied again on the way out,
so no recall allocates, clears or scans an array as large as the vault (glibc would hand such a
temporary back to the system after each recall and fault it in again on the next).

Candidate-sized arrays are still large for a query whose words are in a third of the notes (tens of
thousands of candidates, a few MB of channels and prior at once). glibc serves blocks of 128 KB and
more with mmap, and gives the top of its heap back once more than twice that lies free, so each
such recall faulted in up to a thousand fresh pages (~1 ms). keep_heap raises both bounds once, in a
process that recalls more than once (a one-off command never pays for it): blocks under
MMAP_BELOW_BYTES come from the heap, and up to TRIM_ABOVE_BYTES of free heap is kept for the next
recall. Set VAULTMEM_TUNE_MALLOC=0 (or any MALLOC_* variable of glibc's own) to leave the allocator
as it is.

Posting lists are ascending: a document only ever gets a number past those of the snapshot it joins
(index.py numbers new notes from next_doc), so a generation's run and the delta's run of a term
follow each other in order.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading

import numpy as np

__all__ = ["Candidates", "keep_heap", "union"]

_SEARCH_FACTOR = 16  # a posting list this many times longer than the candidates is binary-searched instead
MMAP_BELOW_BYTES = 8 << 20
TRIM_ABOVE_BYTES = 32 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_RECALLS = itertools.count()


def keep_heap() -> None:
    """Called by every recall: on a process's second, tune glibc's allocator (module docstring)."""
    if next(_RECALLS) != 1 or not sys.platform.startswith("linux"):
        return
    if os.environ.get("VAULTMEM_TUNE_MALLOC", "1").strip() == "0" or any(k.startswith("MALLOC_") for k in os.environ):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):  # not glibc, or no mallopt: nothing to tune
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(_M_MMAP_THRESHOLD, MMAP_BELOW_BYTES)
    mallopt(_M_TRIM_THRESHOLD, TRIM_ABOVE_BYTES)


def union(parts: list[np.ndarray]) -> np.ndarray:
    """The documents of several posting lists, ascending, each once (int64). A stable sort merges the
    lists' ascending runs in about the time of reading them."""
    parts = [part for part in parts if len(part)]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0].astype(np.int64)
    merged = np.concatenate(parts).astype(np.int64)
    merged.sort(kind="stable")
    first = np.empty(len(merged), dtype=bool)
    first[0] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    return merged[first]


class _Scratch(threading.local):
    """One thread's places array (see the module docstring)."""

    def __init__(self) -> None:
        self.places = np.full(0, -1, dtype=np.int32)
        self.busy = False


_SCRATCH = _Scratch()


class Candidates:
    """Ascending candidate documents (`docs`, int64) of a snapshot with `size` document slots; used as
    a context manager, inside which `within` and `count` place posting lists among them."""

    def __init__(self, docs: np.ndarray, size: int):
        self.docs = docs
        self.size = size
        self._places: np.ndarray | None = None
        self._own = False

    def __len__(self) -> int:
        return len(self.docs)

    def __enter__(self) -> Candidates:
        scratch = _SCRATCH
        if scratch.busy:  # placed inside another placement of this thread: an array of its own
            self._places = np.full(self.size, -1, dtype=np.int32)
            self._places[self.docs] = np.arange(len(self.docs), dtype=np.int32)
            self._own = True
            return self
        if len(scratch.places) < self.size:  # grown ahead, so a growing vault does not reallocate every write
            scratch.places = np.full(self.size + self.size // 4 + 1024, -1, dtype=np.int32)
        scratch.places[self.docs] = np.arange(len(self.docs), dtype=np.int32)
        scratch.busy = True
        self._places = scratch.places
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._places is not None and not self._own:
            self._places[self.docs] = -1
            _SCRATCH.busy = False
        self._places = None

    def within(self, postings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(places among the candidates, places in `postings`) of the posting entries whose document is
        a candidate, both ascending."""
        docs = self.docs
        if not len(docs) or not len(postings):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        if len(postings) > _SEARCH_FACTOR * len(docs):  # few candidates, a long list: look each one up
            needles = docs.astype(postings.dtype, copy=False)
            at = np.searchsorted(postings, needles)
            at[at == len(postings)] = 0
            found = np.flatnonzero(postings[at] == needles)
            return found, at[found]
        if self._places is None:
            raise RuntimeError("Candidates.within outside its `with` block")
        at = self._places[postings]
        found = np.flatnonzero(at >= 0)
        return at[found].astype(np.int64), found

    def count(self, lists: list[np.ndarray]) -> np.ndarray:
        """How many of these posting lists hold each candidate (float32)."""
        counts = np.zeros(len(self.docs), dtype=np.float32)
        for listed in lists:
            counts[self.within(listed)[0]] += 1.0
        return counts
