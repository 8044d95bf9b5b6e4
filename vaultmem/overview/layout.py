"""Where the entity graph's nodes go: a force layout (linked nodes pull, every pair pushes) started from a
circle and run a fixed number of steps, so the same graph always gets the same picture. Pure numbers."""

from __future__ import annotations

import math

import numpy as np

_STEPS = 300


def force_layout(n: int, edges: list[tuple[int, int, float]]) -> np.ndarray:
    """Positions (n x 2, each coordinate in 0..1) of n nodes joined by (i, j, weight) edges; node 0 first
    on the circle, the order given (most linked first) around it."""
    if n == 0:
        return np.zeros((0, 2))
    if n == 1:
        return np.array([[0.5, 0.5]])
    angle = 2 * math.pi * np.arange(n) / n
    pos = np.column_stack([np.cos(angle), np.sin(angle)])
    ideal = 1.6 / math.sqrt(n)  # the distance at which a pull and a push balance
    pull = np.zeros((n, n))
    for i, j, weight in edges:
        pull[i, j] = pull[j, i] = 1.0 + math.log1p(weight)
    step = 0.1
    for _ in range(_STEPS):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        force = ideal * ideal / dist - pull * dist * dist / ideal  # > 0 pushes apart
        np.fill_diagonal(force, 0.0)
        move = (delta / dist[:, :, None] * force[:, :, None]).sum(axis=1)
        move -= 0.05 * pos  # a weak pull to the middle keeps an unlinked node in the picture
        length = np.maximum(np.linalg.norm(move, axis=1), 1e-9)
        pos += move / length[:, None] * np.minimum(length, step)[:, None]
        step = max(step * 0.985, 0.002)
    low, high = pos.min(axis=0), pos.max(axis=0)
    return (pos - low) / np.maximum(high - low, 1e-9)


__all__ = ["force_layout"]
