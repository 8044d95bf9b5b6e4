"""Charts as SVG text, drawn by this code (no chart library, no script): a time chart (stacked areas or a
line with event marks), horizontal bars and a node-link graph. Every text that comes from a note is
escaped here, in attributes and in text alike; numbers are formatted, never taken as markup."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import numpy as np

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#bab0ac")
WIDTH = 880
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 20, 16, 46
_LABEL_CHARS = 30  # a bar's or node's label is cut to this many characters (the whole text is its tooltip)


def text(value: object) -> str:
    """A value as escaped SVG/HTML text (quotes too: safe inside an attribute)."""
    return escape(str(value), quote=True)


def cut(label: str, chars: int = _LABEL_CHARS) -> str:
    """A label cut to `chars` characters with an ellipsis."""
    return label if len(label) <= chars else label[:chars - 1] + "…"


def day(ts: float) -> str:
    """A POSIX time as this machine's local date, YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.localtime(ts))


def number(value: float) -> str:
    """A figure for a person: at most three significant digits, thousands separated."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


@dataclass
class Mark:
    """An event on a time chart: when, the value it is drawn at, its kind (a shape and colour) and its tooltip."""

    ts: float
    value: float
    kind: str
    label: str


@dataclass
class TimeChart:
    """Series over shared times, stacked as areas (the vault) or as one line (a note), with a 'today'
    line; the part after `now` is shaded as a projection."""

    times: np.ndarray
    now: float
    series: list[tuple[str, np.ndarray]]
    stacked: bool = True
    height: int = 300
    threshold: float | None = None  # a dashed horizontal line (gc's threshold)
    marks: list[Mark] = field(default_factory=list)
    y_label: str = "strength"

    def svg(self) -> str:
        """The chart."""
        x0, x1 = float(self.times.min()), float(self.times.max())
        x1 = x1 if x1 > x0 else x0 + 1
        tops = np.sum([v for _, v in self.series], axis=0) if self.stacked else \
            np.max([v for _, v in self.series], axis=0)
        y_max, step = _scale(max(float(np.max(tops)) if np.size(tops) else 0.0, self.threshold or 0.0))
        plot_h = self.height - _TOP - _BOTTOM

        def x(t):
            return _LEFT + (np.asarray(t, dtype=float) - x0) / (x1 - x0) * (WIDTH - _LEFT - _RIGHT)

        def y(v):
            return _TOP + plot_h - np.asarray(v, dtype=float) / y_max * plot_h

        parts = [_frame(self.height), *_y_axis(y_max, step, y, self.y_label), *_x_axis(x0, x1, x, self.height)]
        parts += self._areas(x, y) if self.stacked else self._lines(x, y)
        if self.threshold is not None:
            ty = float(y(self.threshold))
            parts.append(f'<line class="threshold" x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" '
                         'stroke="#c0392b" stroke-dasharray="5 4"/>')
            parts.append(f'<text x="{WIDTH - _RIGHT - 4}" y="{ty - 4:.1f}" text-anchor="end" fill="#c0392b">'
                         f'gc threshold {number(self.threshold)}</text>')
        parts += _today(float(x(self.now)), self.height)
        parts += [_mark(m, float(x(m.ts)), float(y(m.value))) for m in self.marks]
        legend = _legend([name for name, _ in self.series]) if len(self.series) > 1 else ""
        return _svg(self.height, "".join(parts)) + legend

    def _areas(self, x, y) -> list[str]:
        parts, below = [], np.zeros(len(self.times))
        xs = x(self.times)
        for n, (name, values) in enumerate(self.series):
            above = below + values
            points = [f"{a:.1f},{b:.1f}" for a, b in zip(xs, y(above))]
            points += [f"{a:.1f},{b:.1f}" for a, b in zip(xs[::-1], y(below)[::-1])]
            parts.append(f'<polygon class="series" points="{" ".join(points)}" fill="{PALETTE[n % len(PALETTE)]}" '
                         f'fill-opacity="0.85"><title>{text(name)}</title></polygon>')
            below = above
        return parts

    def _lines(self, x, y) -> list[str]:
        parts = []
        for n, (name, values) in enumerate(self.series):
            points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x(self.times), y(values)))
            parts.append(f'<polyline class="series" points="{points}" fill="none" stroke="{PALETTE[n % len(PALETTE)]}" '
                         f'stroke-width="2"><title>{text(name)}</title></polyline>')
        return parts


_SHAPES = {"access": ("#4e79a7", "circle"), "useful": ("#2e8b57", "up"), "confirm": ("#2e8b57", "up"),
           "wrong": ("#c0392b", "down"), "outdated": ("#c0392b", "down"), "pin": ("#7d3c98", "square"),
           "unpin": ("#7d3c98", "square"), "decay": ("#8e6c3a", "down")}


def _mark(m: Mark, cx: float, cy: float) -> str:
    colour, shape = _SHAPES.get(m.kind, ("#555", "circle"))
    tip = f"<title>{text(m.label)}</title>"
    if shape == "circle":
        return f'<circle class="mark" cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{colour}">{tip}</circle>'
    if shape == "square":
        return f'<rect class="mark" x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="{colour}">{tip}</rect>'
    tip_y, base_y = (cy - 7, cy + 4) if shape == "up" else (cy + 7, cy - 4)
    return (f'<polygon class="mark" points="{cx:.1f},{tip_y:.1f} {cx - 6:.1f},{base_y:.1f} {cx + 6:.1f},{base_y:.1f}" '
            f'fill="{colour}">{tip}</polygon>')


def bar_chart(items: Sequence[tuple[str, int]], colour: str = PALETTE[0]) -> str:
    """Horizontal bars, one per (label, count), in the order given."""
    row, label_w, count_w = 24, 230, 70
    height = _TOP + row * max(len(items), 1) + 8
    top = max((n for _, n in items), default=0) or 1
    span = WIDTH - label_w - count_w - _RIGHT
    parts = [_frame(height)]
    for i, (label, n) in enumerate(items):
        y = _TOP + i * row
        w = max(n / top * span, 1.0)
        name = label or "(none)"
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{text(cut(name))}<title>{text(name)}'
                     "</title></text>")
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" fill="{colour}">'
                     f"<title>{text(name)}: {n:,}</title></rect>")
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 16}">{n:,}</text>')
    return _svg(height, "".join(parts))


def graph_chart(nodes: Sequence[dict], edges: Sequence[tuple[int, int, int, bool]], height: int = 520) -> str:
    """Nodes (title, memories, x, y in 0..1) sized by their memories, joined by lines as wide as the
    memories linking both ends (dashed when only their entity notes link each other)."""
    pad = 70
    most = max((n["memories"] for n in nodes), default=1) or 1
    widest = max((both for _, _, both, _ in edges), default=1) or 1

    def at(node):
        return pad + node["x"] * (WIDTH - 2 * pad), 30 + node["y"] * (height - 70)

    parts = [_frame(height)]
    for i, j, both, joined in edges:
        (ax, ay), (bx, by) = at(nodes[i]), at(nodes[j])
        width = 0.8 + 4.0 * both / widest
        dash = ' stroke-dasharray="4 3"' if not both else ""
        why = f"{both:,} memories link both" if both else "their entity notes link each other"
        parts.append(f'<line class="edge" x1="{ax:.1f}" y1="{ay:.1f}" x2="{bx:.1f}" y2="{by:.1f}" stroke="#8a9bb0" '
                     f'stroke-opacity="0.7" stroke-width="{width:.1f}"{dash}><title>{text(nodes[i]["title"])} – '
                     f'{text(nodes[j]["title"])}: {why}</title></line>')
    for node in nodes:
        cx, cy = at(node)
        r = 5 + 17 * math.sqrt(node["memories"] / most)
        parts.append(f'<circle class="node" cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{PALETTE[0]}" '
                     f'fill-opacity="0.95" stroke="#fff"><title>{text(node["title"])}: {node["memories"]:,} memories'
                     "</title></circle>")
        parts.append(f'<text class="label" x="{cx:.1f}" y="{cy + r + 13:.1f}" text-anchor="middle">'
                     f'{text(cut(node["title"], 22))}</text>')
    return _svg(height, "".join(parts))


def _svg(height: int, body: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
            f'role="img">{body}</svg>')


def _frame(height: int) -> str:
    return f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#fff"/>'


def _scale(value: float) -> tuple[float, float]:
    """(top, step) of an axis from 0 to at least value: a round step (1, 2, 2.5 or 5 times a power of ten)
    that takes at most five steps to reach it; (1, 0.25) for nothing."""
    if value <= 0 or not math.isfinite(value):
        return 1.0, 0.25
    power = 10 ** math.floor(math.log10(value / 5))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power * 5 >= value * 0.999999)
    return step * math.ceil(value / step - 1e-9), step


def _y_axis(y_max: float, step: float, y, label: str) -> list[str]:
    parts = []
    for k in range(int(round(y_max / step)) + 1):
        value = k * step
        py = float(y(value))
        parts.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{py:.1f}" y2="{py:.1f}" stroke="#e4e7eb"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{number(value)}</text>')
    parts.append(f'<text x="14" y="{_TOP + 60}" transform="rotate(-90 14 {_TOP + 60})" text-anchor="end">{text(label)}</text>')
    return parts


def _x_axis(x0: float, x1: float, x, height: int) -> list[str]:
    parts, base = [], height - _BOTTOM
    parts.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{base}" y2="{base}" stroke="#9aa5b1"/>')
    for k in range(6):
        t = x0 + (x1 - x0) * k / 5
        px = float(x(t))
        anchor = "start" if k == 0 else "end" if k == 5 else "middle"
        parts.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{base}" y2="{base + 5}" stroke="#9aa5b1"/>')
        parts.append(f'<text x="{px:.1f}" y="{base + 19}" text-anchor="{anchor}">{day(t)}</text>')
    return parts


def _today(px: float, height: int) -> list[str]:
    base = height - _BOTTOM
    return [f'<rect class="projection" x="{px:.1f}" y="{_TOP}" width="{max(WIDTH - _RIGHT - px, 0):.1f}" '
            f'height="{base - _TOP}" fill="#f4f6f8" fill-opacity="0.45"/>',
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{_TOP}" y2="{base}" stroke="#333" stroke-dasharray="3 3"/>',
            f'<text x="{px + 4:.1f}" y="{_TOP + 12}">today → if unused</text>']


def _legend(names: list[str]) -> str:
    items = "".join(f'<span class="key"><i style="background:{PALETTE[n % len(PALETTE)]}"></i>{text(name)}</span>'
                    for n, name in enumerate(names))
    return f'<div class="legend">{items}</div>'


__all__ = ["Mark", "PALETTE", "TimeChart", "bar_chart", "cut", "day", "graph_chart", "number", "text"]
