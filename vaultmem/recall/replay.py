"""Uses, feedback and decay as the events logs had recorded them by a moment: a snapshot's counts replayed
(recall --as-of, and the report's strength over time in overview/history.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..store.events import FOLDED, log_files, read_new_lines
from ..text import decay as rules

if TYPE_CHECKING:
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

__all__ = ["Replay", "read_events"]


def read_events(vault: Store) -> list[dict[str, Any]]:
    """Every device's access, feedback, pin, unpin and decay events (the ones the index folds), oldest first."""
    found: list[dict[str, Any]] = []
    for path in log_files(vault.state / "devices", "events"):
        try:
            events, _ = read_new_lines(path, 0)
        except OSError:  # a log that cannot be read waits, as folding it does
            continue
        found += [ev for ev in events if ev.get("event") in FOLDED]
    found.sort(key=lambda ev: float(ev.get("ts", 0)))
    return found


class Replay:
    """A snapshot's uses, last uses and feedback as the events had made them by a moment (moments asked
    for in order). The events are arrays, applied a slice at a time."""

    def __init__(self, snap: Snapshot, events: list[dict[str, Any]], doc_of: dict[str, int]):
        self.snap = snap
        size, wanted = snap.size, {"access": 0, "feedback": 1, "decay": 2}
        ts, docs, kinds, votes, logs = [], [], [], [], []
        for ev in events:
            kind, doc = wanted.get(ev["event"]), doc_of.get(ev["id"], size)
            if kind is None or doc >= size:
                continue
            ts.append(float(ev.get("ts", 0)))
            docs.append(doc)
            kinds.append(kind)
            votes.append(rules.VERDICTS[ev["verdict"]] if kind == 1 else 0)
            logs.append(math.log(ev["factor"]) if kind == 2 else 0.0)
        self.ts, self.doc = np.array(ts), np.array(docs, dtype=np.int64)
        self.access = np.array(kinds, dtype=np.int8) == 0
        self.up, self.down = np.array(votes) > 0, np.array(votes) < 0
        self.log = np.array(logs)
        self.at = 0
        self.uses = np.zeros_like(snap.uses)
        self.last = np.zeros_like(snap.last_use)
        self.good, self.bad, self.scaled = np.zeros(snap.size), np.zeros(snap.size), np.zeros(snap.size)

    def until(self, moment: float) -> Snapshot:
        """The snapshot with the events up to `moment` applied (and no later one)."""
        end = int(np.searchsorted(self.ts, moment, side="right"))
        part = slice(self.at, end)
        doc, access = self.doc[part], self.access[part]
        np.add.at(self.uses, doc[access], 1)
        np.maximum.at(self.last, doc[access], self.ts[part][access])
        np.add.at(self.good, doc[self.up[part]], 1)
        np.add.at(self.bad, doc[self.down[part]], 1)
        np.add.at(self.scaled, doc, self.log[part])
        self.at = end
        marked = np.flatnonzero((self.good != 0) | (self.bad != 0) | (self.scaled != 0))
        feedback = list(zip(marked.tolist(), self.good[marked].tolist(), self.bad[marked].tolist(),
                            self.scaled[marked].tolist()))
        return replace(self.snap, uses=self.uses, last_use=self.last, feedback=feedback, memo={})
