"""The report as one self-contained HTML file: inline CSS, charts as inline SVG (svg.py), no script and
no request at view time (its Content-Security-Policy forbids both, so even a note title that got past
the escaping could not run). Every string from a note goes through svg.text."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.files import atomic_write
from .figures import HORIZONS, Fading, Figures, Graph
from .history import FUTURE_DAYS, NoteCurve, VaultCurve
from .svg import Mark, TimeChart, bar_chart, day, graph_chart, number, text

FILE_NAME = "vaultmem-report.html"
_LISTED = 50  # findings of one kind listed; the rest are counted
_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","PingFang SC",
sans-serif;color:#1f2933;background:#f7f8fa;margin:0}
main{max-width:920px;margin:0 auto;padding:24px 20px 60px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:0 0 6px}h3{font-size:15px;margin:14px 0 4px}
section{background:#fff;border:1px solid #e4e7eb;border-radius:8px;padding:16px 18px;margin:18px 0}
p{margin:4px 0 10px}.muted{color:#616e7c}nav a{margin-right:14px;color:#2f6690}
svg{max-width:100%;height:auto;display:block;font-size:12px;fill:#3e4c59}svg text{fill:#3e4c59}
.legend{margin:6px 0 0 60px;font-size:13px}.key{margin-right:16px;white-space:nowrap}
.key i{display:inline-block;width:11px;height:11px;margin-right:5px;border-radius:2px;vertical-align:-1px}
.grid{display:grid;grid-template-columns:1fr;gap:6px}
table{border-collapse:collapse;width:100%;font-size:13.5px}th,td{text-align:left;padding:4px 8px;
border-bottom:1px solid #eef0f2;vertical-align:top}th{color:#52606d;font-weight:600}td.num{text-align:right;
white-space:nowrap}.figure{font-size:22px;font-weight:600}.figures{display:flex;gap:28px;flex-wrap:wrap;margin:8px 0}
td.date{white-space:nowrap}.ok{color:#2e7d32}.warn{color:#b44d12}ul{margin:4px 0 8px;padding-left:20px}code{font-size:13px}
"""


@dataclass
class Written:
    """Where the report went and how big it is."""

    path: str
    bytes: int
    memories: int
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json)."""
        return {"path": self.path, "bytes": self.bytes, "memories": self.memories, "note": self.note}


def write(figures: Figures, folder: Path, version: str) -> Written:
    """Render the figures and write them to `folder`/vaultmem-report.html (the folder made if missing)."""
    html = render(figures, version).encode("utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder.resolve() / FILE_NAME
    atomic_write(path, html, durable=False)
    return Written(str(path), len(html), figures.counts["memories"], figures.note.id if figures.note else None)


def render(figures: Figures, version: str) -> str:
    """The whole HTML page."""
    sections = [_strength(figures.curve)]
    if figures.note is not None:
        sections.append(_note(figures.note, figures.fading.threshold))
    sections += [_distribution(figures), _fading(figures.fading), _graph(figures.graph), _lint(figures.lint)]
    nav = "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in
                  [("strength", "Strength"), *([("note", "This memory")] if figures.note else []),
                   ("distribution", "Distribution"), ("fading", "Decay next"), ("graph", "Entities"), ("lint", "Lint")])
    generated = time.strftime("%Y-%m-%d %H:%M", time.localtime(figures.now))
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"<title>Memory report: {text(figures.vault)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>Memory report: {text(figures.vault)}</h1>"
            f'<p class="muted">As of {generated}, by vaultmem {text(version)}.</p>{_counts(figures.counts)}'
            f"<nav>{nav}</nav>{''.join(sections)}</main></body></html>\n")


def _counts(counts: dict[str, int]) -> str:
    shown = [("memories", counts["memories"]), *((k, v) for k, v in counts.items()
                                               if k not in ("memories", "entities", "episodes")),
             ("entities", counts["entities"]), ("episode notes", counts["episodes"])]
    cells = "".join(f'<div><div class="figure">{n:,}</div><div class="muted">{text(label)}</div></div>'
                    for label, n in shown)
    return f'<div class="figures">{cells}</div>'


def _strength(curve: VaultCurve) -> str:
    intro = ("<p>The summed effective strength of the memories recall returns by default (not superseded, "
             "archived or candidates), by lifecycle: each memory from its write, decayed by its half-life, "
             "raised by each recorded use and by feedback, as recall rated it on each date. After today: "
             f"what decay does in the next {FUTURE_DAYS} days if none of them is used again.</p>")
    if not curve.series:
        return _section("strength", "Strength over time", intro + "<p>No memory yet.</p>")
    series = sorted(curve.series.items(), key=lambda kv: -float(kv[1].max()))  # the largest at the bottom
    chart = TimeChart(curve.times, curve.now, series, stacked=True, y_label="summed strength").svg()
    now_at = int(abs(curve.times - curve.now).argmin())
    total_now, total_end = sum(float(v[now_at]) for _, v in series), sum(float(v[-1]) for _, v in series)
    summary = (f"<p>Today: {number(total_now)} over {int(curve.written[now_at]):,} memories; in {FUTURE_DAYS} days, "
               f"unused: {number(total_end)}.</p>")
    return _section("strength", "Strength over time", intro + chart + summary)


def _note(note: NoteCurve, threshold: float) -> str:
    marks = [Mark(ev["ts"], ev["strength"], ev["detail"].split(":")[0] if ev["kind"] == "feedback" else ev["kind"],
                  f"{day(ev['ts'])}: {_event_words(ev)} (strength {number(ev['strength'])} after)")
             for ev in note.events]
    chart = TimeChart(note.times, note.now, [(note.title, note.values)], stacked=False, threshold=threshold,
                      marks=marks, height=280).svg()
    half = "never (pinned or permanent)" if note.half_life_hours == float("inf") else _hours(note.half_life_hours)
    now_at = int(abs(note.times - note.now).argmin())
    about = (f"<p>Lifecycle <b>{text(note.lifecycle or 'default')}</b> (half-life {half}), score "
             f"{number(note.score)}, written {day(note.written)}; strength today {number(float(note.values[now_at]))}. "
             "Circles are uses (each resets the clock and adds a reward), triangles feedback (up: useful or "
             "confirm, down: wrong or outdated) and decay, squares pins.</p>")
    rows = "".join(f"<tr><td class=\"date\">{day(ev['ts'])}</td><td>{text(_event_words(ev))}</td>"
                   f'<td class="num">{number(ev["strength"])}</td></tr>' for ev in note.events[-_LISTED:])
    events = (f"<h3>Events ({len(note.events):,}{', the last ' + str(_LISTED) if len(note.events) > _LISTED else ''})</h3>"
              f"<table><tr><th>date</th><th>what</th><th>strength after</th></tr>{rows}</table>"
              if note.events else "<p>No use, feedback or pin recorded yet.</p>")
    return _section("note", text(note.title), about + chart + events)


def _event_words(ev: dict[str, Any]) -> str:
    words = {"access": "used (recalled)", "pin": "pinned", "unpin": "unpinned", "decay": "decayed",
             "feedback": "feedback"}[ev["kind"]]
    return f"{words} {ev['detail']}".strip()


def _hours(hours: float) -> str:
    return f"{number(hours)} h" if hours < 48 else f"{number(hours / 24)} days"


def _distribution(figures: Figures) -> str:
    titles = {"status": "By status", "lifecycle": "By lifecycle (not archived)", "namespace": "By namespace",
              "source": "By source (who wrote it)"}
    parts = [f"<h3>{titles[key]}</h3>{bar_chart(items, colour)}"
             for (key, items), colour in zip(figures.distribution.items(), ("#4e79a7", "#59a14f", "#f28e2b", "#b07aa1"))
             if items]
    body = "".join(parts) if parts else "<p>No memory yet.</p>"
    return _section("distribution", "Distribution", f'<div class="grid">{body}</div>')


def _fading(fading: Fading) -> str:
    short, long = HORIZONS
    intro = (f"<p>Memories whose effective strength is at or above gc's threshold ({number(fading.threshold)}) today "
             f"and falls below it within {short} or {long} days if nothing uses them (a use resets the clock). "
             f"<code>vaultmem gc</code> archives such a memory once it has also gone unused for "
             f"{number(fading.unused_days)} days; a pinned memory never fades.</p>")
    bars = bar_chart([(f"within {short} days", fading.within[short]),
                      (f"in {short + 1} to {long} days", fading.within[long] - fading.within[short]),
                      ("below the threshold already", fading.below_now)], "#e15759")
    if not fading.notes:
        return _section("fading", "What decay takes next", intro + bars)
    rows = "".join(
        f"<tr><td>{text(n['title'])}</td><td>{text(n['namespace'])}</td><td>{text(n['lifecycle'])}</td>"
        f'<td class="num">{number(n["now"])}</td><td class="date">{day(n["crosses"])}</td>'
        f"<td>{text(n['gc'] if isinstance(n['gc'], str) else 'archives it from ' + day(n['gc']))}</td></tr>"
        for n in fading.notes)
    listed = f"<h3>The first {len(fading.notes)} to fall below</h3>" if fading.within[long] > len(fading.notes) \
        else "<h3>Falling below</h3>"
    table = ("<table><tr><th>memory</th><th>namespace</th><th>lifecycle</th><th>strength today</th>"
             f"<th>below on</th><th>gc</th></tr>{rows}</table>")
    return _section("fading", "What decay takes next", intro + bars + listed + table)


def _graph(graph: Graph) -> str:
    if not graph.nodes:
        return _section("graph", "Entity graph", f"<p>No memory links any of the {graph.entities:,} entities yet.</p>")
    intro = (f"<p>The {len(graph.nodes)} entities (of {graph.entities:,}) most memories link to, sized by how many; a "
             "line joins two that memories link together (wider: more of them), dashed when only their entity "
             "notes link each other.</p>")
    return _section("graph", "Entity graph", intro + graph_chart(graph.nodes, graph.edges))


def _lint(record: dict[str, Any]) -> str:
    findings = record.get("findings") or {}
    if not findings:
        return _section("lint", "Lint findings", "<p>Lint could not run.</p>")
    which = "<code>vaultmem lint</code>" if record.get("strict") else "<code>vaultmem doctor</code> (no secret or expiry checks)"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(record.get("at") or 0)))
    since = int(record.get("changed_since") or 0)
    changed = (f" {since:,} notes were written or edited since: run <code>vaultmem lint</code> again for their findings."
               if since else "")
    head = f"<p>As {which} found them on {when}.{changed}</p>"
    lines = [(title, items) for title, items in _finding_lines(findings) if items]
    if not lines:
        return _section("lint", "Lint findings", head + '<p class="ok">Nothing to act on.</p>')
    parts = []
    for title, items in lines:
        more = f"<li class=\"muted\">and {len(items) - _LISTED:,} more</li>" if len(items) > _LISTED else ""
        shown = "".join(f"<li>{text(item)}</li>" for item in items[:_LISTED])
        parts.append(f'<h3 class="warn">{text(title)} ({len(items):,})</h3><ul>{shown}{more}</ul>')
    fixes = findings.get("fixes") or {}
    hint = ("<p class=\"muted\">Fixes: " + "; ".join(f"{text(k.replace('_', ' '))}: <code>{text(v)}</code>"
                                                     for k, v in fixes.items()) + "</p>") if fixes else ""
    return _section("lint", "Lint findings", head + "".join(parts) + hint)


def _finding_lines(f: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each kind of finding as a title and one line per finding, in the words `vaultmem doctor` prints."""
    return [
        ("Notes that cannot be read", [f"{i['path']}: {i['error']}" for i in f.get("unparsable", [])]),
        ("Event log lines skipped", [f"{i['path']}, line {i['line']}: {i['problem']}" for i in f.get("bad_log_lines", [])]),
        ("Ids held by more than one note", [f"{k}: {', '.join(v)}" for k, v in (f.get("duplicate_ids") or {}).items()]),
        ("Memories that restate each other", [f"{', '.join(g['paths'])} ({g['reason']})"
                                              for g in f.get("duplicate_memories", [])]),
        ("Broken links", [f"[[{i['link']}]] in {i['path']}" for i in f.get("broken_links", [])]),
        ("Git conflict markers", [f"{i['path']}, line {i['line']}" for i in f.get("conflict_markers", [])]),
        ("Sync conflict copies", list(f.get("sync_conflicts", []))),
        ("Secrets", [f"{i['path']} ({', '.join(i['kinds'])})" for i in f.get("secrets", [])]),
        ("Expired", [f"{i['path']} (expired {i['expires']})" for i in f.get("expired", [])]),
        ("Too long to index whole", [f"{i['path']} ({i['chars']:,} characters)" for i in f.get("oversized", [])]),
        ("Warnings", list(f.get("warnings", []))),
    ]


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{title}</h2>{body}</section>'


__all__ = ["FILE_NAME", "Written", "render", "write"]
