"""Pseudo-relevance feedback: the query expanded by the words of the memories it finds first.

A query names a thing one way; the memories it finds first show how the vault names it and what goes
with it. Their strongest words (not the query's own) score the candidates once more, so among them those
that also say "pets" rise for "dogs". Candidates stay those the query's own words found. Every choice
here is ordered so that two clones of one vault, whose indexes number their notes differently, expand a
query alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..text import scoring
from ..text import terms as text
from ..text.scoring import top_k
from . import READ_CHARS
from .candidates import Candidates

if TYPE_CHECKING:
    from ..settings import RankingSettings
    from ..store.index.snapshot import Snapshot

__all__ = ["feedback"]

_FEEDBACK_SHORTLIST = 2  # feedback candidates whose idf is looked up, per term kept
_MEMO_TERMS = 4096       # memories whose terms a snapshot keeps for feedback


def feedback(snap: Snapshot, docs: Candidates, lexical: np.ndarray, terms: list[str], cfg: RankingSettings,
             rows: Callable[..., dict | None]) -> np.ndarray:
    """BM25, over the candidates, of the terms that mark the first pass's best memories, each weighted by
    its strength relative to the strongest (so at most 1 per term): one value per candidate (placed
    `docs`), zero everywhere when the first pass found nothing."""
    picked = _feedback_terms(snap, docs.docs, lexical, terms, cfg, rows)
    if not picked:
        return np.zeros(len(docs), dtype=np.float32)
    n = max(snap.n_live, 1)
    places, hit_docs, term_weight, tfs = [], [], [], []
    for weight, term_docs, tf in picked:
        at, inside = docs.within(term_docs)
        places.append(at)
        hit_docs.append(term_docs[inside])
        tfs.append(tf[inside])
        term_weight.append(np.full(len(at), weight / picked[0][0] * scoring.idf(len(term_docs), n), dtype=np.float32))
    found = np.concatenate(hit_docs)
    weights = scoring.bm25(np.concatenate(tfs), snap.doclen[found], snap.avg_len, np.concatenate(term_weight),
                           cfg.bm25_k1, cfg.bm25_b)
    return np.bincount(np.concatenate(places), weights=weights, minlength=len(docs)).astype(np.float32)


def _memory_terms(snap: Snapshot, wanted: np.ndarray, rows: Callable[..., dict | None]) -> list[Counter] | None:
    """The word terms of these memories' bodies (their first READ_CHARS characters), read once per snapshot
    (the best memories of one query are often the best of the next); None when the index moved to another
    generation."""
    memo = snap.memo.setdefault("memory_terms", {})
    missing = [int(d) for d in wanted if int(d) not in memo]
    if missing:
        found = rows(missing, snap.generation)
        if found is None:
            return None
        if len(memo) + len(missing) > _MEMO_TERMS:
            memo.clear()
        for doc in missing:
            memo[doc] = Counter(text.terms(found[doc]["body"][:READ_CHARS])) if doc in found else Counter()
    return [memo[int(d)] for d in wanted]


def _best_voters(snap: Snapshot, docs: np.ndarray, lexical: np.ndarray, n: int,
                 rows: Callable[..., dict | None]) -> np.ndarray:
    """Indices of the n best candidates by lexical score, best first; among equal scores the newest,
    then the greatest path, so neither the choice nor the order depends on how the index happens to
    number its documents (two clones of one vault number theirs differently) or on ids' random bits."""
    best = top_k(lexical, n, snap.ts[docs])
    if not len(best):
        return best
    stamps = snap.ts[docs[best]]
    keys = list(zip(lexical[best].tolist(), stamps.tolist()))
    if len(set(keys)) < len(keys):  # equal score and time: the paths decide (one lookup of a few rows)
        found = rows([int(d) for d in docs[best]], snap.generation) or {}
        paths = [found.get(int(d), {}).get("path", "") for d in docs[best]]
        best = best[sorted(range(len(best)), key=lambda j: (-keys[j][0], -keys[j][1], _desc(paths[j])))]
    else:
        best = best[np.lexsort((-stamps, -lexical[best]))]
    best = best[:n]
    return best[lexical[best] > 0]


def _desc(value: str) -> tuple[int, ...]:
    """A sort key that orders strings from greatest to least."""
    return tuple(-ord(ch) for ch in value)


def _feedback_terms(snap: Snapshot, docs: np.ndarray, lexical: np.ndarray, terms: list[str], cfg: RankingSettings,
                    rows: Callable[..., dict | None]) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """(weight, docs, tf) of the feedback_terms strongest terms that are not the query's, strongest
    first: the feedback_docs best memories vote for their terms (scoring.feedback_weights), and a
    vote counts times the term's idf, so words every memory has do not lead."""
    best = _best_voters(snap, docs, lexical, int(cfg.feedback_docs), rows)
    counts = _memory_terms(snap, docs[best], rows)
    if counts is None:
        return []  # the index moved on: the recall starts again on a new snapshot
    votes = scoring.feedback_weights(counts, [float(lexical[i]) for i in best])
    for term in terms:
        votes.pop(term, None)
    n_terms, n = int(cfg.feedback_terms), max(snap.n_live, 1)
    picked = []
    # idf only for the likeliest few: each lookup is a binary search of the term blob
    memo = snap.memo.setdefault("feedback_postings", {})
    if len(memo) > _MEMO_TERMS:
        memo.clear()
    # equal votes go by the term itself, not by the order the voters came in (which follows the
    # index's numbering of its documents: two clones of one vault must expand a query alike)
    for term in sorted(votes, key=lambda term: (-votes[term], term))[:_FEEDBACK_SHORTLIST * n_terms]:
        term_docs, tf = memo[term] if term in memo else memo.setdefault(term, snap.postings(term))
        if len(term_docs) > 1:  # a term of one memory only finds that memory again
            picked.append((votes[term] * scoring.idf(len(term_docs), n), term, term_docs, tf))
    picked.sort(key=lambda item: (-item[0], item[1]))
    return [(weight, term_docs, tf) for weight, _, term_docs, tf in picked[:n_terms]]
