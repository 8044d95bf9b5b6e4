"""Per-note decay policy, hindsight feedback and adaptive λ: pure rules, numbers and text in, numbers out.

A note may override its lifecycle's decay in its frontmatter (SPEC §4, issue 17):

    half_life: 30d       # a duration: <number><unit>, unit h, d, w or y (12h, 2w, 1.5d)
    decay_floor: 0.2     # the decay factor never falls below this (0..1)
    pinned: true         # no decay at all (`vaultmem pin`, or the checkbox in Obsidian's Properties)

Feedback (`vaultmem feedback ID useful|wrong|outdated|confirm`) multiplies a memory's strength by

    weight = max_weight ** tanh(net / scale)      net = useful + confirm - wrong - outdated

so one `useful` raises it a little, a hundred at most to `max_weight` (2 by default), and a `wrong`
lowers it to at least 1 / max_weight: repeated feedback saturates, never runs away.

`vaultmem decay --factor F --tag T` records one `decay` event per note matched; a note's strength is
multiplied by the product of its factors (each 0 < F <= 1), never below MIN_SCALE: decay lowers, is
bounded, and commutes (every device's events fold in any order to the same number).

Adaptive λ: a pin at age Δt (hours since the write) records the note's effective/initial strength
ratio then; λ_i = −ln(ratio) / Δt, the estimate is their mean, bounded to half-lives within
`bounds` (hours). A note kept strong by use (its clock reset, its reward added) gives a λ below the
lifecycle's; one pinned after decaying as configured gives back the configured λ.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

VERDICTS = {"useful": 1, "confirm": 1, "wrong": -1, "outdated": -1}  # verdict -> its vote in `net`
LOWERING = ("wrong", "outdated")  # verdicts that also mark a note needs-verification
POLICY_KEYS = ("half_life", "decay_floor", "pinned")
MIN_SCALE = 0.001  # `vaultmem decay` never takes a note's strength below this share of what it was
_UNIT_HOURS = {"h": 1.0, "d": 24.0, "w": 168.0, "y": 8766.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([hdwy])\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Policy:
    """A note's own decay settings (None: the lifecycle's) and what was wrong with the others."""

    half_life_hours: float | None = None
    decay_floor: float | None = None
    pinned: bool = False
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The valid overrides only (what the index stores and --explain shows)."""
        out: dict[str, Any] = {}
        if self.half_life_hours is not None:
            out["half_life_hours"] = self.half_life_hours
        if self.decay_floor is not None:
            out["decay_floor"] = self.decay_floor
        if self.pinned:
            out["pinned"] = True
        return out


def duration_hours(value: Any) -> float | None:
    """Hours of a duration such as `30d`, `12h`, `2w`, `1y`; None when it is no such duration."""
    if isinstance(value, bool) or not isinstance(value, str):
        return None
    found = _DURATION.fullmatch(value)
    if not found:
        return None
    hours = float(found.group(1)) * _UNIT_HOURS[found.group(2).lower()]
    return hours if 0 < hours < math.inf else None


def read_policy(meta: Mapping[str, Any]) -> Policy:
    """A note's policy from its properties; a bad value is named in `problems` and ignored."""
    problems = []
    half_life = floor = None
    if meta.get("half_life") is not None:
        half_life = duration_hours(meta["half_life"])
        if half_life is None:
            problems.append(f"half_life {str(meta['half_life'])[:40]!r} is not a duration like 30d, 12h or 2w")
    raw_floor = meta.get("decay_floor")
    if raw_floor is not None:
        if isinstance(raw_floor, (int, float)) and not isinstance(raw_floor, bool) and 0 <= raw_floor <= 1:
            floor = float(raw_floor)
        else:
            problems.append(f"decay_floor {str(raw_floor)[:40]} is not a number from 0 to 1")
    pinned = meta.get("pinned", False)
    if pinned is None:
        pinned = False
    if not isinstance(pinned, bool):
        problems.append(f"pinned {str(pinned)[:40]} is not true or false")
        pinned = False
    return Policy(half_life, floor, pinned, tuple(problems))


def feedback_weight(net: float, scale: float, max_weight: float) -> float:
    """The strength multiplier of a net feedback count: max_weight ** tanh(net / scale).

    >>> feedback_weight(0, 3, 2.0)
    1.0
    >>> round(feedback_weight(100, 3, 2.0), 6)
    2.0
    """
    if scale <= 0 or max_weight <= 0:
        return 1.0
    return float(max_weight ** math.tanh(net / scale))


def decay_scale(log_sum: float) -> float:
    """The strength multiplier of a note's decay events from the sum of ln(factor): at least MIN_SCALE.

    >>> decay_scale(math.log(0.5) * 2)
    0.25
    """
    return max(math.exp(min(log_sum, 0.0)), MIN_SCALE)


def net_feedback(counts: Mapping[str, int]) -> int:
    """useful + confirm − wrong − outdated."""
    return sum(VERDICTS[verdict] * int(n) for verdict, n in counts.items() if verdict in VERDICTS)


def pin_lambda(ratio: float, age_hours: float) -> float | None:
    """λ (per hour) of one pin: −ln(ratio) / age; None for an age of zero or a ratio of zero or less."""
    if age_hours <= 0 or not ratio > 0 or not math.isfinite(ratio):
        return None
    return -math.log(ratio) / age_hours


def estimate_lambda(pins: Iterable[tuple[float, float]], bounds: tuple[float, float]) -> float | None:
    """The mean λ of (ratio, age_hours) pins, bounded to half-lives from bounds[0] to bounds[1] hours;
    None when no pin says anything.

    >>> round(estimate_lambda([(0.5, 30.0)], (6.0, 8766.0)), 6)
    0.023105
    """
    values = [lam for lam in (pin_lambda(r, a) for r, a in pins) if lam is not None]
    if not values:
        return None
    low, high = math.log(2) / max(bounds), math.log(2) / min(bounds)
    return min(max(sum(values) / len(values), low), high)


__all__ = ["LOWERING", "MIN_SCALE", "POLICY_KEYS", "VERDICTS", "Policy", "decay_scale", "duration_hours", "estimate_lambda", "feedback_weight",
           "net_feedback", "pin_lambda", "read_policy"]
