"""Pure ranking arithmetic: decay, strength, BM25 and channel fusion (numbers in, numbers out).

The rule, documented once here and in the README:

    strength   = (score + min(uses x reward, max_reward)) x feedback
    effective  = strength x max(0.5 ** (hours since t_ref / half_life), decay_floor)
                 t_ref = the later of the write and the last recorded use
                 half_life: the note's own (`half_life:`, inf when `pinned: true`), else its lifecycle's
                 feedback, decay_floor: text/decay.py (1 and 0 for a note without them)
    final      = sum over channels of weight_c x channel_c        (fusion "weighted")
               = sum over channels of weight_c / (rrf_k + rank_c)  (fusion "rrf")

Every channel is in 0..1: lexical is BM25 divided by the best BM25 of the query, strength is
effective / 10. With the default weights (lexical 1.0, strength 0.15) decay can move a memory
by at most 0.15, so a strongly relevant old memory is never buried under weak recent ones:
decay is a prior, not a wall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

SECONDS_PER_HOUR = 3600.0
MAX_SCORE = 10.0


def half_life_hours(lifecycle: str | None, table: Mapping[str, float | None]) -> float:
    """The half-life of a lifecycle in hours; `inf` when it never decays."""
    key = lifecycle if lifecycle in table else "default"
    value = table.get(key, 30.0)
    return math.inf if value is None or value <= 0 else float(value)


def decay(age_hours: np.ndarray | float, half_life: np.ndarray | float) -> np.ndarray:
    """0.5 ** (age / half_life); ages below zero count as zero, an infinite half-life as no decay."""
    age = np.maximum(np.asarray(age_hours, dtype=np.float64), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.where(np.isinf(half_life), 0.0, age / half_life)
    return np.exp2(-exponent)  # 0.5 ** x, about 5x faster than np.power over a recall's candidates


def strength(score: np.ndarray | float, uses: np.ndarray | float, reward: float, max_reward: float,
             feedback: np.ndarray | float = 1.0) -> np.ndarray:
    """Base score plus a capped reward per recorded use, times a feedback weight."""
    bonus = np.minimum(np.asarray(uses, dtype=np.float64) * reward, max_reward)
    return (np.asarray(score, dtype=np.float64) + bonus) * feedback


def effective(score: np.ndarray | float, uses: np.ndarray | float, written: np.ndarray | float,
              last_use: np.ndarray | float, now: float, half_life: np.ndarray | float,
              reward: float, max_reward: float, feedback: np.ndarray | float = 1.0,
              floor: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Strength decayed from the later of write and last use (reading resets the clock).

    Args:
        written, last_use, now: POSIX seconds (last_use 0 when never used).
        half_life: hours (inf for permanent or pinned).
        feedback: the strength multiplier of hindsight feedback (decay.feedback_weight).
        floor: the least decay factor (a note's decay_floor).
    Returns:
        (effective score, the decay factor applied).
    """
    return decayed(strength(score, uses, reward, max_reward, feedback), written, last_use, now, half_life, floor)


def decayed(strong: np.ndarray | float, written: np.ndarray | float, last_use: np.ndarray | float, now: float,
            half_life: np.ndarray | float, floor: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """A strength decayed from the later of write and last use, as effective() does: (effective, factor)."""
    t_ref = np.maximum(written, last_use)
    factor = np.maximum(decay((now - t_ref) / SECONDS_PER_HOUR, half_life), floor)
    return strong * factor, factor


def idf(df: int, n_docs: int) -> float:
    """BM25 inverse document frequency; df is capped at n_docs (postings may still hold
    replaced notes until the next compaction), so no term weighs zero or less."""
    df = min(df, n_docs)
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25(tf: np.ndarray, doc_len: np.ndarray, avg_len: float, term_idf: float | np.ndarray, k1: float,
         b: float) -> np.ndarray:
    """BM25 weight of one term for each document of its posting list (term_idf may also hold one
    weight per entry, to score several terms' postings in one pass)."""
    tf = tf.astype(np.float32)
    norm = k1 * (1.0 - b + b * (doc_len / max(avg_len, 1e-9)))
    return term_idf * tf * (k1 + 1.0) / (tf + norm)


def group_bm25(doc_groups: np.ndarray, tf: np.ndarray, group_len: np.ndarray, avg_len: float, n_groups: int,
               k1: float, b: float) -> np.ndarray:
    """BM25 weight of one term for every group of documents (an episode) taken as one text.

    Args:
        doc_groups: the group of each document of the term's posting list.
        tf: the term's count in each of those documents.
        group_len: the summed length of each group's documents; its size is the number of groups.
        n_groups: how many groups hold any text (for the term's idf).
    """
    group_tf = np.bincount(doc_groups, weights=tf, minlength=len(group_len))
    df = int(np.count_nonzero(group_tf))
    return bm25(group_tf, group_len, avg_len, idf(df, n_groups), k1, b)


def feedback_weights(documents: Sequence[Mapping[str, int]], relevance: Sequence[float]) -> dict[str, float]:
    """How strongly the best documents of a first pass speak for each of their terms (a relevance model):
    the sum over documents of relevance x tf / document length, relevance scaled so the best is 1.

    >>> feedback_weights([{"a": 2, "b": 2}, {"a": 1}], [2.0, 1.0])
    {'a': 1.0, 'b': 0.5}
    """
    top = max(relevance, default=0.0)
    weights: dict[str, float] = {}
    for counts, rel in zip(documents, relevance, strict=True):
        size = sum(counts.values())
        if top <= 0 or size == 0:
            continue
        share = rel / top / size
        for term, count in counts.items():
            weights[term] = weights.get(term, 0.0) + share * count
    return weights


def normalise(values: np.ndarray) -> np.ndarray:
    """Scale to 0..1 by the maximum (all zeros stay zeros)."""
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else np.zeros_like(values)


def fuse_weighted(channels: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """Sum of each channel (already 0..1) times its weight."""
    total = None
    for name, values in channels.items():
        part = weights.get(name, 0.0) * values
        total = part if total is None else total + part
    return total if total is not None else np.zeros(0)


def fuse_rrf(channels: Mapping[str, np.ndarray], weights: Mapping[str, float], k: float) -> np.ndarray:
    """Reciprocal-rank fusion: weight / (k + rank) per channel; a channel scoring 0 adds nothing."""
    total = None
    for name, values in channels.items():
        order = np.argsort(-values, kind="stable")
        rank = np.empty(len(values), dtype=np.float64)
        rank[order] = np.arange(1, len(values) + 1)
        part = np.where(values > 0, weights.get(name, 0.0) / (k + rank), 0.0)
        total = part if total is None else total + part
    return total if total is not None else np.zeros(0)


def top_k(values: np.ndarray, k: int, then: np.ndarray | None = None) -> np.ndarray:
    """Indices of the k largest values, best first (equal values by index). Which of the values tied
    with the k-th make the cut must not depend on the index order (two clones of one vault number their
    notes differently): with `then` (a second key, e.g. each note's time) the larger `then` goes first,
    and the values tied on both keys at the cut are all taken when they are few (up to 4k), for the
    caller to order by a key of its own (a note's path); without `then`, all values tied with the k-th,
    when few. Beyond that, index order decides (a bound on the work, for ties in the thousands)."""
    if k >= len(values):
        part = np.arange(len(values))
    elif k <= 0:
        part = np.zeros(0, dtype=np.int64)
    else:
        kth = values[np.argpartition(-values, k - 1)[k - 1]]
        above = np.flatnonzero(values > kth)
        tied = np.flatnonzero(values == kth)
        need = k - len(above)
        if len(tied) > need:
            if then is not None:
                tied = tied[np.argsort(-then[tied], kind="stable")]
                cut = then[tied[need - 1]]
                boundary = np.count_nonzero(then[tied] >= cut)
                tied = tied[:boundary] if boundary <= 4 * k else tied[:need]
            elif len(tied) > 4 * k:
                tied = tied[:need]
        part = np.concatenate([above, tied])
    return part[np.lexsort((part, -values[part]))]


__all__ = ["MAX_SCORE", "SECONDS_PER_HOUR", "bm25", "decay", "decayed", "effective", "feedback_weights",
           "fuse_rrf", "fuse_weighted", "group_bm25", "half_life_hours", "idf", "normalise", "strength", "top_k"]
