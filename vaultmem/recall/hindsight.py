"""What a recall adds to decay beyond the lifecycles: a note's own policy (pinned, half_life,
decay_floor), hindsight feedback, adaptive λ, and the strong matches decay alone kept out of the top k.

The rules are text/decay.py's; this module turns them into arrays over a recall's candidates. A vault
with no feedback, no pins and no policy leaves every number of the ranking as it was (the arrays are
then the plain half-lives, a floor of 0 and a weight of 1).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..settings import FrozenMap
from ..text import decay as rules

if TYPE_CHECKING:
    from ..settings import RankingSettings, Settings
    from ..store.index.snapshot import Snapshot
    from ..store.store import Store

Rows = Callable[..., "dict[int, dict[str, Any]] | None"]  # Index.rows

STRONG_LEXICAL = 0.5  # a suppressed hit matches at least half as well as the query's best match


@dataclass
class Prior:
    """The strength prior of a recall's candidates: effective score, decay factor, feedback weight,
    and the strength before decay (what `suppressed` ranks with)."""

    effective: np.ndarray
    decay: np.ndarray
    feedback: np.ndarray | float
    undecayed: np.ndarray


def ranking_config(vault: Store) -> Settings:
    """The vault's settings for one recall: with `ranking.lambda: adaptive` and pins to learn from,
    the `note` and `default` half-lives are the estimate's (SPEC: note/default share one λ)."""
    settings = vault.settings
    if settings.ranking.lambda_mode != "adaptive":
        return settings
    estimate = lambda_estimate(vault)["lambda"]
    if estimate is None:
        return settings
    hours = math.log(2) / estimate
    return settings._replace(half_life_hours=FrozenMap({**settings.half_life_hours, "note": hours, "default": hours}))


def lambda_estimate(vault: Store) -> dict[str, Any]:
    """The adaptive λ from every device's pin events, and the events it came from.

    A pin undone by a later unpin of the same note no longer counts (it was a mistake or a change of
    mind, not a judgement of the note's age). Returns {"lambda" (per hour, or None), "half_life_hours",
    "bounds_hours", "enabled", "events": [{id, title, ts, ratio, age_hours, lambda, counted, log}]}.
    """
    cfg = vault.settings.ranking
    bounds = tuple(float(b) for b in cfg.adaptive_half_life_hours)
    events = vault.index.pin_events()
    ids = sorted({ev["id"] for ev in events})
    titles = {row["id"]: row["title"] for row in vault.index.select_notes(
        f"id IN ({', '.join('?' * len(ids))})", tuple(ids), columns=("id", "title"))} if ids else {}
    for ev in events:  # what a person knows the note by ("" once it is gone)
        ev["title"] = titles.get(ev["id"], "")
    counted = []
    for n, ev in enumerate(events):
        undone = any(later["event"] == "unpin" and later["id"] == ev["id"] for later in events[n + 1:])
        if ev["event"] == "pin":
            lam = rules.pin_lambda(ev["ratio"] or 0.0, ev["age_hours"] or 0.0)
            ev.update({"lambda": lam, "counted": not undone and lam is not None})
            if ev["counted"]:
                counted.append((ev["ratio"], ev["age_hours"]))
    estimate = rules.estimate_lambda(counted, bounds)  # type: ignore[arg-type]
    return {"enabled": cfg.lambda_mode == "adaptive", "lambda": estimate, "bounds_hours": list(bounds),
            "half_life_hours": math.log(2) / estimate if estimate else None, "events": events}


def note_decay(snap: Snapshot, docs: np.ndarray, half_lives: np.ndarray, cfg: RankingSettings
               ) -> tuple[np.ndarray, np.ndarray | float, np.ndarray | float]:
    """(half-life, decay floor, feedback weight) of each candidate: the lifecycle's half-life unless
    the note sets its own (inf when pinned); floor 0 and weight 1 for notes without them."""
    floor: np.ndarray | float = 0.0
    weight: np.ndarray | float = 1.0
    own = _policies(snap)
    if own is not None:
        at = own["index"][docs]
        has = at >= 0
        if has.any():
            half_lives = half_lives.copy()
            given = own["half_life"][at[has]]  # NaN: the note keeps its lifecycle's
            half_lives[has] = np.where(np.isnan(given), half_lives[has], given)
            floor = np.zeros(len(docs))
            floor[has] = own["floor"][at[has]]
    votes = _votes(snap)
    if votes is not None:
        weight = _weights(votes[docs], cfg) * _scales(snap)[docs]
    return half_lives, floor, weight


def _weights(net: np.ndarray, cfg: RankingSettings) -> np.ndarray:
    """decay.feedback_weight over an array of net counts."""
    scale, top = float(cfg.feedback_scale), float(cfg.feedback_max_weight)
    if scale <= 0 or top <= 0:
        return np.ones(len(net))
    return np.power(top, np.tanh(net / scale))


def _policies(snap: Snapshot) -> dict[str, np.ndarray] | None:
    """Per-document policy arrays (index into them, -1 for none), memoised; None when no note has one."""
    if not snap.policies:
        return None
    found = snap.memo.get("policies")
    if found is None:
        index = np.full(snap.size, -1, dtype=np.int64)
        half_life, floor = [], []
        for doc, text in snap.policies:
            if doc >= snap.size:
                continue
            policy = json.loads(text)
            index[doc] = len(half_life)
            half_life.append(math.inf if policy.get("pinned") else policy.get("half_life_hours", math.nan))
            floor.append(policy.get("decay_floor", 0.0))
        found = snap.memo["policies"] = {"index": index, "half_life": np.array(half_life), "floor": np.array(floor)}
    return found


def _votes(snap: Snapshot) -> np.ndarray | None:
    """Net feedback per document (useful + confirm − wrong − outdated), memoised; None with no feedback."""
    if not snap.feedback:
        return None
    found = snap.memo.get("votes")
    if found is None:
        found = np.zeros(snap.size)
        for doc, good, bad, _ in snap.feedback:
            if doc < snap.size:
                found[doc] = good - bad
        snap.memo["votes"] = found
    return found


def _scales(snap: Snapshot) -> np.ndarray:
    """The strength multiplier of each document's decay events (1 without any), memoised."""
    found = snap.memo.get("scales")
    if found is None:
        found = np.ones(snap.size)
        for doc, _, _, scale in snap.feedback:
            if doc < snap.size and scale:
                found[doc] = rules.decay_scale(scale)
        snap.memo["scales"] = found
    return found


def hit_feedback(snap: Snapshot, doc: int, weight: float) -> dict[str, Any]:
    """What --explain shows of a hit's feedback: {} without any, else weight, up and down votes (and
    the decay events' factor when it has any)."""
    votes = snap.memo.get("votes_by_doc")
    if votes is None:
        votes = snap.memo["votes_by_doc"] = {d: (good, bad, scale) for d, good, bad, scale in snap.feedback}
    if doc not in votes:
        return {}
    good, bad, scale = votes[doc]
    shown = {"weight": round(weight, 6), "up": good, "down": bad}
    if scale:
        shown["decayed"] = round(rules.decay_scale(scale), 6)
    return shown


def hit_policy(row: dict[str, Any]) -> dict[str, Any]:
    """A hit's own decay policy as the index holds it ({} for none)."""
    return json.loads(row["policy"]) if row.get("policy") else {}


def suppressed(rows: Rows, generation: int, docs: np.ndarray, lexical: np.ndarray, decay: np.ndarray,
               undecayed_top: np.ndarray, shown: set[str]) -> list[dict[str, Any]] | None:
    """The strong lexical matches (STRONG_LEXICAL of the best or more) among the top k with decay off
    (`undecayed_top`: candidate indices, best first) that decay kept out of the hits (`shown` ids):
    {id, title, path, rank_without_decay, decay, lexical}. None if the index moved to another generation.
    """
    rank = {int(i): n for n, i in enumerate(undecayed_top, 1)}
    hidden = [i for i in undecayed_top if lexical[i] >= STRONG_LEXICAL and decay[i] < 1.0]
    found_rows = rows(docs[hidden], generation) if hidden else {}
    if found_rows is None:
        return None
    found = []
    for i in hidden:
        row = found_rows.get(int(docs[i]))
        if row is not None and row["id"] not in shown:
            found.append({"id": row["id"], "title": row["title"], "path": row["path"],
                          "rank_without_decay": rank[int(i)], "decay": round(float(decay[i]), 6),
                          "lexical": round(float(lexical[i]), 6)})
    return found


__all__ = ["Prior", "Rows", "STRONG_LEXICAL", "hit_feedback", "hit_policy", "lambda_estimate", "note_decay",
           "ranking_config", "suppressed"]
