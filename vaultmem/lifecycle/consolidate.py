"""Consolidation (SPEC §7, issue 17 item 7): repeated events or choices become one semantic note that
links its sources, with no LLM.

Candidates: active memory notes of the types in `consolidate.types` (events, episodes, choices and the
untyped `fact` every plain remember writes), not written by consolidation itself.
Grouping (pure, `group_gists`): notes group only within one scope, the namespace and the entities
they link to (the same choice by two people is no repetition). A note's gist is the set of its index terms (text/terms.py: stemmed,
stopwords out; of Chinese text its 2-grams) without digits, so the dates and amounts of each occurrence do not count. A group is
its core, a set of terms that every member holds whole and that is at least `coverage` (0.5) of each
member's own terms, `min_shared` (2) terms or more: "ordered an oat milk latte", "ordered oat milk
flat white" and "ordered an oat milk cappuccino" share {order, oat, milk}. Notes are taken oldest
first: one joins the group with the largest core it qualifies for, else it pairs with an earlier loose
note whose shared terms qualify for both (a new group); a group's core may shrink to take a note in,
while it still qualifies for every member. Every member holding the whole core keeps a
group from chaining unrelated notes (A like B, B like C, A unlike C), and the coverage keeps a long
note that merely names two of the words out ("bought oat milk at the store" is not an order). Loose
notes are found by prefix filtering (a set holding half of another holds one of its rarest half), so
no pair is missed and a large vault is not compared pairwise. Only groups of at least `min_repeats`
notes are consolidated.
Writing: the note goes through the write pipeline (policy, secrets, dedup apply) as
`source: consolidation`, type and lifecycle `preference`; then its `consolidates` (the sources' ids)
and `confidence` properties are set by a minimal edit. A run records each note it writes as a
`consolidate` event in this device's log. A later run:
- finds a group whose sources a live consolidated note already lists: nothing to do; a new source
  updates that note (its `consolidates`, `confidence` and a link line) instead of writing a second one;
- finds a group whose sources a recorded consolidation lists but whose note is gone (a person deleted
  it) or not active: skips it, so a deleted consolidation is never recreated.
The sources are never edited: they keep decaying as before.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError
from ..store.events import append_events, log_files
from ..text import terms as text

if TYPE_CHECKING:
    from ..settings import ConsolidateSettings
    from ..store.store import Store

SOURCE = "consolidation"
_LINK_HEADER = "Sources:"
_EVENT = b'"event":"consolidate"'
_CONFIDENCE_CAP = 0.95
_CJK_FIRST = "\u2e80"  # where CJK scripts begin
_WORDS = re.compile(r"\w+(?:[-.']\w+)*")


@dataclass
class Group:
    """A set of repeated notes and what consolidation does with it.

    action: create | update | unchanged | skip (reason says why); note: the consolidated note, if any.
    """

    key: str
    namespace: str
    sources: list[dict[str, Any]]
    core: list[str]  # index terms (stems, CJK 2-grams): for matching, never shown
    words: list[str] = field(default_factory=list)  # the core in the sources' own words: what people read
    confidence: float = 0.0
    days: int = 0  # distinct days the sources were written on
    action: str = ""
    reason: str = ""
    note: dict[str, str] | None = None

    @property
    def ids(self) -> list[str]:
        """The sources' ids, oldest first."""
        return [s["id"] for s in self.sources]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json)."""
        return {"key": self.key, "namespace": self.namespace, "core": self.core, "words": self.words,
                "confidence": self.confidence,
                "action": self.action, "reason": self.reason, "note": self.note,
                "sources": [{k: s[k] for k in ("id", "path", "title")} for s in self.sources]}


@dataclass
class Report:
    """What a consolidation run found (and, unless dry_run, did)."""

    dry_run: bool
    candidates: int
    groups: list[Group] = field(default_factory=list)

    @property
    def written(self) -> list[Group]:
        """The groups that created or updated a note (or would, in a dry run)."""
        return [g for g in self.groups if g.action in ("create", "update")]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json)."""
        return {"dry_run": self.dry_run, "candidates": self.candidates,
                "groups": [g.to_dict() for g in self.groups]}


# -- the pure half ----------------------------------------------------------------------------------
def gist(plain: str, names: Iterable[str] = ()) -> frozenset[str]:
    """The terms a repeated event is recognised by: a text's index terms but those holding digits, single
    characters and the words of the entity names given (the scope holds those), and of Chinese (CJK)
    text its 2-grams only (its 3-grams would count each shared phrase twice)."""
    named = {t for name in names for t in text.terms(name)}
    return frozenset(t for t in text.terms(plain) if len(t) > 1 and t not in named
                     and not any(c.isdigit() for c in t) and not (len(t) == 3 and t[0] >= _CJK_FIRST))


def _pieces(body: str, core: set[str]) -> Iterator[tuple[str, set[str]]]:
    """The words of a text that hold terms of a core, as written and in the text's order, each with the
    core terms it holds; of CJK text the runs of characters a core 2-gram covers ("燕麦拿铁" holds
    燕麦, 麦拿 and 拿铁)."""
    for word in _WORDS.findall(text.shown_text(body)):
        folded = text.normalize(word)
        if any(c >= _CJK_FIRST for c in folded):
            covered = [any(folded[j:j + 2] in core for j in (i - 1, i) if j >= 0) for i in range(len(folded))]
            for part in "".join(w if c else " " for w, c in zip(word, covered)).split():
                yield part, core.intersection(text.char_ngrams(text.normalize(part), 2))
        elif held := core.intersection(text.terms(word)):
            yield word, held


def phrase(body: str, core: Iterable[str]) -> str:
    """The words of a text that make a group's core, in the text's order ("Ordered oat milk" of
    "Ordered an oat milk latte at Blue Bottle" and the core {order, oat, milk})."""
    return " ".join(piece for piece, _ in _pieces(body, set(core)))


def core_words(bodies: Iterable[str], core: Iterable[str]) -> list[str]:
    """A core as people read it: for each of its terms (stems, CJK 2-grams) the word of these texts that
    holds it most often ("latte" for latt, "燕麦拿铁" for 燕麦 and 拿铁), each word once, in the order the
    texts first use them."""
    core = set(core)
    first: dict[str, int] = {}
    counts: dict[str, Counter] = {}
    for body in bodies:
        for piece, held in _pieces(body, core):
            first.setdefault(piece, len(first))
            for term in held:
                counts.setdefault(term, Counter())[piece] += 1
    chosen = {max(seen, key=lambda p: (seen[p], -first[p])) for seen in counts.values()}
    return sorted(chosen, key=first.__getitem__)


def confidence(count: int, days: int) -> float:
    """How sure a consolidation is: 1 - 0.5 ** ((count + days) / 2 - 1), at most 0.95, two decimals.

    count: sources; days: the distinct days they were written on. Three on one day give 0.5, three on
    three days 0.75, five on five days 0.94: repetition over time counts for more than a burst.
    """
    if count < 1:
        return 0.0
    return round(min(_CONFIDENCE_CAP, 1 - 0.5 ** max((count + days) / 2 - 1, 0)), 2)


def _rarest_first(terms: Iterable[str], df: Counter) -> list[str]:
    return sorted(terms, key=lambda t: (df[t], t))


def _prefix(ordered: list[str], coverage: float) -> list[str]:
    """The rarest terms of a set (given rarest first), enough that any set holding `coverage` of it
    holds one of them (prefix filtering)."""
    return ordered[:max(len(ordered) - math.ceil(coverage * len(ordered)) + 1, 1)]


def _covers(core: frozenset[str], terms: frozenset[str], coverage: float, min_shared: int) -> bool:
    """Whether a note holds a whole core that is at least `coverage` of its own terms."""
    return len(core) >= min_shared and core <= terms and len(core) >= coverage * len(terms)


def group_gists(gists: list[tuple[str, frozenset[str]]], coverage: float,
                min_shared: int) -> list[tuple[list[int], frozenset[str]]]:
    """Group (scope, gist) pairs given oldest first; returns (member positions, core) of every group
    of two or more, in order of their first member.

    A group is its core: every member holds every term of it, and it is at least `coverage` of each
    member's terms (and `min_shared` terms or more). A note joins the group with the largest core it
    holds whole; else the group whose core, cut down to the terms the note shares, still qualifies for
    every member (the core shrinks: two first members that happened to share a detail do not shut the
    others out); else it pairs with the earlier loose note sharing the most terms with it, if those
    qualify for both (a new group, which earlier loose notes holding its core join too); else it stays
    loose.
    """
    df = Counter(t for _, g in gists for t in g)
    cores: list[frozenset[str]] = []
    members: list[list[int]] = []
    widest: list[int] = []  # the most terms of any member: a shrunk core must still cover that one
    groups_by_term: dict[tuple[str, str], list[int]] = {}  # (scope, a term of the core's prefix) -> groups
    loose_by_term: dict[tuple[str, str], list[int]] = {}  # (scope, a prefix term) -> loose notes
    placed: set[int] = set()

    def index_group(g: int, scope: str) -> None:
        for term in _prefix(_rarest_first(cores[g], df), coverage):
            listed = groups_by_term.setdefault((scope, term), [])
            if g not in listed:
                listed.append(g)

    def join(g: int, position: int, core: frozenset[str], scope: str) -> None:
        members[g].append(position)
        widest[g] = max(widest[g], len(gists[position][1]))
        placed.add(position)
        if core != cores[g]:
            cores[g] = core
            index_group(g, scope)

    for position, (scope, terms) in enumerate(gists):
        if len(terms) < min_shared:
            continue
        ordered = _rarest_first(terms, df)
        near = list(dict.fromkeys(g for t in ordered for g in groups_by_term.get((scope, t), ())))
        whole = [g for g in near if _covers(cores[g], terms, coverage, min_shared)]
        if whole:
            best = max(whole, key=lambda g: (len(cores[g]), -g))
            join(best, position, cores[best], scope)
            continue
        # a shrink keeps the core's rarest term, its most specific word: a group may lose a detail
        # its first members happened to share, never what it is about
        fit = [g for g in near if _rarest_first(cores[g], df)[0] in terms
               and len(terms & cores[g]) >= max(min_shared, coverage * max(widest[g], len(terms)))]
        if fit:
            best = max(fit, key=lambda g: (len(terms & cores[g]), -g))
            join(best, position, cores[best] & terms, scope)
            continue
        loose = list(dict.fromkeys(p for t in _prefix(ordered, coverage) for p in loose_by_term.get((scope, t), ())
                                   if p not in placed))
        shared = sorted(((len(terms & gists[p][1]), p) for p in loose), key=lambda x: (-x[0], x[1]))
        core: frozenset[str] = frozenset()
        for count, other in shared:
            both = terms & gists[other][1]
            if count >= min_shared and _covers(both, terms, coverage, min_shared) \
                    and _covers(both, gists[other][1], coverage, min_shared):
                core = both
                break
        if not core:
            for term in _prefix(ordered, coverage):
                loose_by_term.setdefault((scope, term), []).append(position)
            continue
        joined = sorted(p for p in loose if _covers(core, gists[p][1], coverage, min_shared))
        cores.append(core)
        members.append([])
        widest.append(0)
        for p in [*joined, position]:
            join(len(cores) - 1, p, core, scope)
        index_group(len(cores) - 1, scope)
    return [(m, cores[g]) for g, m in enumerate(members)]


# -- the vault half ---------------------------------------------------------------------------------
def settings(vault: Store, min_repeats: int | None = None) -> ConsolidateSettings:
    """The `consolidate` settings, with a caller's --min over the configured one."""
    cfg = vault.settings.consolidate
    if min_repeats is not None:
        if min_repeats < 2:
            raise VaultmemError("--min must be 2 or more: one note is no repetition")
        cfg = cfg._replace(min_repeats=min_repeats)
    return cfg


def consolidate(vault: Store, dry_run: bool = False, min_repeats: int | None = None,
                now: float | None = None) -> Report:
    """Find repeated events and choices and write (or update) one consolidated note per group."""
    cfg = settings(vault, min_repeats)
    with vault.index.writing():
        vault.index.catch_up()
        rows = _candidates(vault, cfg.types)
        gists = [(_scope(r), gist(text.plain_text(r["body"]), r["links"])) for r in rows]
        report = Report(dry_run, len(rows))
        existing = _consolidated(vault)
        recorded = _recorded(vault)
        for positions, core in group_gists(gists, float(cfg.coverage), int(cfg.min_shared)):
            if len(positions) < int(cfg.min_repeats):
                continue
            group = _group([rows[p] for p in positions], core)
            _decide(group, existing, recorded)
            report.groups.append(group)
            if not dry_run and group.action in ("create", "update"):
                _write(vault, group, existing, now)
    return report


def _candidates(vault: Store, types: list[str]) -> list[dict[str, Any]]:
    """Active memories of the consolidated types, oldest first (ties by id: the order is stable)."""
    marks = ", ".join("?" * len(types))
    return vault.visible(vault.index.select_notes(
        f"kind = 'memory' AND (status = 'active' OR status = '' OR status IS NULL) AND source != ? "
        f"AND type IN ({marks}) AND error = ''", (SOURCE, *types), order="ts, id",
        columns=("id", "path", "title", "ts", "score", "namespace", "tags", "links", "body")))


def _scope(row: dict[str, Any]) -> str:
    """What a group's members must share besides their terms: the namespace and the entities they
    link to (the same choice of two people is no repetition)."""
    return "|".join([row["namespace"], *sorted({text.normalize(link) for link in row["links"]})])


def _group(rows: list[dict[str, Any]], core: frozenset[str]) -> Group:
    days = {dt.datetime.fromtimestamp(r["ts"], dt.timezone.utc).date() for r in rows}
    ordered = sorted(core)
    key = f"{_scope(rows[0])}:{' '.join(ordered)}"
    return Group(key, rows[0]["namespace"], rows, ordered, core_words((r["body"] for r in rows), core),
                 confidence(len(rows), len(days)), len(days))


def _consolidated(vault: Store) -> dict[str, dict[str, Any]]:
    """Source id -> the consolidated note listing it ({id, path, title, status, sources})."""
    from ..notes.note import parse_note

    found: dict[str, dict[str, Any]] = {}
    for row in vault.index.select_notes("kind = 'memory' AND source = ?", (SOURCE,), order="ts, id",
                                        columns=("id", "path", "title", "status")):
        try:
            meta = parse_note((vault.root / row["path"]).read_bytes()).meta
        except (OSError, VaultmemError):
            continue  # gone since indexed, or unreadable: doctor reports it, it lists nothing
        listed = meta.get("consolidates")
        sources = [str(s) for s in listed] if isinstance(listed, list) else []
        note = {**row, "status": row["status"] or "active", "sources": sources}
        for source in sources:
            found.setdefault(source, note)
    return found


def _recorded(vault: Store) -> dict[str, dict[str, Any]]:
    """Source id -> the last recorded consolidate event listing it, from every device's log."""
    found: dict[str, dict[str, Any]] = {}
    for path in log_files(vault.state / "devices", "events"):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for line in data.splitlines():
            if _EVENT not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("sources"), list):
                for source in event["sources"]:
                    found[str(source)] = event
    return found


def _decide(group: Group, existing: dict[str, dict[str, Any]], recorded: dict[str, dict[str, Any]]) -> None:
    """Set what a group becomes: a new note, an update of the one listing its sources, or nothing."""
    note = next((existing[i] for i in group.ids if i in existing), None)
    if note is not None:
        group.note = {k: note[k] for k in ("id", "path", "title")}
        if note["status"] != "active":
            group.action, group.reason = "skip", f"its consolidated note is {note['status']}"
        elif set(group.ids) <= set(note["sources"]):
            group.action, group.reason = "unchanged", "already consolidated"
        else:
            group.action = "update"
            group.reason = f"{len(set(group.ids) - set(note['sources']))} new source(s)"
        return
    event = next((recorded[i] for i in group.ids if i in recorded), None)
    if event is not None:
        group.action, group.reason = "skip", f"consolidated before as {event.get('id')}, which is gone"
        return
    group.action, group.reason = "create", f"{len(group.sources)} repeats"


def _write(vault: Store, group: Group, existing: dict[str, dict[str, Any]], now: float | None) -> None:
    """Create or update the group's note, then record the consolidation in this device's log."""
    if group.action == "create":
        note = _create(vault, group)
    else:
        note = existing[next(i for i in group.ids if i in existing)]
        _update(vault, group, note)
    stamp = time.time() if now is None else now
    append_events(vault.device_dir, "events", [{"event": "consolidate", "id": note["id"], "key": group.key,
                                                "sources": group.ids, "ts": stamp}], stamp)


def _create(vault: Store, group: Group) -> dict[str, str]:
    """Write the note through the write pipeline, then set its consolidates and confidence."""
    from ..write.pipeline import remember

    shared = set.intersection(*({text.normalize_tag(str(t)) for t in s["tags"]} for s in group.sources))
    tags = [t for t in group.sources[0]["tags"] if text.normalize_tag(str(t)) in shared]
    score = min(10.0, max(float(s["score"]) for s in group.sources) + 1.0)
    result = remember(vault, _body(group), source=SOURCE, type="preference", lifecycle="preference",
                      tags=[*tags, "consolidated"], score=score, namespace=group.namespace)
    group.note = {"id": result.id, "path": result.path, "title": result.title}
    if result.action != "created":  # the pipeline found it said already (a near duplicate): not ours to mark
        group.action, group.reason = "skip", f"the write pipeline {result.action} it into {result.path}"
    else:
        _edit(vault, group.note, {"consolidates": group.ids, "confidence": group.confidence})
    return group.note


def _update(vault: Store, group: Group, note: dict[str, Any]) -> None:
    """Add the new sources to a consolidated note: its `consolidates`, `confidence` and link lines."""
    new = [s for s in group.sources if s["id"] not in note["sources"]]
    ids = [*note["sources"], *(s["id"] for s in new)]
    group.confidence = confidence(len(ids), group.days)  # (the days of sources outside this group aside)
    _edit(vault, note, {"consolidates": ids, "confidence": group.confidence},
          [_link(s) for s in new])
    note["sources"] = ids


def _body(group: Group) -> str:
    """`<the core's words> (recurring)`, the most typical source's text and a link line per source."""
    core = set(group.core)

    def typical(row: dict[str, Any]) -> tuple[float, int]:
        terms = gist(text.plain_text(row["body"]), row["links"])
        return -len(core & terms) / max(len(core | terms), 1), len(row["body"])

    example = min(group.sources, key=typical)
    said = text.shown_text(example["body"])
    if len(said) > 200:
        said = said[:199].rstrip() + "…"
    names = [f"[[{link}]]" for link in example["links"]]
    head = " ".join([*names, phrase(example["body"], core)]).strip()
    return "\n".join([f"{head} (recurring)", "", f"For example: {said}", "", _LINK_HEADER,
                      *(_link(s) for s in group.sources)])


def _link(row: dict[str, Any]) -> str:
    return f"- [[{row['title']}]]"


def _edit(vault: Store, note: dict[str, Any], changes: dict[str, Any], lines: list[str] | None = None) -> None:
    """Set these properties (a minimal edit), append these body lines, and index the new text."""
    from ..notes.writing import update_fields

    def edit(parsed: Any) -> str:
        out = update_fields(parsed, changes)
        if lines:
            out = out.rstrip("\r\n") + parsed.newline + parsed.newline.join(lines) + parsed.newline
        return out

    path = vault.root / note["path"]
    new_text = vault.edit_note(path, edit)
    vault.index.upsert([vault.record_for(path, new_text.encode("utf-8"))])
    vault.index.wrote()
    vault.audit([{"event": "edit", "id": note["id"], "path": note["path"], "because": "consolidate", "fields": sorted(changes)}])


__all__ = ["Group", "Report", "confidence", "consolidate", "core_words", "gist", "group_gists"]
