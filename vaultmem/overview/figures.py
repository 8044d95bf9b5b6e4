"""What the report shows, as numbers and the words of the notes (page.py draws them).

- counts and distributions of the memories by status, lifecycle, namespace and source;
- the vault's strength over time and, for one chosen memory, its curve with its events (history.py);
- what decay takes next: the memories that fall below gc's threshold within 30 and 90 days if they are
  not used again, rated day by day by recall.ranking.strength_prior (gc's own measure);
- the entity graph of the most linked entities: how many memories link each, and the pairs that memories
  link together (or whose entity notes link each other);
- the last lint findings (lint.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VaultmemError
from ..recall.hindsight import ranking_config
from ..recall.ranking import strength_prior
from ..store.index.records import LINK_PREFIX, link_key
from . import history, lint
from .layout import force_layout

if TYPE_CHECKING:
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

HORIZONS = (30, 90)  # days: what decay takes within each
TOP_ENTITIES = 30
FADING_ROWS = 40  # memories listed in the table of what decay takes
TOP_VALUES = 12  # bars of a distribution; the rest are summed as one
_HIDDEN = ("archived", "candidate", "superseded")  # what recall leaves out by default
_ROW_COLUMNS = ("id", "title", "path", "namespace", "lifecycle", "source", "trust")


@dataclass
class Fading:
    """What decay takes next: memories at or above gc's `threshold` now that fall below it within each
    horizon (days) if unused, the first of them listed, and those already below."""

    threshold: float
    unused_days: float
    below_now: int
    within: dict[int, int]
    notes: list[dict[str, Any]] = field(default_factory=list)  # title, path, namespace, lifecycle, now, crosses, gc


@dataclass
class Graph:
    """The most linked entities (title, memories linking it, x, y in 0..1) and the pairs between them
    (i, j, memories linking both, whether their entity notes link each other)."""

    entities: int  # in the vault
    nodes: list[dict[str, Any]] = field(default_factory=list)
    edges: list[tuple[int, int, int, bool]] = field(default_factory=list)


@dataclass
class Figures:
    """Everything the report shows."""

    vault: str
    now: float
    counts: dict[str, int]
    distribution: dict[str, list[tuple[str, int]]]
    curve: history.VaultCurve
    fading: Fading
    graph: Graph
    lint: dict[str, Any]
    note: history.NoteCurve | None = None


def gather(vault: Store, run_lint: Callable[[], Any], note: str | None = None, now: float | None = None,
           fresh_lint: bool = False) -> Figures:
    """The report's figures for the whole vault (and one memory, named by id, path or title, when given).
    `run_lint` runs lint and keeps its findings (the Vault's doctor): called when none are kept or
    `fresh_lint` asks; otherwise the kept ones are shown."""
    stamp = time.time() if now is None else float(now)
    kept = None
    if not fresh_lint:
        vault.freshen()  # before the kept findings count the notes changed since
        kept = lint.last(vault)
    if kept is None:
        run_lint()
        kept = lint.last(vault) or {}
    vault.index.fold_events()
    config = ranking_config(vault)
    chosen = _note_row(vault, note) if note else None
    snap = vault.index.snapshot()
    memories = _memory_docs(snap)
    events = history.read_events(vault)
    doc_of = {r["id"]: int(r["doc"]) for r in vault.index.select_notes("kind = 'memory'", columns=("id", "doc"),
                                                                        order="doc")}
    shown = memories[~_with_status(snap, memories, _HIDDEN)]
    curve = history.vault_curve(snap, config, shown, events, doc_of, stamp)
    note_curve = None
    if chosen is not None:
        own = [ev for ev in events if ev.get("id") == chosen["id"]]
        note_curve = history.note_curve(chosen, own, config, stamp)
    return Figures(vault.root.name, stamp, _counts(snap, memories), _distribution(snap, memories), curve,
                   _fading(vault, snap, config, memories, stamp), _graph(vault, snap, memories), kept, note_curve)


def _note_row(vault: Store, ref: str) -> dict[str, Any]:
    row = vault.resolve(ref)
    if row["kind"] != "memory":
        raise VaultmemError(f"{row['path']} is not a memory (it is a {row['kind']} note): name a memory with --note")
    return row


def _memory_docs(snap: Snapshot) -> np.ndarray:
    return np.flatnonzero(snap.live & (snap.codes["kind"] == snap.code("kind", "memory")))


def _with_status(snap: Snapshot, docs: np.ndarray, statuses: tuple[str, ...]) -> np.ndarray:
    return np.isin(snap.codes["status"][docs], [snap.code("status", s) for s in statuses])


def _counted(snap: Snapshot, column: str, docs: np.ndarray) -> list[tuple[str, int]]:
    """(value, memories) of a categorical column over docs, most first (then by name)."""
    counts = np.bincount(snap.codes[column][docs], minlength=len(snap.vocab[column]))
    found = [(snap.vocab[column][i] or "", int(n)) for i, n in enumerate(counts) if n]
    return sorted(found, key=lambda kv: (-kv[1], kv[0]))


def _counts(snap: Snapshot, memories: np.ndarray) -> dict[str, int]:
    kinds = dict(_counted(snap, "kind", np.flatnonzero(snap.live)))
    statuses = {status or "active": n for status, n in _counted(snap, "status", memories)}
    return {"memories": len(memories), **statuses, "entities": kinds.get("entity", 0),
            "episodes": kinds.get("episode", 0)}


def _distribution(snap: Snapshot, memories: np.ndarray) -> dict[str, list[tuple[str, int]]]:
    """The memories by status (all of them), and by lifecycle, namespace and source (those not archived)."""
    kept = memories[~_with_status(snap, memories, ("archived",))]
    found = {"status": [(s or "active", n) for s, n in _counted(snap, "status", memories)]}
    for column in ("lifecycle", "namespace", "source"):
        found[column] = _top(_counted(snap, column, kept))
    return found


def _top(counted: list[tuple[str, int]]) -> list[tuple[str, int]]:
    if len(counted) <= TOP_VALUES:
        return counted
    rest = counted[TOP_VALUES - 1:]
    return counted[:TOP_VALUES - 1] + [(f"{len(rest)} others", sum(n for _, n in rest))]


def _fading(vault: Store, snap: Snapshot, config: Any, memories: np.ndarray, now: float) -> Fading:
    """Rate the memories gc looks at (not archived, not candidates) on each day of the longest horizon."""
    gc = vault.settings.gc
    threshold, unused = float(gc.threshold), float(gc.unused_days)
    docs = memories[~_with_status(snap, memories, ("archived", "candidate"))]
    strong = strength_prior(snap, docs, config, now).effective
    crosses = np.full(len(docs), -1, dtype=np.int64)
    for day in range(1, max(HORIZONS) + 1):
        later = strength_prior(snap, docs, config, now + day * history.DAY).effective
        crosses[(crosses < 0) & (later < threshold) & (strong >= threshold)] = day
    fading = Fading(threshold, unused, int((strong < threshold).sum()),
                    {h: int(((crosses > 0) & (crosses <= h)).sum()) for h in HORIZONS})
    listed = np.flatnonzero(crosses > 0)
    listed = listed[np.lexsort((-strong[listed], crosses[listed]))][:FADING_ROWS]
    rows = vault.index.rows(docs[listed], snap.generation, _ROW_COLUMNS) or {}
    for i in listed:
        row = rows.get(int(docs[i]))
        if row is None:  # the index moved on since the snapshot: the next report lists it
            continue
        when = now + int(crosses[i]) * history.DAY
        idle_from = max(float(snap.ts[docs[i]]), float(snap.last_use[docs[i]])) + unused * history.DAY
        fading.notes.append({"title": row["title"], "path": row["path"], "namespace": row["namespace"],
                             "lifecycle": row["lifecycle"], "source": row["source"], "now": float(strong[i]),
                             "crosses": when, "gc": _gc_takes(row, max(when, idle_from))})
    return fading


def _gc_takes(row: dict[str, Any], from_when: float) -> float | str:
    """When `vaultmem gc` would archive a memory that fell below its threshold (POSIX seconds), or why never
    by default (what gc leaves unless asked: a user's memories and permanent ones)."""
    if row["trust"] == "user":
        return "kept: the user's own (gc --include-user)"
    if row["lifecycle"] == "permanent":
        return "kept: permanent (gc --include-permanent)"
    return from_when


def _graph(vault: Store, snap: Snapshot, memories: np.ndarray) -> Graph:
    """The TOP_ENTITIES entities most memories (not archived) link to, and the links between them."""
    linking = np.zeros(snap.size, dtype=bool)
    linking[memories[~_with_status(snap, memories, ("archived",))]] = True
    entities = vault.index.select_notes("kind = 'entity'", columns=("title", "links"))
    linked = []
    for entity in entities:
        docs = snap.postings(LINK_PREFIX + " ".join(link_key(entity["title"]).split()))[0]
        docs = np.unique(docs[docs < snap.size])
        docs = docs[linking[docs]]
        if len(docs):
            linked.append((entity, docs))
    linked.sort(key=lambda pair: (-len(pair[1]), pair[0]["title"]))
    linked = linked[:TOP_ENTITIES]
    at = {link_key(entity["title"]): i for i, (entity, _) in enumerate(linked)}
    edges = []
    for i, (entity, docs) in enumerate(linked):
        direct = {at[key] for key in map(link_key, entity["links"]) if key in at}
        for j in range(i + 1, len(linked)):
            both = len(np.intersect1d(docs, linked[j][1], assume_unique=True))
            joined = j in direct or i in {at[k] for k in map(link_key, linked[j][0]["links"]) if k in at}
            if both or joined:
                edges.append((i, j, both, joined))
    positions = force_layout(len(linked), [(i, j, float(both) + joined) for i, j, both, joined in edges])
    nodes = [{"title": entity["title"], "memories": len(docs), "x": float(x), "y": float(y)}
             for (entity, docs), (x, y) in zip(linked, positions)]
    return Graph(len(entities), nodes, edges)


__all__ = ["FADING_ROWS", "Fading", "Figures", "Graph", "HORIZONS", "TOP_ENTITIES", "gather"]
