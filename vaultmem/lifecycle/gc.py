"""What lowers a memory and what clears the weak ones away (SPEC §7, issue 17 items 4-5).

- decay: `decay --factor F --tag T` appends one `decay` event per matching memory to this device's
  events log (the notes are not rewritten) and one audit event; the index folds them like feedback,
  so ranking (and gc) multiply the note's strength by the product of its factors (text/decay.py).
- gc: archives the memories whose effective score, as ranking computes it (recall.ranking.
  effective_strength, which the Vault hands in: lifecycle/ and recall/ are siblings that import
  neither other; decayed, with uses, feedback and decay events), is below `gc.threshold` and that
  were neither written nor used for `gc.unused_days`. Never a pinned note; a `user`-trust or
  `permanent`-lifecycle one only when asked. It archives through forget.forget_rows under the write
  lock (an agent's write waits; a note edited meanwhile is skipped and reported), so a second run
  finds nothing more to do.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError
from ..store.events import append_events
from ..text import decay as rules
from ..text.times import local_iso
from .forget import Forgotten, Selection, forget_rows, select, who, writing

if TYPE_CHECKING:
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

DAY = 86400.0


@dataclass
class Decayed:
    """What `decay` did: the factor, each note scaled {id, title, path, scale (its multiplier now)},
    and the notes left alone {id, path, why} (pinned)."""

    factor: float
    tags: list[str]
    reason: str
    notes: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json)."""
        return asdict(self)


def decay_where(vault: Store, tags: list[str], factor: float, reason: str = "", now: float | None = None) -> Decayed:
    """Scale the strength of every unarchived memory carrying all these tags by `factor` (0 < F <= 1)."""
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not (0 < factor <= 1):
        raise VaultmemError(f"--factor must be a number above 0 and at most 1 (a decay lowers), not {factor}")
    if not tags:
        raise VaultmemError("say which memories to decay: --tag T (repeatable: all of them)")
    stamp = time.time() if now is None else now
    reason = " ".join(reason.split())
    with vault.index.writing():
        vault.index.catch_up()
        rows = [r for r in select(vault, Selection(tags=tuple(tags))) if r["status"] != "archived"]
        done = Decayed(float(factor), list(tags), reason)
        kept = [r for r in rows if not _pinned(r)]
        done.skipped = [{"id": r["id"], "path": r["path"], "why": "pinned"} for r in rows if _pinned(r)]
        events = [{"event": "decay", "id": r["id"], "factor": float(factor), "ts": stamp} for r in kept]
        append_events(vault.device_dir, "events", events, stamp)
        vault.audit([{"event": "decay", "tags": list(tags), "factor": float(factor), "reason": reason, **who(),
                      "ts": stamp, "ids": [r["id"] for r in kept]}])
        used = vault.index.usages([r["id"] for r in kept])
        for row in kept:
            scale = rules.decay_scale(used[row["id"]][4])
            done.notes.append({"id": row["id"], "title": row["title"], "path": row["path"], "scale": round(scale, 6)})
        return done


Strength = Callable[["Snapshot", Any, float], Any]  # (snapshot, documents, now) -> their effective scores


def gc(vault: Store, strength: Strength, *, dry_run: bool = False, include_user: bool = False,
       include_permanent: bool = False, now: float | None = None) -> Forgotten:
    """Archive the weak, unused memories (see the module's docstring); dry_run lists them only.
    `strength` rates documents as ranking does. Each note listed carries `effective` (its score now)
    and `last_use` (ISO time, None if never)."""
    stamp = time.time() if now is None else now
    threshold, days = float(vault.settings.gc.threshold), float(vault.settings.gc.unused_days)
    reason = f"gc: effective score below {threshold:g} and unused for {days:g} days"
    with writing(vault, dry_run):
        vault.index.catch_up()
        vault.index.fold_events()
        found = _weak(vault, strength, threshold, stamp - days * DAY, include_user, include_permanent, stamp)
        rows = [row for row, _ in found]
        extra = {row["id"]: info for row, info in found}
        return forget_rows(vault, rows, reason, "gc", dry_run=dry_run, now=stamp, extra=extra)


def _weak(vault: Store, strength: Strength, threshold: float, idle_before: float, include_user: bool,
          include_permanent: bool, now: float) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(row, {effective, last_use}) of each memory gc takes, weakest first."""
    import numpy as np

    for _ in range(3):
        snap = vault.index.snapshot()
        mask = snap.live & (snap.codes["kind"] == snap.code("kind", "memory"))
        mask &= ~np.isin(snap.codes["status"], [snap.code("status", s) for s in ("archived", "candidate")])
        if not include_user:
            mask &= snap.codes["trust"] != snap.code("trust", "user")
        if not include_permanent:
            mask &= snap.codes["lifecycle"] != snap.code("lifecycle", "permanent")
        mask &= np.maximum(snap.ts, snap.last_use) <= idle_before
        docs = np.nonzero(mask)[0]
        effective = strength(snap, docs, now) if len(docs) else np.zeros(0)
        weak = effective < threshold
        docs, effective = docs[weak], effective[weak]
        order = np.argsort(effective, kind="stable")
        rows = vault.index.rows(docs[order], snap.generation) if len(docs) else {}
        if rows is not None:
            break
    else:
        raise VaultmemError("the index kept changing during gc; try again")
    out = []
    for doc, eff in zip(docs[order], effective[order]):
        row = rows.get(int(doc))
        if row is None or _pinned(row):
            continue
        last = float(snap.last_use[doc])
        out.append((row, {"effective": round(float(eff), 6) if math.isfinite(eff) else 0.0,
                          "last_use": local_iso(last) if last > 0 else None}))
    return out


def _pinned(row: dict[str, Any]) -> bool:
    return bool(row.get("policy") and json.loads(row["policy"]).get("pinned"))




__all__ = ["Decayed", "decay_where", "gc"]
