"""The semantic channel's vectors (issue 31): int8 rows with a per-row scale, in segment files beside
the sidecar, never in a note.

Each row is keyed by a note id and the hash of the text it was embedded from, so a hand edit makes one
row stale (`stale` names it, `add` replaces it) and a file deleted by hand costs only a rebuild. A
segment is written whole and renamed into place: a crash leaves the previous segments as they were.
Later segments win over earlier ones for the same id; `compact` folds them into one. Search is exact
(a matrix product over every row), see docs/semantic.md for where that stops fitting a recall.

Safe for the threads of a process (what was read is one immutable _Rows, swapped whole) and for several
processes on one vault: writers take `write.lock` in the folder (its own, not the index's: embedding never
holds up a remember), and a reader that meets a segment compacted away meanwhile reads the folder again.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..files import atomic_write
from ..writelock import WriteLock

__all__ = ["Vectors", "text_hash"]

_SEGMENT = "seg-{:06d}.npz"
_READS = 5  # tries at reading the segments while other processes compact them


def text_hash(text: str) -> str:
    """The key of the text a row was embedded from (16 hex digits of BLAKE2b)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and the float32 scale of each (a row's largest magnitude maps to 127)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(vectors).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    return np.round(vectors / scale[:, None]).astype(np.int8), scale.astype(np.float32)


class _Rows(NamedTuple):
    """What the segments held when last read: the rows and which files they came from."""

    ids: list[str]
    hashes: list[str]
    rows: np.ndarray
    scale: np.ndarray
    seen: tuple  # (name, mtime_ns) of each segment read

    @classmethod
    def none(cls) -> _Rows:
        return cls([], [], np.zeros((0, 0), dtype=np.int8), np.zeros(0, dtype=np.float32), ())


class Vectors:
    """The vector rows of one vault, in `folder` (a sub-folder of the index's own)."""

    def __init__(self, folder: str | Path, lock_timeout: float = 60.0):
        self.folder = Path(folder)
        self._state = _Rows.none()
        self._reading = threading.Lock()
        self._writer = WriteLock(self.folder / "write.lock", lock_timeout)
        self._load()

    def __len__(self) -> int:
        return len(self._state.ids)

    @property
    def version(self) -> tuple:
        """The segments last read (name, mtime): equal while no process stored a row."""
        return self._load().seen

    def ids(self) -> list[str]:
        """The note ids that have a row, in row order (search's and `version`'s)."""
        return list(self._load().ids)

    def _segments(self) -> list[Path]:
        return sorted(self.folder.glob("seg-*.npz")) if self.folder.is_dir() else []

    def _load(self) -> _Rows:
        """The rows, read again if any segment changed since the last read (another process embedded)."""
        with self._reading:
            for _ in range(_READS):
                segments = self._segments()
                try:
                    seen = tuple((p.name, p.stat().st_mtime_ns) for p in segments)
                    if seen != self._state.seen:
                        self._state = _read(segments, seen)
                    return self._state
                except FileNotFoundError:  # compacted away by another process between listing and reading
                    continue
            return self._state

    @contextmanager
    def writing(self, wait: bool = True) -> Iterator[bool]:
        """The writers' lock of this folder, across threads and processes; yields whether it is held
        (with wait False, False at once while another writer has it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        held = self._writer.acquire(wait)
        try:
            yield held
        finally:
            if held:
                self._writer.release()

    def stale(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The (id, text hash) pairs that have no row, or a row of other text."""
        state = self._load()
        known = dict(zip(state.ids, state.hashes))
        return [(key, digest) for key, digest in items if known.get(key) != digest]

    def add(self, ids: list[str], hashes: list[str], vectors: np.ndarray) -> None:
        """Store rows for these ids (replacing any they had) as one new segment."""
        if not ids:
            return
        rows, scale = _quantise(vectors)
        with self.writing():
            self._write(self._segments(), ids, hashes, rows, scale)
        self._load()

    def _write(self, segments: list[Path], ids: list[str], hashes: list[str], rows: np.ndarray,
               scale: np.ndarray) -> None:
        """One new segment after `segments` (the folder's, as listed under the writers' lock), written
        whole in memory and then atomically: no half-written segment, and no temp file left by a crash."""
        number = int(segments[-1].stem.split("-")[1]) + 1 if segments else 0
        data = io.BytesIO()
        np.savez(data, ids=np.array(ids, dtype=str), hashes=np.array(hashes, dtype=str), rows=rows, scale=scale)
        atomic_write(self.folder / _SEGMENT.format(number), data.getvalue())

    def keep(self, ids: Iterable[str]) -> None:
        """Drop the rows of notes no longer there (forgotten, deleted, encrypted), then compact."""
        wanted = set(ids)
        with self.writing():
            state = self._load()
            keep = [i for i, key in enumerate(state.ids) if key in wanted]
            if len(keep) < len(state.ids) or len(self._segments()) > 1:
                self._compact(state, keep)

    def drop(self, ids: Iterable[str]) -> None:
        """Drop the rows of these notes (encrypted since they were embedded), if any has one."""
        gone = set(ids) & set(self._load().ids)
        if gone:
            self.keep(key for key in self.ids() if key not in gone)

    def compact(self) -> None:
        """Fold every segment into one."""
        with self.writing():
            state = self._load()
            self._compact(state, list(range(len(state.ids))))

    def _compact(self, state: _Rows, keep: list[int]) -> None:
        """One segment with the rows `keep` names of `state` (read under the writers' lock), the old ones removed."""
        old = self._segments()
        rows = state.rows[keep] if len(keep) else np.zeros((0, max(state.rows.shape[1], 1)), dtype=np.int8)
        self._write(old, [state.ids[i] for i in keep], [state.hashes[i] for i in keep], rows, state.scale[keep])
        for path in old:
            os.unlink(path)
        self._load()

    def search(self, query: np.ndarray, k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The k rows most like the query vector (cosine, for unit vectors), best first, as (id, similarity);
        only ids in `allowed` when given."""
        state = self._load()
        if not state.ids or k <= 0:
            return []
        sims = similarities(state, query)
        if allowed is not None:
            sims = np.where(np.fromiter((key in allowed for key in state.ids), bool, len(state.ids)), sims, -np.inf)
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(state.ids[i], float(sims[i])) for i in top if np.isfinite(sims[i])]

    def similarities(self, query: np.ndarray) -> tuple[tuple, list[str], np.ndarray]:
        """The version read, every row's id and its cosine to the query vector (for unit vectors), in row order."""
        state = self._load()
        return state.seen, state.ids, similarities(state, query)


def similarities(state: _Rows, query: np.ndarray) -> np.ndarray:
    """Each row's dot product with the query (the int8 product times the rows' scales).

    einsum, not `@`: a matrix product goes to BLAS, whose thread pool on a busy machine waits for its
    threads (36 ms instead of 1.3 ms for 10k rows at a load of 9 on 2 cores, measured); einsum's own loop
    is as fast as one BLAS thread here."""
    if not state.ids:
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,j->i", state.rows, np.asarray(query, dtype=np.float32)) * state.scale


def _read(segments: list[Path], seen: tuple) -> _Rows:
    """The rows of these segments, a later one's row winning for an id."""
    by_id: dict[str, tuple[str, np.ndarray, float]] = {}
    for path in segments:
        with np.load(path, allow_pickle=False) as seg:
            for key, digest, row, scale in zip(seg["ids"].tolist(), seg["hashes"].tolist(), seg["rows"],
                                               seg["scale"].tolist()):
                by_id[key] = (digest, row, scale)
    if not by_id:
        return _Rows.none()._replace(seen=seen)
    values = list(by_id.values())
    return _Rows(list(by_id), [v[0] for v in values], np.stack([v[1] for v in values]),
                 np.array([v[2] for v in values], dtype=np.float32), seen)
