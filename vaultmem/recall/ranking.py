"""recall: a query -> channels (lexical, tags, graph, source, episode, contiguity, question, strength)
-> one fused, explainable ranking."""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from . import episodic, hindsight
from .workingset import Entry
from ..text import scoring
from ..text.scoring import top_k
from ..text import terms as text
from ..errors import VaultmemError
from ..settings import FrozenMap
from ..store.index.records import LINK_PREFIX, QUESTION_TERM, TAG_PREFIX
from ..store.index.snapshot import Snapshot, named_entities

if TYPE_CHECKING:
    from ..settings import RankingSettings, Settings
    from ..store.store import Store

HIDDEN_STATUSES = ("superseded", "archived", "candidate")
_RECENT = text.LazyPattern(r"\b(latest|recent|recently|newest|last time|lately|most recent)\b|最近|上次|最新|近来|近期|刚才")
_MAX_ENTITY_HITS = 8
SHARED = "shared"  # the namespace every agent reads (SPEC §8)
ALL_NAMESPACES = "*"


@dataclass
class Query:
    """What to recall; every filter is optional."""

    text: str = ""
    tags: list[str] = field(default_factory=list)
    limit: int | None = None
    type: str | None = None
    source: str | None = None
    namespace: str | list[str] | None = None  # several: any of them; None: visible_namespaces(); "*": all
    lifecycle: str | None = None
    status: list[str] | None = None   # None: everything but superseded, archived and candidate
    include: list[str] = field(default_factory=list)  # hidden statuses to show as well
    since: float | None = None        # POSIX seconds
    until: float | None = None
    kinds: tuple[str, ...] = ("memory",)
    now: float | None = None
    record_access: bool | None = None  # None: as configured (reinforcement.record_access)
    explain: bool = False  # also find what decay alone kept out of the top k (Hits.suppressed)


@dataclass
class Hit:
    """One recalled memory with every number that ranked it."""

    id: str
    path: str
    title: str
    content: str
    tags: list[str]
    source: str
    lifecycle: str
    timestamp: str
    score: float
    effective: float
    final: float
    type: str = ""
    value: str = ""
    status: str = ""
    namespace: str = ""
    decay: float = 1.0
    channels: dict[str, float] = field(default_factory=dict)
    feedback: dict[str, Any] = field(default_factory=dict)  # {} or {weight, up, down} (hindsight feedback)
    policy: dict[str, Any] = field(default_factory=dict)    # the note's own half_life_hours, decay_floor, pinned

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form (documented in the README)."""
        return asdict(self)


class Hits(list):
    """recall's hits, best first. With Query.explain, `suppressed` lists the strong lexical matches
    that decay alone kept out of them (hindsight.suppressed); else it is empty."""

    suppressed: list[dict[str, Any]]

    def __init__(self, hits=(), suppressed: list[dict[str, Any]] | None = None):
        super().__init__(hits)
        self.suppressed = suppressed or []


def visible_namespaces(settings: Settings, given: str | list[str] | None) -> list[str] | None:
    """The namespaces a recall reads (None: every one).

    Given none, a caller reads `shared` and its own namespace, never other agents' private notes: its
    own is $VAULTMEM_NAMESPACE (how a process says which agent it is), else the vault's default
    namespace (config defaults.namespace, where a write without a namespace goes); and the notes that
    have none (an unparsable one). `"*"` (alone or in
    a list) reads every namespace, as a person reviewing the vault may; any other name reads only it.
    """
    if given is None:
        own = os.environ.get("VAULTMEM_NAMESPACE", "").strip() or str(settings.defaults.namespace)
        # "": a note whose frontmatter cannot be read has no namespace, and must not drop out of recall
        return list(dict.fromkeys([SHARED, own, ""]))
    names = [given] if isinstance(given, str) else list(given)
    return None if ALL_NAMESPACES in names else names


def recall(vault: Store, query: Query) -> Hits:
    """Rank the vault's memories for a query; records access events for the hits when configured.

    It reads the namespaces of visible_namespaces(): by default `shared` and the caller's own."""
    query = replace(query, namespace=visible_namespaces(vault.settings, query.namespace))
    config = hindsight.ranking_config(vault)
    cfg = config.ranking
    limit = int(query.limit or cfg.limit)
    now = time.time() if query.now is None else query.now
    vault.index.catch_up(wait=False)  # a clone, a pull, a copied note: seen without a full refresh
    hot = vault.working_set  # a long-lived process's working set: the `working` channel (recall/workingset.py)
    if hot is not None:
        cfg = cfg._replace(weights=FrozenMap({**cfg.weights, "working": vault.settings.working_set.weight}))
        config = config._replace(ranking=cfg)
    for _ in range(3):
        snap = vault.index.snapshot()
        hot_docs = None if hot is None else hot.docs(snap.live, lambda ids: _docs_of(vault, ids))
        ranked = _rank(snap, query, config, now, vault.index.rows, hot_docs)
        if ranked is None:
            return Hits()
        hits = _hits(vault, snap, query, *ranked, limit, cfg)
        if hits is not None:
            break
    else:
        raise VaultmemError("the index kept changing during recall; try again")
    record = vault.settings.reinforcement.record_access if query.record_access is None else query.record_access
    if record and hits:
        vault.record_access([h.id for h in hits], now)
    if hot is not None and record:  # hits recorded as uses are used: the best one ends most recent
        hot.promote(Entry(h.id, h.path, h.title) for h in reversed(hits))
    return hits


def _docs_of(vault: Store, ids: list[str]) -> dict[str, int]:
    """The index document of each of these memory ids that the index has."""
    marks = ", ".join("?" * len(ids))
    # by id alone: with `kind = ...` too, SQLite walks the kind index over every memory
    rows = vault.index.select_notes(f"id IN ({marks})", tuple(ids), order="doc", columns=("id", "doc", "kind"))
    return {r["id"]: int(r["doc"]) for r in rows if r["kind"] == "memory"}


# How far the memories' lengths (in terms) spread, 0..1: 0 while their coefficient of variation is
# at most SPREAD_LOW (chat turns between two people, one-line facts), 1 from SPREAD_HIGH on (short user
# turns among long assistant replies). Two defaults follow it (chosen across corpora, see bench/README.md,
# "Choosing the defaults across corpora"):
# - `bm25_b: auto` is B_ALIKE at 0 and B_SPREAD at 1: weak normalisation lets a long reply that repeats
#   the question's words bury the short statement that answers it;
# - the question channel's weight fades to 0 at 1: beside an assistant, the user's turns are questions
#   that carry the user's facts ("I'm flying to Osaka with my 4-year-old. Any tips?").
B_ALIKE, B_SPREAD = 0.3, 0.9
SPREAD_LOW, SPREAD_HIGH = 0.5, 0.9  # in terms: LoCoMo ~0.22, REALTALK 0.3-0.5; half user turns, half replies 10x longer ~0.9


def length_spread(snap: Snapshot) -> float:
    """The spread of the snapshot's memory lengths, 0..1 (memoised: lengths change with the snapshot)."""
    found = snap.memo.get("length_spread")
    if found is None:
        lengths = snap.doclen[snap.live & (snap.codes["kind"] == snap.code("kind", "memory"))]
        mean = float(lengths.mean()) if len(lengths) else 0.0
        variation = float(lengths.std()) / mean if mean > 0 else 0.0
        found = snap.memo["length_spread"] = min(max((variation - SPREAD_LOW) / (SPREAD_HIGH - SPREAD_LOW), 0.0), 1.0)
    return found


def length_b(snap: Snapshot) -> float:
    """`b` for `bm25_b: auto`."""
    return B_ALIKE + (B_SPREAD - B_ALIKE) * length_spread(snap)


def _visible(snap: Snapshot, q: Query) -> np.ndarray:
    """Live notes of the wanted kinds and statuses (memoised per snapshot: the common case is free)."""
    key = ("visible", tuple(q.kinds), tuple(q.status) if q.status is not None else None, tuple(sorted(q.include)))
    mask = snap.memo.get(key)
    if mask is None:
        mask = snap.live & np.isin(snap.codes["kind"], [snap.code("kind", k) for k in q.kinds])
        if q.status is None:
            hidden = [snap.code("status", s) for s in HIDDEN_STATUSES if s not in q.include]
            mask &= ~np.isin(snap.codes["status"], hidden)
        else:
            mask &= np.isin(snap.codes["status"], [snap.code("status", s) for s in q.status])
        snap.memo[key] = mask
    return mask


def _filter(snap: Snapshot, q: Query, docs: np.ndarray) -> np.ndarray:
    """The candidates that pass the query's filters."""
    docs = docs[_visible(snap, q)[docs]]
    for column in ("type", "source", "namespace", "lifecycle"):
        wanted = getattr(q, column)
        if isinstance(wanted, (list, tuple)):
            docs = docs[np.isin(snap.codes[column][docs], [snap.code(column, w) for w in wanted])]
        elif wanted is not None:
            docs = docs[snap.codes[column][docs] == snap.code(column, wanted)]
    if q.since is not None:
        docs = docs[snap.ts[docs] >= q.since]
    if q.until is not None:
        docs = docs[snap.ts[docs] <= q.until]
    return docs


def _lexical(snap: Snapshot, lists: list[tuple[str, np.ndarray, np.ndarray]], cfg: RankingSettings) -> np.ndarray:
    """BM25 over the query's terms; very common ones are skipped when rarer ones exist."""
    scores = np.zeros(snap.size, dtype=np.float32)
    n = max(snap.n_live, 1)
    common = cfg.common_term_ratio * n
    rare = [item for item in lists if len(item[1]) <= common]
    avg_len = snap.avg_len
    for _, docs, tf in (rare or lists):
        weight = scoring.bm25(tf, snap.doclen[docs], avg_len, scoring.idf(len(docs), n), cfg.bm25_k1, cfg.bm25_b)
        scores[docs] += weight
    return scores


def _tag_postings(snap: Snapshot, q: Query, terms: list[str]) -> tuple[list[np.ndarray], np.ndarray | None, int]:
    """Posting lists of the query's tags and tag-named words, the docs carrying every --tag, and the count."""
    wanted = [t for t in (text.normalize_tag(t) for t in q.tags) if t]
    required = None
    found = []
    for tag in wanted:
        docs = snap.postings(TAG_PREFIX + tag)[0]
        required = docs if required is None else np.intersect1d(required, docs, assume_unique=True)
        found.append(docs)
    words = [t for t in terms if t not in wanted]
    written = text.unstemmed(q.text) if words else {}
    for word in words:  # one slot per query word: its stem or the word as written names the tag
        docs = snap.postings(TAG_PREFIX + word)[0]
        for variant in written.get(word, ()):
            docs = np.union1d(docs, snap.postings(TAG_PREFIX + variant)[0])
        found.append(docs)
    return found, required, len(wanted) + len(words)


def _graph_postings(snap: Snapshot, query_norm: str) -> list[np.ndarray]:
    """Memories linking to each entity the query names by title or alias (one hop)."""
    keys = named_entities(snap.entities, query_norm)[:_MAX_ENTITY_HITS]
    return [snap.postings(LINK_PREFIX + " ".join(key.split()))[0] for key in keys]


def _half_lives(snap: Snapshot, table: Mapping[str, float | None], docs: np.ndarray) -> np.ndarray:
    per_code = np.array([scoring.half_life_hours(v, table) for v in snap.vocab["lifecycle"]] or [np.inf])
    return per_code[snap.codes["lifecycle"][docs]]


def _dense(snap: Snapshot, docs: np.ndarray) -> np.ndarray:
    mark = np.zeros(snap.size, dtype=bool)
    mark[docs] = True
    return mark


def _count(snap: Snapshot, lists: list[np.ndarray]) -> np.ndarray:
    counts = np.zeros(snap.size, dtype=np.float32)
    for docs in lists:
        counts[docs] += 1.0
    return counts


def _rank(snap: Snapshot, q: Query, config: Settings, now: float, rows: Callable[..., dict | None],
          hot: np.ndarray | None = None):
    """Candidates with their channel values, effective strength and decay; None when nothing matches.

    Candidates come from the posting lists the query touches (never a pass over every note,
    except for a recall with neither text nor tags, which ranks every visible note by strength).
    `rows` is Index.rows: feedback reads the text of the first pass's best memories. `hot`: the
    documents of a working set (a `working` channel), None without one.
    """
    cfg = config.ranking
    if cfg.bm25_b == "auto":
        cfg = cfg._replace(bm25_b=length_b(snap))
    query_norm = text.normalize(q.text).strip()
    terms = text.query_terms(q.text) if query_norm else []
    lists = [(t, *snap.postings(t)) for t in terms]
    unknown = any(not len(item[1]) for item in lists)
    lists = [item for item in lists if len(item[1])]
    tag_lists, required, n_tags = _tag_postings(snap, q, terms)
    graph_lists = _graph_postings(snap, query_norm) if query_norm else []
    if query_norm:
        touched = np.zeros(snap.size, dtype=bool)  # a dense mark beats sorting long posting lists
        for docs in [item[1] for item in lists] + tag_lists + graph_lists:
            touched[docs] = True
        if required is not None:
            touched &= _dense(snap, required)
        docs = np.flatnonzero(touched)
    elif required is not None:
        docs = required
    else:
        docs = np.flatnonzero(snap.live)
    docs = _filter(snap, q, docs.astype(np.int64))
    if not len(docs):
        return None
    lexical_all = _lexical(snap, lists, cfg) if lists else None
    lexical = lexical_all[docs] if lists else np.zeros(len(docs), dtype=np.float32)
    if lists and cfg.feedback_weight > 0:
        lexical_all = lexical_all + cfg.feedback_weight * _feedback(snap, docs, lexical, terms, cfg, rows)
        lexical = lexical_all[docs]
    contiguity = np.zeros(len(docs), dtype=np.float32)
    if lists and cfg.weights.get("contiguity", 0) > 0 and lexical.max() > 0:
        near, lent = episodic.contiguity(snap, docs, lexical / lexical.max())
        if len(near):
            keep = np.isin(near, _filter(snap, q, near))
            near, lent = near[keep], lent[keep]
            docs = np.union1d(docs, near)
            lexical = lexical_all[docs]
            contiguity = np.zeros(len(docs), dtype=np.float32)
            contiguity[np.searchsorted(docs, near)] = lent
    tags = _count(snap, tag_lists)[docs] / n_tags if n_tags else np.zeros(len(docs), dtype=np.float32)
    graph = np.minimum(_count(snap, graph_lists)[docs], 1.0)
    prior = strength_prior(snap, docs, config, now)
    relevance = scoring.normalise(lexical)
    channels = {
        "lexical": relevance,
        "tags": tags,
        "graph": graph,
        "source": _source_channel(snap, docs, query_norm),
        "episode": episodic.episode_relevance(snap, _visible(snap, q), docs, lists, cfg),
        "contiguity": contiguity,
        "question": _questions(snap)[docs],
        "strength": np.clip(prior.effective / scoring.MAX_SCORE, 0.0, 1.0),
    }
    if hot is not None:  # only with a working set: a one-off process ranks (and explains) as before
        channels["working"] = np.isin(docs, hot).astype(np.float32)
    return docs, channels, prior, unknown


def effective_strength(vault: Store) -> Callable[[Snapshot, np.ndarray, float], np.ndarray]:
    """The effective score of documents as this vault's recall rates them now (gc's measure)."""
    config = hindsight.ranking_config(vault)
    return lambda snap, docs, now: strength_prior(snap, docs, config, now).effective


def strength_prior(snap: Snapshot, docs: np.ndarray, config: Settings, now: float) -> hindsight.Prior:
    """Effective strength and decay of these documents, with their own policy, feedback and decay events
    (what ranking weighs, and what gc compares with its threshold)."""
    r = config.reinforcement
    half_life, floor, weight = hindsight.note_decay(snap, docs, _half_lives(snap, config.half_life_hours, docs),
                                                    config.ranking)
    strong = scoring.strength(snap.score[docs], snap.uses[docs], r.reward, r.max_reward, weight)
    eff, dec = scoring.decayed(strong, snap.ts[docs], snap.last_use[docs], now, half_life, floor)
    return hindsight.Prior(eff, dec, weight, strong)


def _weights(cfg: RankingSettings, query_text: str, snap: Snapshot) -> dict[str, float]:
    weights = dict(cfg.weights)
    weights["question"] *= 1.0 - length_spread(snap)
    if _RECENT.search(text.normalize(query_text)):
        weights["strength"] = cfg.recency_weight
    return weights


def _hits(vault: Store, snap: Snapshot, q: Query, docs, channels, prior: hindsight.Prior, unknown: bool, limit: int,
          cfg: RankingSettings) -> Hits | None:
    """Fuse, take the best, rescore the short list with rapidfuzz when a query word is unknown
    (typo tolerance), fetch rows; None if the index moved to another generation meanwhile."""
    weights = _weights(cfg, q.text, snap)
    final = _fuse(channels, weights, cfg)
    fuzzy_n = int(cfg.fuzzy_rescore) if unknown else 0
    wanted = max(limit, fuzzy_n)
    while True:
        scored = _short_list(vault, snap, q, docs, channels, final, top_k(final, wanted, snap.ts[docs]), fuzzy_n, cfg)
        # notes the index names but whose files are not there yet (a batch creating them right now)
        # or any more drop out: look further down rather than answer with fewer hits than asked
        if scored is None or len(scored) >= limit or wanted >= len(final):
            break
        wanted *= 4
    if scored is None:
        return None
    # equal scores go to the newer memory, then by path (the same file on every machine), never by
    # the index's row order (two clones index their notes in different orders and must answer alike)
    # nor by id (ids written within one millisecond are in random order)
    scored.sort(key=lambda item: (item[0], item[2]["ts"], item[2]["path"]), reverse=True)
    hits = [_hit(snap, row, parts, total, prior, i, int(docs[i])) for total, _, row, parts, i in scored[:limit]]
    if not q.explain:
        return Hits(hits)
    undecayed = {**channels, "strength": np.clip(prior.undecayed / scoring.MAX_SCORE, 0.0, 1.0)}
    hidden = hindsight.suppressed(vault.index.rows, snap.generation, docs, channels["lexical"], prior.decay,
                                  top_k(_fuse(undecayed, weights, cfg), limit), {h.id for h in hits})
    return None if hidden is None else Hits(hits, hidden)


def _fuse(channels: dict[str, np.ndarray], weights: dict[str, float], cfg: RankingSettings) -> np.ndarray:
    if cfg.fusion == "rrf":
        return scoring.fuse_rrf(channels, weights, cfg.rrf_k)
    return scoring.fuse_weighted(channels, weights)


def _short_list(vault: Store, snap: Snapshot, q: Query, docs, channels, final, top, fuzzy_n: int, cfg: RankingSettings):
    """(score, rank, row, channel parts, doc index) of the top documents whose notes are on disk;
    None if the index moved to another generation meanwhile."""
    rows = vault.index.rows(docs[top], snap.generation)
    if rows is None:
        return None
    fuzzy = _fuzzy(q.text, [rows.get(int(docs[i])) for i in top]) if fuzzy_n else None
    scored = []
    root = os.path.join(str(vault.root), "")
    for j, i in enumerate(top):
        row = rows.get(int(docs[i]))
        if row is None:
            continue  # changed or removed since the snapshot: the next recall sees its new form
        if not os.path.exists(root + row["path"]):
            continue  # deleted by hand, or indexed by a batch killed before it wrote the note: a refresh drops it
        parts = {name: float(values[i]) for name, values in channels.items()}
        total = float(final[i])
        if fuzzy is not None:
            parts["fuzzy"] = float(fuzzy[j])
            total += cfg.fuzzy_weight * parts["fuzzy"]
        scored.append((total, j, row, parts, i))
    return scored


def _fuzzy(query: str, rows: list[dict | None]) -> np.ndarray:
    """rapidfuzz partial-ratio of the query against each short-listed note (typo tolerance)."""
    from rapidfuzz import fuzz

    q = text.normalize(query)
    return np.array([fuzz.partial_ratio(q, text.normalize(r["title"] + " " + r["body"])) / 100.0 if r else 0.0
                     for r in rows])


def _hit(snap: Snapshot, row: dict[str, Any], parts: dict[str, float], final: float, prior: hindsight.Prior, i: int,
         doc: int) -> Hit:
    eff, dec = float(prior.effective[i]), float(prior.decay[i])
    weight = float(prior.feedback if np.isscalar(prior.feedback) else prior.feedback[i])
    stamp = row["stamp"]
    if not stamp:
        stamp = dt.datetime.fromtimestamp(row["ts"]).astimezone().isoformat(timespec="seconds")
    return Hit(id=row["id"], path=row["path"], title=row["title"], content=row["body"].strip(), tags=row["tags"],
               source=row["source"], lifecycle=row["lifecycle"], timestamp=str(stamp), score=float(row["score"]),
               effective=round(eff, 6), final=round(final, 6), type=row["type"], value=row["value"],
               status=row["status"], namespace=row["namespace"], decay=round(dec, 6),
               channels={k: round(v, 6) for k, v in parts.items()}, feedback=hindsight.hit_feedback(snap, doc, weight),
               policy=hindsight.hit_policy(row))


_FEEDBACK_SHORTLIST = 2  # feedback candidates whose idf is looked up, per term kept
_MEMO_TERMS = 4096       # memories whose terms a snapshot keeps for feedback


def _feedback(snap: Snapshot, docs: np.ndarray, lexical: np.ndarray, terms: list[str], cfg: RankingSettings,
              rows: Callable[..., dict | None]) -> np.ndarray:
    """Pseudo-relevance feedback: BM25, over the candidates, of the terms that mark the first pass's
    best memories, each weighted by its strength relative to the strongest (so at most 1 per term).

    A query names a thing one way; the memories it finds first show how the vault names it and what
    goes with it, so among the candidates those that also say "pets" rise for "dogs". Candidates stay
    those the query's own words found. Zero everywhere when the first pass found nothing.
    """
    picked = _feedback_terms(snap, docs, lexical, terms, cfg, rows)
    if not picked:
        return np.zeros(snap.size, dtype=np.float32)
    n = max(snap.n_live, 1)
    candidate = _dense(snap, docs)
    parts = [(weight / picked[0][0] * scoring.idf(len(term_docs), n), term_docs[candidate[term_docs]],
              tf[candidate[term_docs]]) for weight, term_docs, tf in picked]
    hit_docs = np.concatenate([d for _, d, _ in parts])
    term_weight = np.concatenate([np.full(len(d), w, dtype=np.float32) for w, d, _ in parts])
    weights = scoring.bm25(np.concatenate([tf for _, _, tf in parts]), snap.doclen[hit_docs], snap.avg_len,
                           term_weight, cfg.bm25_k1, cfg.bm25_b)
    return np.bincount(hit_docs, weights=weights, minlength=snap.size).astype(np.float32)


def _memory_terms(snap: Snapshot, wanted: np.ndarray, rows: Callable[..., dict | None]) -> list[Counter] | None:
    """The word terms of these memories' bodies, read once per snapshot (the best memories of
    one query are often the best of the next); None when the index moved to another generation."""
    memo = snap.memo.setdefault("memory_terms", {})
    missing = [int(d) for d in wanted if int(d) not in memo]
    if missing:
        found = rows(missing, snap.generation)
        if found is None:
            return None
        if len(memo) + len(missing) > _MEMO_TERMS:
            memo.clear()
        for doc in missing:
            memo[doc] = Counter(text.terms(found[doc]["body"])) if doc in found else Counter()
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


def _questions(snap: Snapshot) -> np.ndarray:
    """1.0 for the memories whose text ends with a question, else 0 (memoised per snapshot)."""
    found = snap.memo.get("questions")
    if found is None:
        found = snap.memo["questions"] = _dense(snap, snap.postings(QUESTION_TERM)[0]).astype(np.float32)
    return found


def _source_names(snap: Snapshot) -> list[tuple[re.Pattern[str], int]]:
    """A pattern per source name (normalised, 3+ characters, whole words for Latin script)."""
    found = snap.memo.get("source_names")
    if found is None:
        found = []
        for code, name in enumerate(snap.vocab["source"]):
            norm = text.normalize(name).strip()
            if len(norm) >= 3:
                found.append((re.compile(rf"(?<![\w]){re.escape(norm)}(?![\w])" if norm.isascii() else re.escape(norm)),
                              code))
        snap.memo["source_names"] = found
    return found


def _source_channel(snap: Snapshot, docs: np.ndarray, query_norm: str) -> np.ndarray:
    """1 for candidates written by a source the query names ("what did Caroline say …")."""
    named = [code for pattern, code in _source_names(snap) if query_norm and pattern.search(query_norm)]
    return np.isin(snap.codes["source"][docs], named).astype(np.float32) if named else np.zeros(len(docs), np.float32)


__all__ = ["ALL_NAMESPACES", "HIDDEN_STATUSES", "Hit", "Hits", "Query", "SHARED", "effective_strength",
           "length_b", "length_spread", "recall", "strength_prior", "visible_namespaces"]
