"""Hindsight feedback, corrections and pins (SPEC §4, issue 17): events in this device's log, and the
few one-line edits they imply.

- feedback useful|confirm: an event only (no note is rewritten); it raises the note's strength.
- feedback wrong|outdated: an event, and an active note becomes `status: needs-verification` (that
  one line edited); the event lowers it. A superseded, archived or candidate note keeps its status.
- correct: a new note that supersedes the old one through the write pipeline (the old one stays,
  linked, as history).
- pin / unpin: `pinned: true` set or removed (that one line), and an event that records the note's
  effective/initial strength at its age, which adaptive λ learns from (recall/hindsight.py).
The weights and the estimate are text/decay.py's; every device's events count once folded.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError
from ..store.events import append_events
from ..text import decay as rules
from ..text import scoring
from ..write.items import WriteResult

if TYPE_CHECKING:
    from ..store.store import Store

_FLAGGED = "needs-verification"
_KEEP_STATUS = ("superseded", "archived", "candidate", _FLAGGED)  # a wrong/outdated verdict leaves these as they are


@dataclass
class Marked:
    """What feedback, pin or unpin did: action (recorded, pinned, unpinned, unchanged), the note, its
    status now and the event appended (None when nothing was)."""

    action: str
    id: str
    path: str
    title: str
    status: str
    event: dict[str, Any] | None = None
    changed: list[str] = field(default_factory=list)  # the properties rewritten

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json, MCP, Hermes)."""
        return asdict(self)


def feedback(vault: Store, ref: str, verdict: str, note: str = "", now: float | None = None) -> Marked:
    """Record a verdict on a memory; wrong/outdated also flag an active note needs-verification, and
    confirm makes a flagged note active again (that one property line, as `status: active`)."""
    if verdict not in rules.VERDICTS:
        raise VaultmemError(f"unknown verdict {verdict!r}: use one of {', '.join(rules.VERDICTS)}")
    stamp = time.time() if now is None else now
    with vault.index.writing():
        row = _memory(vault, ref)
        if verdict in rules.LOWERING and row["status"] not in _KEEP_STATUS:
            changes = {"status": _FLAGGED}
        elif verdict == "confirm" and row["status"] == _FLAGGED:  # a person checked it: active again
            changes = {"status": "active"}
        else:
            changes = {}
        event: dict[str, Any] = {"event": "feedback", "id": row["id"], "verdict": verdict, "ts": stamp}
        if note:
            event["note"] = note
        return _record(vault, row, changes, event, "recorded")


def pin(vault: Store, ref: str, now: float | None = None) -> Marked:
    """Set `pinned: true` (no decay from now on) and record the note's strength ratio at its age."""
    stamp = time.time() if now is None else now
    with vault.index.writing():
        row = _memory(vault, ref)
        if _policy(row).get("pinned"):
            return _unchanged(row)
        ratio, age = strength_ratio(vault, row, stamp)
        event = {"event": "pin", "id": row["id"], "ts": stamp, "ratio": ratio, "age_hours": age}
        return _record(vault, row, {"pinned": True}, event, "pinned")


def unpin(vault: Store, ref: str, now: float | None = None) -> Marked:
    """Remove `pinned` (the note decays by its lifecycle again); the earlier pin no longer teaches λ."""
    from ..notes.writing import DELETE

    stamp = time.time() if now is None else now
    with vault.index.writing():
        row = _memory(vault, ref)
        if not _policy(row).get("pinned"):
            return _unchanged(row)
        return _record(vault, row, {"pinned": DELETE}, {"event": "unpin", "id": row["id"], "ts": stamp}, "unpinned")


def correct(vault: Store, ref: str, text: str, **fields: Any) -> WriteResult:
    """Write `text` as a new memory that supersedes the one named (kept, linked, as history); the
    fields not given are carried over from the old note by the write pipeline."""
    from ..write.pipeline import remember

    if not text or not text.strip():
        raise VaultmemError("a correction needs the new text")
    old = vault.resolve(ref)
    if old["kind"] != "memory":
        raise VaultmemError(f"{old['path']} is not a memory (it is a {old['kind']} note)")
    if old["status"] == "superseded":
        raise VaultmemError(f"{old['path']} is already superseded: correct the note that replaced it")
    return remember(vault, text, supersedes=old["id"], **fields)


def strength_ratio(vault: Store, row: dict[str, Any], now: float) -> tuple[float, float]:
    """(effective / initial strength, hours since the write) of a note now, as a fixed-λ recall would
    rate it (its uses, its feedback and its own half-life and floor included); initial = its score."""
    uses, last_use, up, down, scaled = vault.index.usage(row["id"])
    cfg, reward = vault.settings.ranking, vault.settings.reinforcement
    policy = _policy(row)
    half_life = policy.get("half_life_hours") or scoring.half_life_hours(row["lifecycle"], vault.settings.half_life_hours)
    weight = rules.feedback_weight(up - down, cfg.feedback_scale, cfg.feedback_max_weight) * rules.decay_scale(scaled)
    eff, _ = scoring.effective(row["score"], uses, row["ts"], last_use, now, half_life, reward.reward,
                               reward.max_reward, weight, policy.get("decay_floor", 0.0))
    initial = float(row["score"])
    ratio = float(eff) / initial if initial > 0 else 0.0
    return (ratio if math.isfinite(ratio) else 0.0), max((now - row["ts"]) / scoring.SECONDS_PER_HOUR, 0.0)


def _memory(vault: Store, ref: str) -> dict[str, Any]:
    vault.index.catch_up()
    row = vault.resolve(ref)
    if row["kind"] != "memory":
        raise VaultmemError(f"{row['path']} is not a memory (it is a {row['kind']} note)")
    return row


def _policy(row: dict[str, Any]) -> dict[str, Any]:
    return json.loads(row["policy"]) if row.get("policy") else {}


def _record(vault: Store, row: dict[str, Any], changes: dict[str, Any], event: dict[str, Any], action: str) -> Marked:
    """Edit the note's properties (a minimal edit, only if any), then append the event and fold it."""
    status = row["status"]
    if changes:
        _edit(vault, row, changes)
        status = changes.get("status", status)
        vault.audit([{"event": "edit", "id": row["id"], "path": row["path"], "because": event["event"],
                      "fields": sorted(changes)}])
    append_events(vault.device_dir, "events", [event], event["ts"])
    vault.index.fold_events()  # the next recall ranks with it, without waiting for a refresh
    return Marked(action, row["id"], row["path"], row["title"], status or "active", event, sorted(changes))


def _edit(vault: Store, row: dict[str, Any], changes: dict[str, Any]) -> None:
    """Change these properties of the note's file line by line, and index the new text."""
    from ..notes.writing import update_fields

    path = vault.root / row["path"]
    text = vault.edit_note(path, lambda note: update_fields(note, changes))
    vault.index.upsert([vault.record_for(path, text.encode("utf-8"))])
    vault.index.wrote()


def _unchanged(row: dict[str, Any]) -> Marked:
    return Marked("unchanged", row["id"], row["path"], row["title"], row["status"] or "active")


__all__ = ["Marked", "correct", "feedback", "pin", "strength_ratio", "unpin"]
