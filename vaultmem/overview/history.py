"""A memory's strength over time, replayed from its write and every device's access, feedback, pin and
decay events with the ranking's own arithmetic: recall.ranking.strength_prior for the vault (a snapshot
whose uses and feedback are those recorded by each date), text/scoring.effective with text/decay's
weights for one note (as lifecycle.feedback.strength_ratio rates a note now).

Replayed: uses and the last use, feedback votes and decay factors as recorded up to each moment, so the
strength at a past date is what recall would have computed then. Not replayed: a note's properties
(score, lifecycle, half_life, decay_floor are taken as they are now). One note's curve follows its pin
and unpin events; the vault's takes today's pins throughout. After now the curves are a projection
with no further use.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..recall.ranking import strength_prior
from ..recall.replay import Replay, read_events
from ..text import decay as rules
from ..text import scoring

if TYPE_CHECKING:
    from ..settings import Settings
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

DAY = 86400.0
FUTURE_DAYS = 90  # how far ahead the curves are projected
_PAST_POINTS, _FUTURE_POINTS = 90, 31  # the vault curve's dates before and after now
_NOTE_POINTS = 320  # one note's curve, besides the moments around each event
_NOTE_EVENT_POINTS = 400  # events drawn as a step each; beyond that the curve is sampled evenly
_JUST_BEFORE = 1e-3  # s: the curve's value an instant before an event, so each use shows as a step


@dataclass
class VaultCurve:
    """The summed effective strength of the vault's memories at each of `times` (POSIX seconds), one
    series per lifecycle; `written`: how many of them were written by then."""

    times: np.ndarray
    now: float
    series: dict[str, np.ndarray]
    written: np.ndarray


def vault_curve(snap: Snapshot, config: Settings, docs: np.ndarray, events: list[dict[str, Any]],
                doc_of: dict[str, int], now: float) -> VaultCurve:
    """Replay the events over `docs` (memory documents of `snap`) from the first write to FUTURE_DAYS after now."""
    first = float(snap.ts[docs].min()) if len(docs) else now - DAY
    start = min(first, now - DAY)
    times = np.concatenate([np.linspace(start, now, _PAST_POINTS),
                            np.linspace(now, now + FUTURE_DAYS * DAY, _FUTURE_POINTS)[1:]])
    codes = snap.codes["lifecycle"][docs]
    names = snap.vocab["lifecycle"] or [""]
    sums = np.zeros((len(names), len(times)))
    written = np.zeros(len(times), dtype=np.int64)
    replay = Replay(snap, events, doc_of)
    for g, t in enumerate(times):
        view = replay.until(float(t)) if t < now else snap  # from now on: the index's own state
        mask = snap.ts[docs] <= t
        effective = strength_prior(view, docs[mask], config, float(t)).effective if mask.any() else np.zeros(0)
        sums[:, g] = np.bincount(codes[mask], weights=effective, minlength=len(names))[:len(names)]
        written[g] = int(mask.sum())
    series = {name or "(none)": sums[i] for i, name in enumerate(names) if sums[i].any()}
    return VaultCurve(times, now, series, written)


@dataclass
class NoteCurve:
    """One memory's effective strength at each of `times`, and its events with the strength each left."""

    id: str
    title: str
    lifecycle: str
    score: float
    half_life_hours: float
    written: float
    now: float
    times: np.ndarray
    values: np.ndarray
    events: list[dict[str, Any]] = field(default_factory=list)  # {ts, kind, detail, strength}


def note_curve(row: dict[str, Any], events: list[dict[str, Any]], config: Settings, now: float) -> NoteCurve:
    """The curve of the memory of index row `row` from its write (or its first event) to FUTURE_DAYS after
    now, from its own events (oldest first)."""
    policy = json.loads(row["policy"]) if row.get("policy") else {}
    half_life = float(policy.get("half_life_hours") or scoring.half_life_hours(row["lifecycle"], config.half_life_hours))
    written = float(row["ts"])
    start = min([written, *(float(ev["ts"]) for ev in events)])
    end = max(now, start) + FUTURE_DAYS * DAY
    times = np.linspace(start, end, _NOTE_POINTS)
    stamps = [float(ev["ts"]) for ev in events]
    if len(stamps) <= _NOTE_EVENT_POINTS:
        times = np.concatenate([times, stamps, [s - _JUST_BEFORE for s in stamps if s > start]])
    times = np.unique(np.concatenate([times, [now]]))
    values = _strength(row, events, policy, half_life, config, times, now)
    after = _strength(row, events, policy, half_life, config, np.array(stamps), now) if stamps else []
    shown = [{"ts": float(ev["ts"]), "kind": ev["event"], "detail": _detail(ev), "strength": float(s)}
             for ev, s in zip(events, after)]
    return NoteCurve(row["id"], row["title"], row["lifecycle"] or "", float(row["score"]), half_life, written, now,
                     times, values, shown)


def strength_at(row: dict[str, Any], events: list[dict[str, Any]], config: Settings, times: np.ndarray,
                now: float) -> tuple[np.ndarray, float]:
    """The memory's effective strength at each of `times` from its own events (oldest first), and its half-life
    in hours (its own `half_life`, else its lifecycle's)."""
    policy = json.loads(row["policy"]) if row.get("policy") else {}
    half_life = float(policy.get("half_life_hours") or scoring.half_life_hours(row["lifecycle"], config.half_life_hours))
    return _strength(row, events, policy, half_life, config, times, now), half_life


def _strength(row: dict[str, Any], events: list[dict[str, Any]], policy: dict[str, Any], half_life: float,
              config: Settings, times: np.ndarray, now: float) -> np.ndarray:
    """The note's effective strength at each time, with the events recorded up to it."""
    accesses = np.array([float(ev["ts"]) for ev in events if ev["event"] == "access"])
    uses = np.searchsorted(accesses, times, side="right")
    last = np.where(uses > 0, accesses[np.maximum(uses - 1, 0)] if len(accesses) else 0.0, 0.0)
    votes = [(float(ev["ts"]), rules.VERDICTS[ev["verdict"]]) for ev in events if ev["event"] == "feedback"]
    net = _running([ts for ts, _ in votes], [v for _, v in votes], times)
    factors = [(float(ev["ts"]), math.log(ev["factor"])) for ev in events if ev["event"] == "decay"]
    scaled = _running([ts for ts, _ in factors], [f for _, f in factors], times)
    cfg, reward = config.ranking, config.reinforcement
    weight = np.array([rules.feedback_weight(n, cfg.feedback_scale, cfg.feedback_max_weight) * rules.decay_scale(s)
                       for n, s in zip(net, scaled)])
    pinned = _pinned(events, bool(policy.get("pinned")), times, now)
    half_lives = np.where(pinned, math.inf, half_life)
    effective, _ = scoring.effective(float(row["score"]), uses, float(row["ts"]), last, times, half_lives,
                                     reward.reward, reward.max_reward, weight, float(policy.get("decay_floor", 0.0)))
    return np.asarray(effective, dtype=np.float64)


def _running(stamps: list[float], amounts: list[float], times: np.ndarray) -> np.ndarray:
    """The sum of the amounts recorded at or before each time."""
    if not stamps:
        return np.zeros(len(times))
    totals = np.concatenate([[0.0], np.cumsum(amounts)])
    return totals[np.searchsorted(np.array(stamps), times, side="right")]


def _pinned(events: list[dict[str, Any]], pinned_now: bool, times: np.ndarray, now: float) -> np.ndarray:
    """Whether the note was pinned at each time: as its pin and unpin events set it, before the first
    one the opposite of what it did, without any the property as it is now; from now on, the property."""
    marks = [(float(ev["ts"]), ev["event"] == "pin") for ev in events if ev["event"] in ("pin", "unpin")]
    if not marks:
        return np.full(len(times), pinned_now)
    states = np.array([not marks[0][1]] + [on for _, on in marks])
    state = states[np.searchsorted(np.array([ts for ts, _ in marks]), times, side="right")]
    return np.where(times >= now, pinned_now, state)


def _detail(ev: dict[str, Any]) -> str:
    """What a person reads of an event beside its kind: the verdict (and its note), the decay factor."""
    if ev["event"] == "feedback":
        return ev["verdict"] + (f": {ev['note']}" if isinstance(ev.get("note"), str) and ev["note"] else "")
    if ev["event"] == "decay":
        return f"× {float(ev['factor']):g}"
    return ""


__all__ = ["DAY", "FUTURE_DAYS", "NoteCurve", "VaultCurve", "note_curve", "read_events", "strength_at", "vault_curve"]
