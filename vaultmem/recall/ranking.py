"""recall: a query -> channels (lexical, tags, graph, source, episode, contiguity, question, strength, and
semantic when asked for) -> one fused, explainable ranking."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from . import READ_CHARS, episodic, expansion, hindsight
from .candidates import Candidates, keep_heap, union
from .workingset import Entry
from ..text import scoring
from ..text.scoring import top_k
from ..text import terms as text
from ..text.times import local_iso
from ..errors import VaultmemError
from ..settings import FrozenMap
from ..store.index.records import LINK_PREFIX, QUESTION_TERM, SEALED_TYPE, TAG_PREFIX
from ..store.index.snapshot import Snapshot, named_entities

if TYPE_CHECKING:
    from ..settings import RankingSettings, Settings
    from ..store.store import Store

HIDDEN_STATUSES = ("superseded", "archived", "candidate")
_RECENT = text.LazyPattern(r"\b(latest|recent|recently|newest|last time|lately|most recent)\b|最近|上次|最新|近来|近期|刚才")
_MAX_ENTITY_HITS = 8
SEMANTIC_ENV = "VAULTMEM_SEMANTIC"


@dataclass
class Query:
    """What to recall; every filter is optional."""

    text: str = ""
    tags: list[str] = field(default_factory=list)
    limit: int | None = None
    type: str | None = None
    source: str | None = None
    namespace: str | list[str] | None = None  # several: any of them; None: the caller's default (Store.namespaces); "*": all it may read
    lifecycle: str | None = None
    status: list[str] | None = None   # None: everything but superseded, archived and candidate
    include: list[str] = field(default_factory=list)  # hidden statuses to show as well
    since: float | None = None        # POSIX seconds
    until: float | None = None
    kinds: tuple[str, ...] = ("memory",)
    now: float | None = None
    record_access: bool | None = None  # None: as configured (reinforcement.record_access)
    explain: bool = False  # also find what decay alone kept out of the top k (Hits.suppressed)
    semantic: bool | None = None  # also by meaning (recall/semantic.py); None: $VAULTMEM_SEMANTIC, else semantic.enabled
    as_of: float | None = None  # POSIX seconds: answer as the vault stood then (recall/asof.py)


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
    as_of: dict[str, Any] = field(default_factory=dict)  # {} or, for Query.as_of: date, dated_by, written, status, text

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form (documented in the README). Not asdict, whose deep copy costs ~10x
        this: a server answers ten hits a recall, hundreds of recalls a second."""
        out = {name: getattr(self, name) for name in _HIT_FIELDS}
        out.update(tags=list(self.tags), channels=dict(self.channels), feedback=dict(self.feedback),
                   policy=dict(self.policy), as_of=dict(self.as_of))  # flat: a copy each, as asdict made
        return out


_HIT_FIELDS = tuple(f.name for f in fields(Hit))


class Hits(list):
    """recall's hits, best first. With Query.explain, `suppressed` lists the strong lexical matches
    that decay alone kept out of them (hindsight.suppressed); else it is empty."""

    suppressed: list[dict[str, Any]]
    rewritten: list[str]  # vault paths of short-listed notes whose files changed since they were indexed
    history: str = ""  # with Query.as_of: what git could say of the notes' past text, in words

    def __init__(self, hits=(), suppressed: list[dict[str, Any]] | None = None, rewritten: list[str] | None = None):
        super().__init__(hits)
        self.suppressed = suppressed or []
        self.rewritten = rewritten or []


def recall(vault: Store, query: Query) -> Hits:
    """Rank the vault's memories for a query; records access events for the hits when configured.

    It reads the namespaces its caller may (store/caller.py): by default `shared` and the caller's own."""
    query = replace(query, namespace=vault.namespaces(query.namespace))
    config = hindsight.ranking_config(vault)
    cfg = config.ranking
    limit = int(query.limit or cfg.limit)
    now = time.time() if query.now is None else query.now
    if query.as_of is not None:  # the moment is "now" for decay; nothing is recorded, no working set weighs
        now = float(query.as_of)
    keep_heap()
    vault.index.catch_up(wait=False)  # a clone, a pull, a copied note: seen without a full refresh
    hot = vault.working_set if query.as_of is None else None  # `working` channel (recall/workingset.py)
    if hot is not None:
        config = _weighing(config, "working", vault.settings.working_set.weight)
    meaning = _meaning(vault, query)
    if meaning is not None:  # only then: with semantic off a recall ranks (and explains) as before
        config = _weighing(config, "semantic", vault.settings.semantic.weight)
    cfg = config.ranking
    reread = False
    then = None
    for _ in range(4):
        snap = vault.index.snapshot()
        if query.as_of is not None:
            from .asof import past

            then = past(vault, snap, now)
            snap = then.snap
        hot_docs = None if hot is None else hot.docs(snap.live, lambda ids: _docs_of(vault, ids))
        rows = _row_reader(vault, snap)
        ranked = _rank(snap, query, config, now, rows, hot_docs, meaning)
        if ranked is None:
            hits = Hits()
            break
        hits = _hits(vault, snap, rows, query, *ranked, limit, cfg)
        if hits is None:
            continue
        if hits.rewritten and not reread:  # saved in place since indexed: read them, rank again
            reread = True
            if not vault.index.refresh_paths(hits.rewritten, wait=False).skipped:
                continue
        break
    else:
        raise VaultmemError("the index kept changing during recall; try again")
    if vault.keyring.passphrase() is not None:  # encrypted notes, opened in memory (recall/sealed.py)
        hits = _with_sealed(vault, query, hits, limit, now, config, snap, then)
    if then is not None:
        hits = _as_of(vault, query, hits, limit, now, config, then)
    record = vault.settings.reinforcement.record_access if query.record_access is None else query.record_access
    if then is not None:  # a look at the past is no use of a memory now
        record = False
    if record and hits:
        vault.record_access([h.id for h in hits], now)
    if hot is not None and record:  # hits recorded as uses are used: the best one ends most recent
        hot.promote(Entry(h.id, h.path, h.title) for h in reversed(hits))
    return hits


def _weighing(config: Settings, channel: str, weight: float) -> Settings:
    """The ranking settings with one more channel weighed (a working set, the semantic channel)."""
    cfg = config.ranking
    return config._replace(ranking=cfg._replace(weights=FrozenMap({**cfg.weights, channel: weight})))


def _meaning(vault: Store, q: Query) -> Callable[[Snapshot, np.ndarray], Any] | None:
    """The semantic channel's search for this query (semantic.Near of a snapshot and the mask of what the
    query may see), None when semantic recall is off or there is no text. Embeds the query first, so a
    missing extra fails before anything is read, then a bounded number of the notes not embedded yet.
    An as-of recall is by words alone: the vectors are of today's texts, mapped to today's documents."""
    if not q.text.strip() or q.as_of is not None or not semantic_on(vault, q.semantic):
        return None
    from . import semantic  # here, not above: with semantic off no embedding code is imported

    settings = vault.settings.semantic
    vector = semantic.query_vector(q.text)
    semantic.catch_up(vault, vault.index.snapshot(), int(settings.embed_inline))
    return lambda snap, allowed: semantic.nearest(vault, snap, vector, allowed, int(settings.candidates))


def semantic_on(vault: Store, asked: bool | None) -> bool:
    """Whether a recall searches by meaning: what the call asked, else $VAULTMEM_SEMANTIC, else semantic.enabled."""
    if asked is not None:
        return asked
    given = os.environ.get(SEMANTIC_ENV, "").strip().lower()
    if given:
        return given in ("1", "true", "yes", "on")
    return bool(vault.settings.semantic.enabled)


def _prior(snap: Snapshot, config: Settings, now: float) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The strength prior of documents ranked apart from the index (encrypted notes, past versions)."""
    def prior(docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        inside = docs < snap.size  # a note indexed after this snapshot: no uses or feedback known yet
        found = strength_prior(snap, np.where(inside, docs, 0), config, now)
        return np.where(inside, found.effective, 0.0), np.where(inside, found.decay, 1.0)
    return prior


def _with_sealed(vault: Store, q: Query, hits: Hits, limit: int, now: float, config: Settings, snap: Snapshot,
                 then: Any = None) -> Hits:
    """The hits with the encrypted notes the query finds (recall/sealed.py), merged by their fused score;
    with `then` (an as-of recall), only those written by then."""
    from .sealed import found_sealed

    weights = _weights(config.ranking, q.text, snap)
    found = found_sealed(vault, q, config.ranking, weights, _prior(snap, config, now), HIDDEN_STATUSES, limit)
    if then is not None:
        found = [(fields, terms) for fields, terms in found if then.born.get(fields["id"], now) <= then.moment]
    return _merged(hits, found, q, config, snap, weights, limit)


def _as_of(vault: Store, q: Query, hits: Hits, limit: int, now: float, config: Settings, then: Any) -> Hits:
    """An as-of recall's hits: with the notes edited since, ranked by their text then (recall/asof.py), each
    saying what dated it and its status then."""
    from .sealed import passes, passes_opened, ranked

    if then.old and "memory" in q.kinds:
        weights = _weights(config.ranking, q.text, then.snap)
        opened = [(row, rec) for row, rec in then.old if passes(row, q, HIDDEN_STATUSES) and passes_opened(rec, q)]
        found = ranked(opened, q, config.ranking, weights, _prior(then.snap, config, now), limit) if opened else []
        for fields, _ in found:
            fields["channels"].pop("encrypted", None)
        hits = _merged(hits, found, q, config, then.snap, weights, limit)
    for hit in hits:
        hit.as_of = then.told(hit.id)
        hit.status = hit.as_of.get("status", hit.status)
    hits.history = then.git
    return hits


def _merged(hits: Hits, found: list, q: Query, config: Settings, snap: Snapshot, weights: dict[str, float],
            limit: int) -> Hits:
    """Hits ranked apart from the index (fields and terms each) merged into the index's, on one lexical scale."""
    from .sealed import one_scale

    if not found:
        return hits
    extra = [Hit(**fields) for fields, _ in found]
    stats = (lambda term: len(snap.postings(term)[0]), snap.n_live, snap.avg_len)
    one_scale([*hits, *extra], q.text, {h.id: terms for h, (_, terms) in zip(extra, found)}, stats, config.ranking,
              weights.get("lexical", 0.0))
    merged = sorted([*hits, *extra], key=lambda h: (h.final, h.timestamp, h.path), reverse=True)
    return Hits(merged[:limit], hits.suppressed, hits.rewritten)


ROW_FIELDS = ("id", "path", "title", "body", "tags", "source", "lifecycle", "stamp", "ts", "score", "type", "value",
              "status", "namespace", "policy", "mtime_ns", "size")  # what a recall reads of a note's row
_MEMO_ROWS = 2048  # rows a snapshot keeps


def _row_reader(vault: Store, snap: Snapshot) -> Callable[..., dict | None]:
    """Index.rows (of ROW_FIELDS) through the snapshot's memo: within one snapshot a document's row does
    not change (a changed note is a new document), and one query's best notes are often the next's."""
    memo = snap.memo.setdefault("rows", {})

    def rows(docs, generation: int) -> dict[int, dict[str, Any]] | None:
        docs = [int(d) for d in docs]
        out = {d: row for d in docs if (row := memo.get(d)) is not None}
        missing = [d for d in docs if d not in out]
        if missing:
            found = vault.index.rows(missing, generation, ROW_FIELDS)
            if found is None:
                return None
            if len(memo) + len(found) > _MEMO_ROWS:
                memo.clear()
            memo.update(found)
            out.update(found)
        return out
    return rows


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
        mask = snap.live & _having(snap, "kind", q.kinds) & ~_having(snap, "type", (SEALED_TYPE,))  # recall/sealed.py
        if q.status is None:
            mask &= ~_having(snap, "status", [s for s in HIDDEN_STATUSES if s not in q.include])
        else:
            mask &= _having(snap, "status", q.status)
        snap.memo[key] = mask
    return mask


def _having(snap: Snapshot, column: str, names) -> np.ndarray:
    """Whether each document's value of a categorical column is one of these names: a lookup of each
    document's code in a table of the column's codes (a gather, several times cheaper than np.isin)."""
    table = np.zeros(len(snap.vocab[column]) + 1, dtype=bool)
    for name in names:
        code = snap.code(column, name)
        if code >= 0:
            table[code] = True
    return table[snap.codes[column]]


_FILTERED = ("type", "source", "namespace", "lifecycle")
_MASKS = 16  # filter masks a snapshot keeps (each one bool per document)


def _passing(snap: Snapshot, q: Query) -> np.ndarray:
    """The visible notes that pass the query's categorical filters, one mask per snapshot and filter
    set: the namespaces every recall reads cost nothing per query once it is made."""
    wanted = tuple((c, tuple(v) if isinstance(v, (list, tuple)) else v) for c in _FILTERED
                   if (v := getattr(q, c)) is not None)
    if not wanted:
        return _visible(snap, q)
    key = ("passing", tuple(q.kinds), tuple(q.status) if q.status is not None else None, tuple(sorted(q.include)),
           wanted)
    masks = snap.memo.setdefault("passing", {})
    mask = masks.get(key)
    if mask is None:
        mask = _visible(snap, q).copy()
        for column, value in wanted:
            mask &= _having(snap, column, value if isinstance(value, tuple) else (value,))
        if len(masks) >= _MASKS:
            masks.clear()
        masks[key] = mask
    return mask


def _filter(snap: Snapshot, q: Query, docs: np.ndarray) -> np.ndarray:
    """The candidates that pass the query's filters."""
    docs = docs[_passing(snap, q)[docs]]
    if q.since is not None:
        docs = docs[snap.ts[docs] >= q.since]
    if q.until is not None:
        docs = docs[snap.ts[docs] <= q.until]
    return docs


def _lexical(snap: Snapshot, lists: list[tuple[str, np.ndarray, np.ndarray]], cfg: RankingSettings,
             docs: Candidates) -> np.ndarray:
    """BM25 of the candidates over the query's terms; very common ones are skipped when rarer ones exist."""
    scores = np.zeros(len(docs), dtype=np.float32)
    n = max(snap.n_live, 1)
    common = cfg.common_term_ratio * n
    rare = [item for item in lists if len(item[1]) <= common]
    avg_len = snap.avg_len
    for _, term_docs, tf in (rare or lists):
        at, inside = docs.within(term_docs)
        weight = scoring.bm25(tf[inside], snap.doclen[term_docs[inside]], avg_len, scoring.idf(len(term_docs), n),
                              cfg.bm25_k1, cfg.bm25_b)
        scores[at] += weight
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
        variants = [snap.postings(TAG_PREFIX + variant)[0] for variant in written.get(word, ())]
        found.append(union([docs, *variants]) if any(len(v) for v in variants) else docs)
    return found, required, len(wanted) + len(words)


def _graph_postings(snap: Snapshot, query_norm: str) -> list[np.ndarray]:
    """Memories linking to each entity the query names by title or alias (one hop)."""
    keys = named_entities(snap.entities, query_norm)[:_MAX_ENTITY_HITS]
    return [snap.postings(LINK_PREFIX + " ".join(key.split()))[0] for key in keys]


def _half_lives(snap: Snapshot, table: Mapping[str, float | None], docs: np.ndarray) -> np.ndarray:
    per_code = np.array([scoring.half_life_hours(v, table) for v in snap.vocab["lifecycle"]] or [np.inf])
    return per_code[snap.codes["lifecycle"][docs]]


def _rank(snap: Snapshot, q: Query, config: Settings, now: float, rows: Callable[..., dict | None],
          hot: np.ndarray | None = None, meaning: Callable[[Snapshot, np.ndarray], Any] | None = None):
    """Candidates with their channel values, effective strength and decay; None when nothing matches.

    Candidates come from the posting lists the query touches (never a pass over every note,
    except for a recall with neither text nor tags, which ranks every visible note by strength).
    `rows` is Index.rows: feedback reads the text of the first pass's best memories. `hot`: the
    documents of a working set (a `working` channel), None without one. `meaning`: the semantic search
    (recall's _meaning), whose nearest notes join the candidates through the same filters.
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
        docs = union([item[1] for item in lists] + tag_lists + graph_lists)
        if required is not None:
            docs = np.intersect1d(docs, required, assume_unique=True)
    elif required is not None:
        docs = required
    else:
        docs = np.flatnonzero(snap.live)
    docs = _filter(snap, q, docs.astype(np.int64))
    meant = None  # the semantic search's semantic.Near
    if meaning is not None:
        meant = meaning(snap, _passing(snap, q))
        joined = _filter(snap, q, meant.docs)
        docs = np.union1d(docs, joined if required is None else np.intersect1d(joined, required))
    if not len(docs):
        return None
    boost = None  # pseudo-relevance feedback, per candidate
    with Candidates(docs, snap.size) as found:
        lexical = _lexical(snap, lists, cfg, found) if lists else np.zeros(len(docs), dtype=np.float32)
        if lists and cfg.feedback_weight > 0:
            boost = cfg.feedback_weight * expansion.feedback(snap, found, lexical, terms, cfg, rows)
            lexical = lexical + boost
    contiguity = np.zeros(len(docs), dtype=np.float32)
    if lists and cfg.weights.get("contiguity", 0) > 0 and lexical.max() > 0:
        near, lent = episodic.contiguity(snap, docs, lexical / lexical.max())
        if len(near):
            keep = np.isin(near, _filter(snap, q, near))
            near, lent = near[keep], lent[keep]
            merged = np.union1d(docs, near)
            if len(merged) > len(docs):  # neighbours the query's words did not find: their own BM25
                with Candidates(merged, snap.size) as found:
                    lexical = _lexical(snap, lists, cfg, found)
                if boost is not None:
                    spread = np.zeros(len(merged), dtype=boost.dtype)
                    spread[np.searchsorted(merged, docs)] = boost
                    lexical = lexical + spread
                docs = merged
            contiguity = np.zeros(len(docs), dtype=np.float32)
            contiguity[np.searchsorted(docs, near)] = lent
    with Candidates(docs, snap.size) as found:
        tags = found.count(tag_lists) / n_tags if n_tags else np.zeros(len(docs), dtype=np.float32)
        graph = np.minimum(found.count(graph_lists), 1.0)
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
    if meant is not None:
        channels["semantic"] = meant.channel(docs)
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


def _hits(vault: Store, snap: Snapshot, rows: hindsight.Rows, q: Query, docs, channels, prior: hindsight.Prior,
          unknown: bool, limit: int, cfg: RankingSettings) -> Hits | None:
    """Fuse, take the best, rescore the short list with rapidfuzz when a query word is unknown
    (typo tolerance), fetch rows; None if the index moved to another generation meanwhile."""
    weights = _weights(cfg, q.text, snap)
    final = _fuse(channels, weights, cfg)
    fuzzy_n = int(cfg.fuzzy_rescore) if unknown else 0
    wanted = max(limit, fuzzy_n)
    rewritten: list[str] = []
    while True:
        scored = _short_list(vault, snap, rows, q, docs, channels, final, top_k(final, wanted, snap.ts[docs]), fuzzy_n,
                             cfg, rewritten)
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
        return Hits(hits, rewritten=rewritten)
    undecayed = {**channels, "strength": np.clip(prior.undecayed / scoring.MAX_SCORE, 0.0, 1.0)}
    hidden = hindsight.suppressed(rows, snap.generation, docs, channels["lexical"], prior.decay,
                                  top_k(_fuse(undecayed, weights, cfg), limit), {h.id for h in hits})
    return None if hidden is None else Hits(hits, hidden, rewritten)


def _fuse(channels: dict[str, np.ndarray], weights: dict[str, float], cfg: RankingSettings) -> np.ndarray:
    if cfg.fusion == "rrf":
        return scoring.fuse_rrf(channels, weights, cfg.rrf_k)
    return scoring.fuse_weighted(channels, weights)


def _short_list(vault: Store, snap: Snapshot, read: hindsight.Rows, q: Query, docs, channels, final, top, fuzzy_n: int,
                cfg: RankingSettings, rewritten: list[str]):
    """(score, rank, row, channel parts, doc index) of the top documents whose notes are on disk;
    None if the index moved to another generation meanwhile. The paths of those whose files are not
    as indexed (saved in place since: their folder's time tells nothing) are added to `rewritten`."""
    rows = read(docs[top], snap.generation)
    if rows is None:
        return None
    top_docs = docs[top].tolist()
    fuzzy = _fuzzy(q.text, [rows.get(doc) for doc in top_docs]).tolist() if fuzzy_n else None
    picked = {name: values[top].tolist() for name, values in channels.items()}  # one gather per channel
    totals = final[top].tolist()
    scored = []
    root = os.path.join(str(vault.root), "")
    for j, (i, doc) in enumerate(zip(top, top_docs)):
        row = rows.get(doc)
        if row is None:
            continue  # changed or removed since the snapshot: the next recall sees its new form
        try:
            st = os.stat(root + row["path"])
        except OSError:
            continue  # deleted by hand, or indexed by a batch killed before it wrote the note: a refresh drops it
        if (st.st_mtime_ns, st.st_size) != (row["mtime_ns"], row["size"]):
            rewritten.append(row["path"])
        parts = {name: values[j] for name, values in picked.items()}
        total = totals[j]
        if fuzzy is not None:
            parts["fuzzy"] = fuzzy[j]
            total += cfg.fuzzy_weight * parts["fuzzy"]
        scored.append((total, j, row, parts, i))
    return scored


def _fuzzy(query: str, rows: list[dict | None]) -> np.ndarray:
    """rapidfuzz partial-ratio of the query against each short-listed note's title and the beginning of
    its text (typo tolerance)."""
    from rapidfuzz import fuzz

    q = text.normalize(query)
    return np.array([fuzz.partial_ratio(q, text.normalize(r["title"] + " " + r["body"][:READ_CHARS]))
                     / 100.0 if r else 0.0 for r in rows])


def _hit(snap: Snapshot, row: dict[str, Any], parts: dict[str, float], final: float, prior: hindsight.Prior, i: int,
         doc: int) -> Hit:
    eff, dec = float(prior.effective[i]), float(prior.decay[i])
    weight = float(prior.feedback if np.isscalar(prior.feedback) else prior.feedback[i])
    stamp = row["stamp"] or local_iso(row["ts"])
    return Hit(id=row["id"], path=row["path"], title=row["title"], content=row["body"].strip(), tags=list(row["tags"]),
               source=row["source"], lifecycle=row["lifecycle"], timestamp=str(stamp), score=float(row["score"]),
               effective=round(eff, 6), final=round(final, 6), type=row["type"], value=row["value"],
               status=row["status"], namespace=row["namespace"], decay=round(dec, 6),
               channels={k: round(v, 6) for k, v in parts.items()}, feedback=hindsight.hit_feedback(snap, doc, weight),
               policy=hindsight.hit_policy(row))


def _questions(snap: Snapshot) -> np.ndarray:
    """1.0 for the memories whose text ends with a question, else 0 (memoised per snapshot)."""
    found = snap.memo.get("questions")
    if found is None:
        found = np.zeros(snap.size, dtype=np.float32)
        found[snap.postings(QUESTION_TERM)[0]] = 1.0
        snap.memo["questions"] = found
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


__all__ = ["HIDDEN_STATUSES", "SEMANTIC_ENV", "Hit", "Hits", "Query", "effective_strength",
           "length_b", "length_spread", "recall", "semantic_on", "strength_prior"]
