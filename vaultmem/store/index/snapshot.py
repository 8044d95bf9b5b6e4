"""Immutable in-memory view of the index: memory-mapped generation arrays plus the small delta."""

from __future__ import annotations

import json
import mmap
import os
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import count as numbers_from
from pathlib import Path

import numpy as np

from ...text import terms as text
from ...errors import IndexDamaged
from ..files import fsync_path, remove_tree
from .records import link_key, split_terms

NUMERIC = ("score", "ts")
CATEGORICAL = ("kind", "status", "lifecycle", "namespace", "source", "type", "trust", "episode")
COLUMNS = NUMERIC + CATEGORICAL
_EMPTY_DOCS = np.zeros(0, dtype=np.uint32)
_EMPTY_TF = np.zeros(0, dtype=np.uint16)
_MEMO_TERMS = 4096  # delta terms a snapshot keeps the postings of


def _numbering(known: dict[str, int]) -> dict[str, int]:
    """Term -> number, numbered 0, 1, 2 … in order of first use: looking up a new term numbers it.
    A defaultdict whose factory is a counter does that in C (map() over a note's terms)."""
    return defaultdict(numbers_from(len(known)).__next__, known)


class PostingsBuilder:
    """Collects documents' term counts, in document order, into flat arrays (never a dict of lists)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = _numbering({})
        self.term_ids = array("i")
        self.docs = array("I")
        self.tfs = array("I")
        self.n_docs = 0
        self._carried: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def carry(self, folder: Path, keep: np.ndarray) -> None:
        """Start from an existing generation's postings, keeping its documents `keep` (ascending)
        as documents 0 … len(keep)-1: no note is read or tokenised again."""
        gen, _, _ = _load_generation(folder)
        off, blob = gen.term_off, gen.blob
        self.ids = _numbering({bytes(blob[off[i]:off[i + 1]]).decode("utf-8"): i for i in range(len(off) - 1)})
        # as long as the highest document kept: one with no term at all (an encrypted note) is in no posting list
        size = max(int(gen.post_doc.max()) + 1 if len(gen.post_doc) else 0, int(keep.max()) + 1 if len(keep) else 0)
        renumber = np.full(size, -1, dtype=np.int64)
        renumber[keep] = np.arange(len(keep))
        term_of = np.repeat(np.arange(len(off) - 1, dtype=np.int32), np.diff(gen.post_off))
        new_doc = renumber[gen.post_doc] if len(renumber) else np.zeros(0, dtype=np.int64)
        alive = new_doc >= 0
        self._carried = (term_of[alive], new_doc[alive].astype(np.uint32), gen.post_tf[alive].astype(np.uint32))
        self.n_docs = len(keep)

    def add(self, terms: Counter | str) -> None:
        """Append the next document's terms (counts, or records.encode_terms of them)."""
        number = self.ids.__getitem__  # a new term gets the next number (see _numbering)
        if isinstance(terms, str):
            names, counts = split_terms(terms)
            self.term_ids.extend(map(number, names))
            self.tfs.extend(map(int, counts))
            n = len(names)
        else:
            self.term_ids.extend(map(number, terms))
            self.tfs.extend(terms.values())
            n = len(terms)
        self.docs.extend([self.n_docs] * n)
        self.n_docs += 1

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        added = (np.frombuffer(self.term_ids, dtype=np.int32) if self.term_ids else np.zeros(0, np.int32),
                 np.frombuffer(self.docs, dtype=np.uint32) if self.docs else np.zeros(0, np.uint32),
                 np.frombuffer(self.tfs, dtype=np.uint32) if self.tfs else np.zeros(0, np.uint32))
        if self._carried is None:
            return added
        return tuple(np.concatenate(pair) for pair in zip(self._carried, added))  # type: ignore[return-value]

    def write(self, folder: Path) -> None:
        """Sorted term blob + offsets, and per-term runs of (doc, tf), documents ascending; terms
        left with no document are dropped."""
        term_ids, docs, tfs = self._arrays()
        encoded = [t.encode("utf-8") for t in self.ids]
        order = sorted(range(len(encoded)), key=encoded.__getitem__)  # nearly sorted when carried
        rank = np.empty(len(encoded), dtype=np.int32)
        rank[order] = np.arange(len(encoded), dtype=np.int32)
        term_rank = rank[term_ids]
        perm = np.lexsort((docs, term_rank))
        counts = np.bincount(term_rank, minlength=len(encoded))  # by rank
        nonempty = np.flatnonzero(counts)
        used = [order[r] for r in nonempty]
        lengths = np.array([len(encoded[i]) for i in used], dtype=np.int64)
        tf_arr = np.minimum(tfs, 65535).astype(np.uint16)
        (folder / "terms.bin").write_bytes(b"".join(encoded[i] for i in used))
        np.save(folder / "term_off.npy", np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
        np.save(folder / "post_off.npy", np.concatenate([[0], np.cumsum(counts[nonempty])]).astype(np.int64))
        np.save(folder / "post_doc.npy", docs[perm].astype(np.uint32))
        np.save(folder / "post_tf.npy", tf_arr[perm])
        doclen = np.bincount(docs, weights=tf_arr, minlength=self.n_docs) if self.n_docs else np.zeros(0)
        np.save(folder / "doclen.npy", doclen.astype(np.float32))


def write_generation(folder: Path, postings: PostingsBuilder, columns: dict[str, list], sketches: list) -> None:
    """Write one generation atomically (a temp folder renamed into place).

    Args:
        postings: the terms of documents 0, 1, 2 …
        columns: every name of COLUMNS -> one value per document.
        sketches: each document's near-duplicate keys (a list of ints, or them as stored: space-separated).
    """
    tmp = folder.with_name(folder.name + ".tmp")
    remove_tree(tmp)
    tmp.mkdir(parents=True)
    postings.write(tmp)
    _write_sketches(tmp, sketches)
    np.save(tmp / "score.npy", np.asarray(columns["score"], dtype=np.float32))
    np.save(tmp / "ts.npy", np.asarray(columns["ts"], dtype=np.float64))
    vocab = {}
    for name in CATEGORICAL:
        values = [v or "" for v in columns[name]]
        names = sorted(set(values))
        lookup = {v: i for i, v in enumerate(names)}
        np.save(tmp / f"cat_{name}.npy", np.array([lookup[v] for v in values], dtype=np.int32))
        vocab[name] = names
    (tmp / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    for path in tmp.iterdir():
        fsync_path(path)
    remove_tree(folder)
    os.replace(tmp, folder)


def _write_sketches(folder: Path, sketches: list) -> None:
    """dup_key.bin (sorted int64 keys) and dup_doc.bin (uint32 document of each), native byte order:
    the index's near-duplicate lookup bisects them without numpy."""
    lists = [k.split() if isinstance(k, str) else k for k in sketches]
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    keys = np.array([int(k) for keys in lists for k in keys], dtype=np.int64)
    docs = np.repeat(np.arange(len(lists), dtype=np.uint32), counts)
    order = np.argsort(keys, kind="stable")
    keys[order].tofile(folder / "dup_key.bin")
    docs[order].tofile(folder / "dup_doc.bin")


@dataclass
class _Generation:
    blob: bytes | mmap.mmap
    term_off: list[int] | np.ndarray
    post_off: np.ndarray
    post_doc: np.ndarray
    post_tf: np.ndarray
    # terms looked up, and where (a generation never changes: every snapshot of it shares what was found)
    found: dict[bytes, int] = field(default_factory=dict)

    def find(self, term: bytes) -> int:
        """Index of a term in the sorted blob, or -1 (binary search; UTF-8 bytes sort like code points)."""
        at = self.found.get(term)
        if at is None:
            if len(self.found) >= _MEMO_TERMS:
                self.found.clear()
            at = self.found[term] = self._search(term)
        return at

    def _search(self, term: bytes) -> int:
        off, blob = self.term_off, self.blob
        lo, hi = 0, len(off) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if blob[off[mid]:off[mid + 1]] < term:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(off) - 1 and blob[off[lo]:off[lo + 1]] == term:
            return lo
        return -1


@dataclass
class Snapshot:
    """One consistent reading of the index; never mutated after construction."""

    generation: int
    live: np.ndarray
    score: np.ndarray
    ts: np.ndarray
    codes: dict[str, np.ndarray]
    vocab: dict[str, list[str]]
    doclen: np.ndarray
    uses: np.ndarray
    last_use: np.ndarray
    entities: dict[str, list[tuple[str, str]]]
    base: _Generation | None
    # the delta's documents in order, each with its term counts as stored (text): a query looks its few
    # terms up in them, so a write costs the next snapshot one new row, not a rebuilt inverted index
    delta: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    n_base: int = 0
    stamp: tuple = ()  # the generation folder's identity (a rebuild may reuse its number)
    entity_rows: list[tuple[str, str]] = field(default_factory=list)  # what `entities` was made from
    access_version: str = ""  # the index's count of access folds when `uses` was read
    feedback: list[tuple] = field(default_factory=list)  # (doc, good, bad, ln decay) of the notes given feedback or decay
    policies: list[tuple] = field(default_factory=list)  # (doc, policy JSON) of the notes with a decay policy
    memo: dict = field(default_factory=dict)  # values derived from the snapshot, computed once

    def __post_init__(self) -> None:
        self.n_live = int(self.live.sum())
        self.avg_len = float(self.doclen[self.live].sum() / self.n_live) if self.n_live else 0.0

    @property
    def size(self) -> int:
        """Number of document slots (live or not)."""
        return len(self.live)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(docs, tf) of a term across the generation and the delta; dead docs are masked later."""
        parts_d, parts_t = [], []
        if self.base is not None:
            i = self.base.find(term.encode("utf-8"))
            if i >= 0:
                a, b = self.base.post_off[i], self.base.post_off[i + 1]
                parts_d.append(self.base.post_doc[a:b])
                parts_t.append(self.base.post_tf[a:b])
        extra = self._delta_postings(term) if self.delta else None
        if extra is not None:
            parts_d.append(extra[0])
            parts_t.append(extra[1])
        if not parts_d:
            return _EMPTY_DOCS, _EMPTY_TF
        if len(parts_d) == 1:
            return parts_d[0], parts_t[0]
        return np.concatenate(parts_d), np.concatenate(parts_t)

    def _delta_postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(docs, tf) of a term in the delta, None when no delta document has it (memoised)."""
        memo = self.memo.setdefault("delta_postings", {})
        if term in memo:
            return memo[term]
        if len(memo) > _MEMO_TERMS:
            memo.clear()
        hits = [(doc, terms[term]) for doc, terms in self.delta if term in terms]
        found = memo[term] = (np.array([doc for doc, _ in hits], dtype=np.uint32),
                              np.minimum(np.array([int(tf) for _, tf in hits]), 65535).astype(np.uint16)
                              ) if hits else None
        return found

    def code(self, column: str, value: str) -> int:
        """The code of a categorical value, or -1 when no note has it."""
        try:
            return self.vocab[column].index(value)
        except ValueError:
            return -1


def generation_stamp(folder: Path) -> tuple:
    """What tells one generation folder from another of the same number: a rebuild writes a new one."""
    st = os.stat(folder)
    return (st.st_ino, st.st_mtime_ns)


def _load_generation(folder: Path, n_docs: int | None = None
                     ) -> tuple[_Generation, dict[str, np.ndarray], dict[str, list[str]]]:
    """A generation's arrays, memory-mapped, checked to fit together (n_docs: the documents it must
    hold). Raises IndexDamaged when a file is unreadable or cut short (the bytes inside an array
    are not checked: that would cost reading them all), FileNotFoundError when one is missing."""
    gen, columns, vocab = _read_generation(folder)
    problem = _misfit(gen, columns, vocab, n_docs)
    if problem:
        raise IndexDamaged(f"{folder.name}: {problem}")
    return gen, columns, vocab


def _misfit(gen: _Generation, columns: dict[str, np.ndarray], vocab: dict[str, list[str]], n_docs: int | None
            ) -> str:
    """What does not fit together in a generation's arrays ("" when all does)."""
    if len(gen.term_off) < 1 or len(gen.post_off) != len(gen.term_off):
        return "term_off.npy and post_off.npy disagree"
    if gen.term_off[-1] != len(gen.blob):
        return "terms.bin is not as long as term_off.npy says"
    if not gen.post_off[-1] == len(gen.post_doc) == len(gen.post_tf):
        return "post_doc.npy or post_tf.npy is not as long as post_off.npy says"
    if not isinstance(vocab, dict) or not set(CATEGORICAL) <= set(vocab):
        return "vocab.json lacks a column"
    for name, column in columns.items():
        if n_docs is not None and len(column) != n_docs:
            return f"{name}.npy has {len(column)} rows, not {n_docs}"
    return ""


def _read_generation(folder: Path) -> tuple[_Generation, dict[str, np.ndarray], dict[str, list[str]]]:
    def arr(name: str) -> np.ndarray:
        try:
            return np.load(folder / f"{name}.npy", mmap_mode="r")
        except FileNotFoundError:
            raise
        except (OSError, ValueError, EOFError):  # a garbled header, an array cut short
            raise IndexDamaged(f"{folder.name}: {name}.npy is unreadable or cut short") from None

    with open(folder / "terms.bin", "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        blob = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    # plain ndarray views: indexing a np.memmap scalar by scalar is several times slower
    gen = _Generation(blob, arr("term_off").view(np.ndarray), arr("post_off").view(np.ndarray),
                      arr("post_doc").view(np.ndarray), arr("post_tf").view(np.ndarray))
    columns = {name: arr(name) for name in NUMERIC + ("doclen",)}
    columns.update({f"cat_{name}": arr(f"cat_{name}") for name in CATEGORICAL})
    try:
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    except ValueError:  # not UTF-8, or not JSON
        raise IndexDamaged(f"{folder.name}: vocab.json is unreadable") from None
    return gen, columns, vocab


def load_snapshot(folder: Path | None, n_base: int, next_doc: int, tombs: np.ndarray, delta_rows: list[tuple],
                  access: list[tuple], entities: list[tuple[str, str]], generation: int,
                  prev: Snapshot | None = None, access_version: str = "", feedback: list[tuple] = (),
                  policies: list[tuple] = ()) -> Snapshot:
    """Assemble a snapshot from a generation folder and the delta rows read in the same transaction
    (`prev`: the snapshot loaded before, whose entity names are kept if no entity changed).

    Each delta row is (doc, encoded terms, *COLUMNS values).
    """
    size = max(next_doc, n_base)
    base, cols, vocab = None, {}, {name: [] for name in CATEGORICAL}
    stamp: tuple = ()
    if folder is not None:
        base, cols, vocab = _load_generation(folder, n_base)
        stamp = generation_stamp(folder)
    score = _extend(cols.get("score"), size, np.float32)
    ts = _extend(cols.get("ts"), size, np.float64)
    doclen = _extend(cols.get("doclen"), size, np.float32)
    codes = {name: _extend(cols.get(f"cat_{name}"), size, np.int32) for name in CATEGORICAL}
    vocab = {name: list(vocab.get(name, [])) for name in CATEGORICAL}
    delta = _load_delta(delta_rows, score, ts, doclen, codes, vocab)
    live = _live(size, n_base, tombs, delta)
    uses, last_use = _uses(access, size)
    return Snapshot(generation, live, score, ts, codes, vocab, doclen, uses, last_use, _names(entities, prev), base,
                    delta, n_base, stamp, entities, access_version, list(feedback), list(policies))


def advance_snapshot(prev: Snapshot, next_doc: int, tombs: np.ndarray, in_delta: set[int], new_rows: list[tuple],
                     access: list[tuple], entities: list[tuple[str, str]], access_version: str = "",
                     all_uses: bool = True, feedback: list[tuple] = (), policies: list[tuple] = ()) -> Snapshot:
    """The snapshot after writes within prev's generation: the delta documents still in the delta
    (`in_delta`) are kept, the others dropped, and only the rows added since (`new_rows`, every doc
    past prev's) are read; equal to load_snapshot of the same state.

    `access` holds the uses of every note, or (all_uses False: no access was folded since prev) only
    those of the documents added since, the others kept from prev.
    """
    size = max(next_doc, prev.n_base)
    kept = [item for item in prev.delta if item[0] in in_delta]
    gone = np.array([doc for doc, _ in prev.delta if doc not in in_delta], dtype=np.int64)
    score, ts, doclen = (_extend(a, size, a.dtype) for a in (prev.score, prev.ts, prev.doclen))
    codes = {name: _extend(column, size, np.int32) for name, column in prev.codes.items()}
    for column in (score, ts, doclen, *codes.values()):
        column[gone] = 0  # as a fresh load leaves a slot no row fills
    vocab = {name: list(values) for name, values in prev.vocab.items()}
    delta = kept + _load_delta(new_rows, score, ts, doclen, codes, vocab)
    live = _live(size, prev.n_base, tombs, delta)
    if all_uses:
        uses, last_use = _uses(access, size)
    else:
        uses, last_use = _extend(prev.uses, size, np.float32), _extend(prev.last_use, size, np.float64)
        uses[~live], last_use[~live] = 0, 0  # a dropped document has no note row, so a fresh load reads none
        _set_uses(uses, last_use, access)
    return Snapshot(prev.generation, live, score, ts, codes, vocab, doclen, uses, last_use, _names(entities, prev),
                    prev.base, delta, prev.n_base, prev.stamp, entities, access_version, list(feedback), list(policies))


def _extend(column: np.ndarray | None, size: int, dtype) -> np.ndarray:
    out = np.zeros(size, dtype=dtype)
    if column is not None and len(column):
        out[:len(column)] = column
    return out


def _live(size: int, n_base: int, tombs: np.ndarray, delta: list[tuple[int, dict[str, str]]]) -> np.ndarray:
    """The generation's documents but the tombstoned ones, and the delta's."""
    live = np.zeros(size, dtype=bool)
    live[:n_base] = True
    if len(tombs):
        live[tombs[tombs < size]] = False
    live[np.fromiter((doc for doc, _ in delta), dtype=np.int64, count=len(delta))] = True
    return live


def _uses(access: list[tuple], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Folded use counts and last use times per document, from (doc, uses, last) rows."""
    uses = np.zeros(size, dtype=np.float32)
    last_use = np.zeros(size, dtype=np.float64)
    _set_uses(uses, last_use, access)
    return uses, last_use


def _set_uses(uses: np.ndarray, last_use: np.ndarray, access: list[tuple]) -> None:
    if access:
        rows = np.array(access, dtype=np.float64)
        docs = rows[:, 0].astype(np.int64)
        inside = docs < len(uses)
        uses[docs[inside]], last_use[docs[inside]] = rows[inside, 1], rows[inside, 2]


def _load_delta(rows, score, ts, doclen, codes, vocab) -> list[tuple[int, dict[str, str]]]:
    """Fill the columns of the delta rows' documents; returns each one's term counts (doc order)."""
    docs = []
    lookups = {name: {v: i for i, v in enumerate(vocab[name])} for name in CATEGORICAL}
    for doc, blob, *values in rows:
        row = dict(zip(COLUMNS, values))
        score[doc] = row["score"] or 0.0
        ts[doc] = row["ts"] or 0.0
        for name in CATEGORICAL:
            value = row[name] or ""
            if value not in lookups[name]:
                lookups[name][value] = len(vocab[name])
                vocab[name].append(value)
            codes[name][doc] = lookups[name][value]
        terms, counts = split_terms(blob)
        doclen[doc] = sum(map(int, counts))
        docs.append((doc, dict(zip(terms, counts))))
    return docs


def _names(entities: list[tuple[str, str]], prev: Snapshot | None) -> dict[str, list[tuple[str, str]]]:
    """The entity name buckets, those of prev when its entities are the same."""
    return prev.entities if prev is not None and prev.entity_rows == entities else _entity_names(entities)


def _entity_names(entities: list[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """Entity names and aliases (normalised, 2+ chars) bucketed by their first two characters,
    each bucket longest first: (name, link key of the entity)."""
    buckets: dict[str, list[tuple[str, str]]] = {}
    for title, aliases in entities:
        key = link_key(title)
        for name in [title] + (aliases.split("\n") if aliases else []):
            norm = text.normalize(str(name)).strip()
            if len(norm) >= 2:
                buckets.setdefault(norm[:2], []).append((norm, key))
    for bucket in buckets.values():
        bucket.sort(key=lambda pair: -len(pair[0]))
    return buckets


def named_entities(buckets: dict[str, list[tuple[str, str]]], query_norm: str) -> list[str]:
    """Link keys of the entities a normalised query names, in order of appearance, each once."""
    return list(dict.fromkeys(key for _, _, key in entity_mentions(buckets, query_norm)))


def entity_mentions(buckets: dict[str, list[tuple[str, str]]], query_norm: str) -> list[tuple[int, str, str]]:
    """(where, name, link key) of every entity name or alias a normalised query holds, in order."""
    found = []
    for i in range(len(query_norm) - 1):
        for name, key in buckets.get(query_norm[i:i + 2], ()):
            if query_norm.startswith(name, i):
                found.append((i, name, key))
    return found


__all__ = ["CATEGORICAL", "COLUMNS", "NUMERIC", "PostingsBuilder", "Snapshot", "advance_snapshot",
           "entity_mentions", "generation_stamp", "load_snapshot", "named_entities", "write_generation"]
