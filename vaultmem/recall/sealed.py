"""Recall over encrypted notes: the index knows none of their words (store/index/records.py indexes a
sealed note by its clear properties only), so when the caller has given the passphrase, the encrypted
notes it may read are opened in memory and ranked there, by the channels that the main ranking fuses
(lexical BM25 over their own terms, tags, the strength prior with its decay) and the same weights, then
merged into the hits by their fused score. Without the passphrase a recall never returns them.

An opened note's terms stay in this process's memory (keyed by file, bytes and passphrase), never on
disk: a long-lived process opens each note once, a one-off command pays one scrypt and one AES-GCM
decryption per note (bench: README "Encrypted notes").
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import NoteFormatError, SealBroken, WrongPassphrase
from ..store.index.records import SEALED_TYPE, TAG_PREFIX, Record, build_record, content_hash, index_terms
from ..text import scoring
from ..text import terms as text
from ..text.times import local_iso
from .hindsight import hit_policy

if TYPE_CHECKING:
    from ..store.store import Store

__all__ = ["found_sealed", "one_scale", "opened_memory", "opened_records", "passes", "passes_opened", "ranked"]

_OPENED: OrderedDict[tuple[str, str, bytes], Record] = OrderedDict()  # (file, sha, passphrase digest) -> record
_OPENED_MAX = 20_000
_LOCK = threading.Lock()
_COLUMNS = ("doc", "id", "path", "sha", "status", "namespace", "lifecycle", "ts", "score", "policy")


def opened_records(vault: Store, passphrase: str, rows: list[dict[str, Any]]) -> list[tuple[dict, Record]]:
    """(row, the record of its opened note) for each sealed note's index row that opens with this passphrase;
    one that is not under it, or fails authentication, is passed over (doctor names those)."""
    digest = hashlib.sha256(passphrase.encode("utf-8")).digest()
    root = f"{vault.root}/"
    out = []
    for row in rows:
        cache = (root + row["path"], row["sha"], digest)
        with _LOCK:
            rec = _OPENED.get(cache)
        if rec is None:
            rec = _open(vault, passphrase, row)
            if rec is None:
                continue
            with _LOCK:
                _OPENED[cache] = rec
                while len(_OPENED) > _OPENED_MAX:
                    _OPENED.popitem(last=False)
        out.append((row, rec))
    return out


def _open(vault: Store, passphrase: str, row: dict[str, Any]) -> Record | None:
    from ..notes.note import parse_note
    from ..store.crypto import open_note

    path = vault.root / row["path"]
    try:
        data = path.read_bytes()
        if content_hash(data) != row["sha"]:
            return None  # saved since it was indexed: the next refresh indexes it again
        title, plain = open_note(passphrase, parse_note(data, row["path"]))
    except (OSError, NoteFormatError, WrongPassphrase, SealBroken):
        return None
    kind, role = vault.kind_of(path)
    rec = build_record(plain.encode("utf-8"), row["path"], kind, role, (0, 0), vault.settings.defaults,
                       max_chars=vault.settings.write.max_text_chars)
    rec.title = title
    rec.terms = index_terms(rec)
    return rec


def found_sealed(vault: Store, query: Any, cfg: Any, weights: dict[str, float], prior: Callable, hidden: tuple,
                 limit: int) -> list[tuple[dict[str, Any], Counter]]:
    """The `limit` best encrypted notes a ranking.Query finds, as the fields of a ranking.Hit each with the
    note's terms (ranking makes the Hits; it imports this module): opened with the keyring's passphrase,
    filtered, scored by `cfg`'s BM25, the tags and `prior(docs)` (the main ranking's strength prior: effective
    score and decay), fused by `weights`.
    `hidden`: the statuses a recall leaves out unless asked. [] without a passphrase."""
    passphrase = vault.keyring.passphrase()
    if passphrase is None or "memory" not in query.kinds:
        return []
    rows = [r for r in vault.index.select_notes("type = ? AND +kind = 'memory'", (SEALED_TYPE,), columns=_COLUMNS)
            if passes(r, query, hidden)]
    if not rows:
        return []
    opened = [(row, rec) for row, rec in opened_records(vault, passphrase, rows) if passes_opened(rec, query)]
    return ranked(opened, query, cfg, weights, prior, limit)


def one_scale(hits: list[Any], query_text: str, sealed: dict[str, Counter], stats: tuple[Callable, int, float],
              cfg: Any, weight: float) -> None:
    """Put the lexical channel of the main ranking's hits and of the encrypted ones on one scale, in place:
    each set's BM25 was normalised by its own best, so one word matched in a clear note weighed as much as
    the whole query matched in an encrypted one. BM25 of every hit again, with the index's document
    frequencies, note count and mean length plus the encrypted notes' own (`stats`: df_of(term), notes,
    mean length; `sealed`: an encrypted hit's terms by id), normalised by the best of all; `final` moves by
    the channel's weight times the change."""
    terms = list(dict.fromkeys(text.query_terms(query_text))) if text.normalize(query_text).strip() else []
    if not terms or not hits:
        return
    df_of, n_index, avg_len = stats
    counts = [sealed.get(h.id) or Counter(text.terms("\n".join([h.title, h.content, " ".join(h.tags)]))) for h in hits]
    lengths = np.array([sum(c.values()) for c in counts], dtype=np.float32)
    b = 0.75 if cfg.bm25_b == "auto" else float(cfg.bm25_b)
    raw = np.zeros(len(hits), dtype=np.float32)
    for term in terms:
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float32)
        df = df_of(term) + sum(1 for c in sealed.values() if c.get(term))
        if df:
            idf = scoring.idf(df, n_index + len(sealed))
            raw += np.where(tf > 0, scoring.bm25(tf, lengths, avg_len or float(lengths.mean()), idf, cfg.bm25_k1, b), 0)
    lexical = scoring.normalise(raw)
    for hit, value in zip(hits, lexical.tolist()):
        hit.final = round(hit.final + weight * (value - hit.channels.get("lexical", 0.0)), 6)
        hit.channels["lexical"] = round(value, 6)


def passes(row: dict[str, Any], q: Any, hidden: tuple) -> bool:
    """The query's filters on what the index holds in clear."""
    status = row["status"] or "active"
    if q.status is not None:
        if status not in q.status:
            return False
    elif status in hidden and status not in q.include:
        return False
    if q.namespace is not None and row["namespace"] not in (q.namespace if isinstance(q.namespace, list) else [q.namespace]):
        return False
    if q.lifecycle is not None and row["lifecycle"] != q.lifecycle:
        return False
    return (q.since is None or row["ts"] >= q.since) and (q.until is None or row["ts"] <= q.until)


def passes_opened(rec: Record, q: Any) -> bool:
    """The query's filters on what only the opened note says (type, source, every --tag)."""
    if q.type is not None and rec.type != q.type:
        return False
    if q.source is not None and rec.source != q.source:
        return False
    held = {text.normalize_tag(t) for t in rec.tags}
    return all(text.normalize_tag(t) in held for t in q.tags)


def ranked(opened: list[tuple[dict, Record]], q: Any, cfg: Any, weights: dict[str, float], prior: Callable,
            limit: int) -> list[tuple[dict[str, Any], Counter]]:
    """The opened notes the query's words or tags find (all of them for an empty query), scored by the main
    ranking's channels and weights."""
    terms = text.query_terms(q.text) if text.normalize(q.text).strip() else []
    wanted_tags = [TAG_PREFIX + t for t in (text.normalize_tag(t) for t in [*q.tags, *terms]) if t]
    counts = [rec.terms for _, rec in opened]
    lexical = _bm25(counts, terms, cfg)
    tags = np.array([sum(1 for t in wanted_tags if c.get(t)) / len(wanted_tags) if wanted_tags else 0.0
                     for c in counts], dtype=np.float32)
    keep = np.flatnonzero((lexical > 0) | (tags > 0)) if (terms or q.tags) else np.arange(len(opened))
    if not len(keep):
        return []
    effective, decay = prior(np.array([int(opened[i][0]["doc"]) for i in keep], dtype=np.int64))
    channels = {"lexical": scoring.normalise(lexical[keep]), "tags": tags[keep],
                "strength": np.clip(effective / scoring.MAX_SCORE, 0.0, 1.0).astype(np.float32)}
    final = scoring.fuse_weighted(channels, weights)
    best = scoring.top_k(final, limit)  # only the best become hits (a query's words may be in every note)
    keep, final, channels = keep[best], final[best], {k: v[best] for k, v in channels.items()}
    effective, decay = effective[best], decay[best]
    return [(_hit(opened[i], float(final[j]), {k: float(v[j]) for k, v in channels.items()}, float(effective[j]),
                  float(decay[j])), opened[i][1].terms) for j, i in enumerate(keep)]


def _bm25(counts: list[Counter], terms: list[str], cfg: Any) -> np.ndarray:
    """BM25 of each opened note over the query's terms, within the opened notes."""
    scores = np.zeros(len(counts), dtype=np.float32)
    if not terms or not counts:
        return scores
    lengths = np.array([sum(c.values()) for c in counts], dtype=np.float32)
    avg = float(lengths.mean()) if len(lengths) else 0.0
    b = 0.75 if cfg.bm25_b == "auto" else float(cfg.bm25_b)
    for term in dict.fromkeys(terms):
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float32)
        df = int(np.count_nonzero(tf))
        if df:
            scores += np.where(tf > 0, scoring.bm25(tf, lengths, avg, scoring.idf(df, len(counts)), cfg.bm25_k1, b), 0)
    return scores


def _hit(item: tuple[dict, Record], final: float, channels: dict[str, float], effective: float, decay: float
         ) -> dict[str, Any]:
    row, rec = item
    stamp = rec.stamp or local_iso(rec.ts)
    return dict(id=rec.id, path=rec.path, title=rec.title, content=rec.body.strip(), tags=list(rec.tags),
               source=rec.source, lifecycle=rec.lifecycle, timestamp=str(stamp), score=float(rec.score),
               effective=round(effective, 6), final=round(final, 6), type=rec.type, value=rec.value,
               status=rec.status, namespace=rec.namespace, decay=round(decay, 6),
               channels={**{k: round(v, 6) for k, v in channels.items()}, "encrypted": 1.0},
               policy=hit_policy(row))


def opened_memory(vault: Store, row: dict[str, Any]) -> Any:
    """The catalog.Memory of a sealed note, opened with the keyring's passphrase. Raises WrongPassphrase,
    SealBroken (naming the note), NoteFormatError."""
    from ..notes.note import parse_note
    from ..store.crypto import open_note
    from .catalog import memory_from_row

    passphrase = vault.keyring.passphrase(required=True, why=f"reading {row['path']}")
    path = vault.root / row["path"]
    title, plain = open_note(passphrase, parse_note(vault.read_current(path, row["sha"]), row["path"]))
    kind, role = vault.kind_of(path)
    rec = build_record(plain.encode("utf-8"), row["path"], kind, role, (0, 0), vault.settings.defaults,
                       max_chars=None)
    opened = {**row, "title": title, "body": rec.body, "tags": rec.tags, "source": rec.source, "type": rec.type,
              "value": rec.value, "links": rec.links, "aliases": rec.aliases, "stamp": rec.stamp}
    return memory_from_row(opened, parse_note(plain, row["path"]).meta)
