"""The episodic channels of recall: a memory's session as a whole (BM25 of the query over every
memory of the episode taken as one text), and contiguity (relevance lent to the memories written
just before and after a relevant one in the same episode). Over the snapshot's numpy columns; no IO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..text import scoring
from ..text.scoring import top_k

if TYPE_CHECKING:
    from ..settings import RankingSettings
    from ..store.index.snapshot import Snapshot

__all__ = ["contiguity", "episode_order", "episode_relevance"]

_NEIGHBOURS = ((-2, 0.5), (-1, 1.0), (1, 1.0), (2, 0.5))  # (offset in the episode, share of relevance)
_CONTIGUITY_SOURCES = 100


def episode_order(snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
    """Documents sorted by (episode, time) and each document's place in that order (memoised)."""
    found = snap.memo.get("episode_order")
    if found is None:
        order = np.lexsort((snap.ts, snap.codes["episode"]))
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        found = snap.memo["episode_order"] = (order, place)
    return found


def contiguity(snap: Snapshot, docs: np.ndarray, relevance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relevance lent to the neighbours written just before and after a relevant memory in the
    same episode (session), as recalling an event brings back what surrounded it.

    Returns (neighbour documents, the relevance each is lent: the most any neighbour lends).
    """
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    no_episode = snap.code("episode", "")
    if len(snap.vocab["episode"]) <= (1 if no_episode >= 0 else 0):
        return empty  # no memory names an episode
    best = top_k(relevance, _CONTIGUITY_SOURCES)
    src, value = docs[best], relevance[best]
    episode = snap.codes["episode"]
    order, place = episode_order(snap)
    near_all, lent_all = [], []
    for offset, share in _NEIGHBOURS:
        at = place[src] + offset
        inside = (at >= 0) & (at < len(order))
        near, origin = order[at[inside]], src[inside]
        same = (episode[near] == episode[origin]) & (episode[origin] != no_episode) & (value[inside] > 0)
        near_all.append(near[same])
        lent_all.append(value[inside][same] * share)
    near, lent = np.concatenate(near_all), np.concatenate(lent_all)
    if not len(near):
        return empty
    order_by = np.lexsort((-lent, near))  # per neighbour, the largest loan first
    near, lent = near[order_by], lent[order_by]
    first = np.ones(len(near), dtype=bool)
    first[1:] = near[1:] != near[:-1]
    return near[first], lent[first]


def _episode_lengths(snap: Snapshot, visible: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Each episode's summed length over its visible memories, the mean over episodes with text, and
    their number (memoised per snapshot and mask); the no-episode group has length 0."""
    key = ("episode_lengths", id(visible))  # the mask lives in the same memo: its id stays its own
    found = snap.memo.get(key)
    if found is None:
        lengths = np.bincount(snap.codes["episode"], weights=snap.doclen * visible, minlength=len(snap.vocab["episode"]))
        no_episode = snap.code("episode", "")
        if no_episode >= 0:
            lengths[no_episode] = 0.0
        filled = int(np.count_nonzero(lengths))
        found = snap.memo[key] = (lengths, float(lengths.sum()) / max(filled, 1), filled)
    return found


def episode_relevance(snap: Snapshot, visible: np.ndarray, docs: np.ndarray,
                       lists: list[tuple[str, np.ndarray, np.ndarray]], cfg: RankingSettings) -> np.ndarray:
    """How relevant each candidate's whole episode (session) is: BM25 of the query over the episode's
    visible memories taken as one text, scaled so the best episode is 1; 0 for memories that name
    no episode. An episode whose memories share the query's words between them rises together."""
    lengths, avg_len, filled = _episode_lengths(snap, visible)
    if not filled or not lists:
        return np.zeros(len(docs), dtype=np.float32)
    codes = snap.codes["episode"]
    totals = np.zeros(len(lengths))
    for _, term_docs, tf in lists:
        seen = visible[term_docs]
        totals += scoring.group_bm25(codes[term_docs[seen]], tf[seen], lengths, avg_len, filled,
                                     cfg.bm25_k1, cfg.bm25_b)
    return scoring.normalise(totals)[codes[docs]].astype(np.float32)
