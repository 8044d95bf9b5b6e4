"""The semantic channel's vectors (issue 31): int8 rows with a per-row scale, in segment files beside
the sidecar, never in a note.

Each row is keyed by a note id and the hash of the text it was embedded from, so a hand edit makes one
row stale (`stale` names it, `add` replaces it) and a file deleted by hand costs only a rebuild. A
segment is written whole and renamed into place: a crash leaves the previous segments as they were.
Later segments win over earlier ones for the same id; `compact` folds them into one. Search is exact
(a matrix product over every row), see docs/semantic.md for where that stops fitting a recall.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..files import atomic_write

__all__ = ["Vectors", "text_hash"]

_SEGMENT = "seg-{:06d}.npz"


def text_hash(text: str) -> str:
    """The key of the text a row was embedded from (16 hex digits of BLAKE2b)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and the float32 scale of each (a row's largest magnitude maps to 127)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(vectors).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    return np.round(vectors / scale[:, None]).astype(np.int8), scale.astype(np.float32)


class Vectors:
    """The vector rows of one vault, in `folder` (a sub-folder of the index's own)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._ids: list[str] = []
        self._hashes: list[str] = []
        self._rows = np.zeros((0, 0), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self._seen: tuple = ()
        self._load()

    def __len__(self) -> int:
        return len(self._ids)

    def _segments(self) -> list[Path]:
        return sorted(self.folder.glob("seg-*.npz")) if self.folder.is_dir() else []

    def _load(self) -> None:
        """Read the segments again if any changed since the last read (another process embedded)."""
        segments = self._segments()
        seen = tuple((p.name, p.stat().st_mtime_ns) for p in segments)
        if seen == self._seen:
            return
        by_id: dict[str, tuple[str, np.ndarray, float]] = {}
        for path in segments:
            with np.load(path, allow_pickle=False) as seg:
                for key, digest, row, scale in zip(seg["ids"].tolist(), seg["hashes"].tolist(), seg["rows"],
                                                   seg["scale"].tolist()):
                    by_id[key] = (digest, row, scale)
        self._ids = list(by_id)
        self._hashes = [v[0] for v in by_id.values()]
        self._rows = np.stack([v[1] for v in by_id.values()]) if by_id else np.zeros((0, 0), dtype=np.int8)
        self._scale = np.array([v[2] for v in by_id.values()], dtype=np.float32)
        self._seen = seen

    def stale(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The (id, text hash) pairs that have no row, or a row of other text."""
        self._load()
        known = dict(zip(self._ids, self._hashes))
        return [(key, digest) for key, digest in items if known.get(key) != digest]

    def add(self, ids: list[str], hashes: list[str], vectors: np.ndarray) -> None:
        """Store rows for these ids (replacing any they had) as one new segment."""
        if not ids:
            return
        rows, scale = _quantise(vectors)
        self._write(self._segments(), ids, hashes, rows, scale)
        self._load()

    def _write(self, segments: list[Path], ids: list[str], hashes: list[str], rows: np.ndarray,
               scale: np.ndarray) -> None:
        """One new segment after `segments` (the folder's, as listed), written whole in memory and then
        atomically: no half-written segment, and no temp file left behind by a crash."""
        number = int(segments[-1].stem.split("-")[1]) + 1 if segments else 0
        self.folder.mkdir(parents=True, exist_ok=True)
        data = io.BytesIO()
        np.savez(data, ids=np.array(ids, dtype=str), hashes=np.array(hashes, dtype=str), rows=rows, scale=scale)
        atomic_write(self.folder / _SEGMENT.format(number), data.getvalue())

    def keep(self, ids: Iterable[str]) -> None:
        """Drop the rows of notes no longer there (forgotten, deleted, encrypted), then compact."""
        self._load()
        wanted = set(ids)
        keep = [i for i, key in enumerate(self._ids) if key in wanted]
        if len(keep) == len(self._ids) and len(self._segments()) <= 1:
            return
        self.compact(keep)

    def compact(self, keep: list[int] | None = None) -> None:
        """Fold every segment into one (with only the rows `keep` names, if given)."""
        self._load()
        keep = list(range(len(self._ids))) if keep is None else keep
        old = self._segments()
        rows = self._rows[keep] if len(keep) else np.zeros((0, max(self._rows.shape[1], 1)), dtype=np.int8)
        self._write(old, [self._ids[i] for i in keep], [self._hashes[i] for i in keep], rows, self._scale[keep])
        for path in old:
            os.unlink(path)
        self._load()

    def search(self, query: np.ndarray, k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """The k rows most like the query vector (cosine, for unit vectors), best first, as (id, similarity);
        only ids in `allowed` when given."""
        self._load()
        if not self._ids or k <= 0:
            return []
        sims = (self._rows @ np.asarray(query, dtype=np.float32)) * self._scale
        if allowed is not None:
            sims = np.where(np.fromiter((key in allowed for key in self._ids), bool, len(self._ids)), sims, -np.inf)
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self._ids[i], float(sims[i])) for i in top if np.isfinite(sims[i])]
