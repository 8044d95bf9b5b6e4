"""The pure half of the write pipeline: one memory's text and fields in, its finished draft out.

A draft holds everything the rest of the pipeline needs and nothing it must decide with the vault:
the cleaned and linked body, the properties, the rendered note, its fingerprint, its near-duplicate
keys and the index record it will have. No file is read or written here, so a batch can draft its
memories in worker processes while the writer decides, in order, what each one becomes.
"""

from __future__ import annotations

import datetime as dt
import gc
import re
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields as dataclass_fields
from typing import TYPE_CHECKING, Any

from ..text import terms as text
from ..text.decay import POLICY_KEYS
from ..text.times import iso_time
from .extract import TITLE_CUES
from ..errors import VaultmemError
from ..store.caller import lower_trust
from ..store.index.records import Record, encode_terms
from ..notes.names import new_ulid, safe_filename

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from .extract import Extraction, Extractor
    from .links import EntityMatcher
    from ..settings import Settings
    from .policy import Policy

TITLE_CHARS = 60
PARALLEL_MIN = 2000  # below this many memories, starting worker processes costs more than it saves
CHUNK = 250  # memories per worker job
_LEADING_CUES = re.compile(  # one or more framing cues at the start, with the punctuation after them
    r"^(?:(?:" + "|".join(re.escape(c).replace("'", "['’]") for c in sorted(TITLE_CUES, key=len, reverse=True))
    + r")(?![a-z])[\s:：,，、!！.。—-]*)+", re.IGNORECASE)
KEY_ORDER = ("id", "type", "value", "score", "timestamp", "tags", "entities", "source", "lifecycle", "trust", "status",
             "supersedes", "namespace", "episode", "merge", "version")
# the properties vaultmem writes or reads itself: a write's own `properties` take other names
OWN_PROPERTIES = frozenset([*KEY_ORDER, *POLICY_KEYS, "superseded_by", "tag", "aliases", "alias", "date",
                            "consolidates", "confidence"])


def entity_links(titles: Iterable[str]) -> list[str] | str:
    """The `entities` property: a list of quoted wikilinks, or "" (left out) when there are none."""
    return [f"[[{title}]]" for title in titles] or ""


def parse_time(value: str | dt.datetime | dt.date | None) -> dt.datetime:
    """An aware datetime from ISO 8601 text, a datetime or a date; naive times are local; None is now."""
    if value is None:
        return dt.datetime.now().astimezone().replace(microsecond=0)
    if isinstance(value, str):
        parsed = iso_time(value)
        if parsed is None:
            # the value is not repeated: a mistyped option may be a secret pasted in the wrong place
            raise VaultmemError("invalid timestamp: use ISO 8601, e.g. 2026-11-29T14:02:11+08:00")
        value = parsed
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    value = value.astimezone() if value.tzinfo is None else value
    offset = value.utcoffset()
    if offset is not None and offset % dt.timedelta(minutes=1):  # YAML (and Obsidian) keep whole minutes
        raise VaultmemError("invalid timestamp: its UTC offset must be whole minutes, e.g. +05:30")
    return value


def make_title(body: str) -> str:
    """A readable title from a memory's first line without a leading cue ("记住：", "remember:",
    "from now on,"): at most TITLE_CHARS characters, cut at a word."""
    line = next((ln.strip(" #-*>\t") for ln in body.splitlines() if ln.strip()), "")
    line = text.WIKILINK.sub(lambda m: m.group(3) or m.group(1), line)  # its alias, else its target
    bare = _LEADING_CUES.sub("", line)
    line = bare[:1].upper() + bare[1:] if bare.strip() and bare != line else line
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[:TITLE_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_CHARS // 2 else cut).rstrip(" ,.;:，。；：")


def union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    """Tags of both, in order, each once (compared case- and width-insensitively)."""
    out: dict[str, str] = {}
    for tag in [*first, *second]:
        out.setdefault(text.normalize_tag(tag), tag)
    return list(out.values())


@dataclass
class Draft:
    """One memory on its way to disk, after policy, extraction and linking."""

    body: str
    meta: dict[str, Any]
    title: str
    folder: str                   # inbox | memories (a folder role)
    entities: list[str]           # entities the body links to (title keys)
    redacted: list[str]
    explain: dict[str, Any] | None  # only when the caller asked why
    plain: str = ""               # text.plain_text of body: fingerprint, sketch and likeness share it
    fp: str = ""
    keys: list[int] = field(default_factory=list)
    stem: str = ""                # the file name it wants (without `.md`)
    data: bytes = b""             # the note as it will be written
    record: Record | None = None  # its index record, path and stat filled in once it is written
    supersedes: str = ""          # title of the note it replaces
    properties: dict[str, Any] = field(default_factory=dict)  # the write's own, after vaultmem's (merge: false)

    @property
    def merges(self) -> bool:
        """Whether the pipeline may fold this memory into another note, or another into its own (`merge: false`
        in its properties says no: a note of its own, replaced only by an explicit supersede)."""
        return self.meta.get("merge") is not False

    def fields(self) -> tuple[dict[str, Any], str]:
        """The properties (in the order written, vaultmem's empty ones left out; then the write's own) and body
        of the note."""
        meta = dict(self.meta, supersedes=f"[[{self.supersedes}]]" if self.supersedes else "")
        own = {k: meta[k] for k in KEY_ORDER if meta.get(k) not in ("", None)}
        return {**own, **self.properties}, self.body.rstrip("\n") + "\n"

    def decided(self, decision: str) -> None:
        """Say what became of the draft (shown by --explain)."""
        if self.explain is not None:
            self.explain["decision"] = decision

    def __reduce__(self) -> tuple:
        # drafts cross from worker processes by the hundred thousand: plain tuples unpickle ~3x faster
        # than dataclasses (and the record's terms are one string, see render)
        rec = self.record
        state = None if rec is None else tuple(map(rec.__getattribute__, _RECORD_FIELDS))
        return _rebuild, (self.body, self.meta, self.title, self.folder, self.entities, self.redacted, self.explain,
                          self.plain, self.fp, self.keys, self.stem, self.data, None, self.supersedes, self.properties,
                          state)


def _rebuild(*values: Any) -> Draft:
    draft = Draft(*values[:-1])
    if values[-1] is not None:
        draft.record = Record(*values[-1])
    return draft


class Drafter:
    """Turns checked items into drafts. Holds only rule tables and settings, so it pickles into
    worker processes; the entity matcher must already know every entity the batch names."""

    def __init__(self, settings: Settings, policy: Policy, extractor: Extractor, matcher: EntityMatcher | None,
                 device: str, explain: bool, max_trust: str | None = None):
        self.defaults = settings.defaults
        self.settings = settings.write
        self.points = settings.extraction.importance
        self.policy = policy
        self.extractor = extractor
        self.matcher = matcher if self.settings.link_entities else None
        self.device = device
        self.explain = explain
        self.max_trust = max_trust  # the caller's (store/caller.py): a source may lower trust, never raise it
        self.near_duplicate = float(self.settings.near_duplicate)

    def draft(self, body: str, fields: dict[str, Any]) -> Draft:
        """The draft of one checked item (see Writer.check)."""
        from .extract import importance

        d = self.defaults
        body, found = self.policy.clean(body)
        redacted = [f.kind for f in found]
        when = parse_time(fields.get("timestamp"))
        extraction = self.extractor.extract(body, when)
        kind = fields.get("type") or (extraction.values[0].type if extraction.values else d.type)
        value = fields.get("value")
        if value in (None, "") and not fields.get("type") and extraction.values:
            value = extraction.values[0].value
        value = self.clean(str(value), redacted) if value not in (None, "") else ""
        if fields.get("score") is None:
            score, parts = importance(extraction, position=fields.get("position"), points=self.points)
        else:
            score, parts = float(fields["score"]), [("given", float(fields["score"]))]
        source = str(fields.get("source") or d.source)
        trust = lower_trust(self.policy.trust(source), self.max_trust)
        staged = bool(fields.get("candidate")) or trust in self.settings.stage_trust
        for name in [*fields["entity"], *extraction.names]:
            self.clean(name, redacted)  # the entity notes themselves are the writer's (Writer.ensure_entities)
        linked, entities = self.matcher.link(body) if self.matcher is not None else (body, [])
        about = self.unlinked(fields["entity"], linked)
        # a title made from the cleaned body is clean; cleaning it again would re-hash a cut hash
        title = self.clean(str(fields["title"]), redacted) if fields.get("title") else make_title(linked)
        meta = {"id": new_ulid(when.timestamp()), "type": kind, "value": value, "score": round(score, 2),
                "timestamp": when, "tags": union(fields["tags"], extraction.tags), "entities": entity_links(about),
                "source": source,
                "lifecycle": str(fields.get("lifecycle") or d.lifecycle), "trust": trust,
                "status": "candidate" if staged else "active",
                "namespace": str(fields.get("namespace") or d.namespace),
                "episode": str(fields.get("episode") or ""), "merge": False if fields.get("merge") is False else None,
                "version": [f"{self.device}:1"]}
        explain = _explanation(extraction, parts, trust, staged, redacted, entities) if self.explain else None
        draft = Draft(linked, meta, title, "inbox" if staged else "memories",
                      [text.normalize(e) for e in [*entities, *about]],
                      redacted, explain)
        draft.properties = {name: self._cleaned(held, redacted) for name, held in fields["properties"].items()}
        draft.plain = text.plain_text(linked)
        draft.fp = text.digest(draft.plain)
        if self.near_duplicate < 1:
            from ..text.dedup import sketch_keys

            draft.keys = sketch_keys(draft.plain)
        draft.stem = safe_filename(title)
        self.render(draft)
        return draft

    def unlinked(self, names: Iterable[str], body: str) -> list[str]:
        """Titles of the named entities a body does not link to: the note's `entities` property
        links those (a memory about Acme that never names it still points at Acme's note)."""
        if self.matcher is None:
            return []
        linked = self.matcher.linked_titles(body)
        titles = (self.matcher.title_of(name) for name in names)
        return list(dict.fromkeys(t for t in titles if t is not None and t not in linked))

    def render(self, draft: Draft) -> None:
        """The note's bytes and index record."""
        from ..notes.writing import render_new
        from ..store.index.records import rendered_record

        meta, body = draft.fields()
        draft.data = render_new(meta, body).encode("utf-8")
        draft.record = rendered_record(draft.data, meta, body, f"{draft.folder}/{draft.stem}.md", draft.folder,
                                       (0, len(draft.data)), self.defaults, draft.keys or None, draft.plain,
                                       max_chars=self.settings.max_text_chars)
        # one string instead of ~60 dict entries: a batch holds 100,000 of these until the index takes them
        draft.record.terms = encode_terms(draft.record.terms)

    def supersede(self, draft: Draft, old_title: str) -> None:
        """Render a drafted note again with `supersedes: "[[old_title]]"`: of its index record only the
        hash, size and links change (a property's link is a link term, its text no other term)."""
        from ..notes.note import Note
        from ..notes.writing import render_new
        from ..store.index.records import content_hash, relink

        draft.supersedes = old_title
        meta, body = draft.fields()
        content = render_new(meta, body)
        draft.data = content.encode("utf-8")
        rec = draft.record
        if rec is None:
            raise VaultmemError(f"{draft.title!r} cannot supersede a note before it is drafted")
        rec.sha, rec.size = content_hash(draft.data), len(draft.data)
        relink(rec, Note(None, content, meta, body, "\n", True, len(content) - len(body)).links)

    def _cleaned(self, held: Any, redacted: list[str]) -> Any:
        """A property's value with the secrets of its text removed (a list's, item by item)."""
        if isinstance(held, list):
            return [self._cleaned(one, redacted) for one in held]
        return self.clean(held, redacted) if isinstance(held, str) else held

    def clean(self, value: str, redacted: list[str]) -> str:
        """The value with its secrets removed; their kinds are added to `redacted`."""
        cleaned, found = self.policy.clean(value)
        redacted.extend(f.kind for f in found)
        return cleaned

    def draft_all(self, items: list[tuple[str, dict[str, Any]]], pool: Executor | None = None) -> Iterator[Draft]:
        """Drafts of checked items, in order: in `pool` (see worker_pool) when given, a few chunks
        ahead of the caller (never the whole batch in memory at once)."""
        if pool is None:
            for body, fields in items:
                yield self.draft(body, fields)
            return
        from ..store.workers import worker_count

        ahead = 3 * worker_count()
        pending: deque = deque()
        for i in range(0, len(items), CHUNK):
            pending.append(pool.submit(_draft_chunk, items[i:i + CHUNK]))
            if len(pending) > ahead:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


@contextmanager
def worker_pool(drafter: Drafter, items: int) -> Iterator[Executor | None]:
    """Worker processes for a batch of `items` memories, one per core, each holding `drafter`; None
    for a small batch or a single core. They draft, and at the end build the index records the
    writer would otherwise build alone (Writer.finish)."""
    from ..store.workers import process_pool, worker_count

    workers = worker_count()
    if workers < 2 or items < PARALLEL_MIN:
        yield None
        return
    preload = ["vaultmem.write.drafts", "vaultmem.write.extract", "vaultmem.write.policy", "vaultmem.write.links"]
    with process_pool(workers, preload, _adopt, (drafter,)) as pool:
        yield pool


_worker_drafter: Drafter | None = None


def _adopt(drafter: Drafter) -> None:
    """Worker start: keep the batch's drafter (rule tables, entities) for every chunk it drafts."""
    global _worker_drafter
    _worker_drafter = drafter
    gc.disable()  # a worker lives for one batch: the cycle collector would only rescan its drafts


def _draft_chunk(items: list[tuple[str, dict[str, Any]]]) -> list[Draft]:
    if _worker_drafter is None:
        raise VaultmemError("a batch worker was started without the batch's drafter")
    return [_worker_drafter.draft(body, fields) for body, fields in items]


def _explanation(extraction: Extraction, parts: list, trust: str, staged: bool, redacted: list[str],
                 entities: list[str]) -> dict[str, Any]:
    return {"importance": [[label, points] for label, points in parts],
            "values": [{"type": v.type, "value": v.value} for v in extraction.values],
            "cues": list(extraction.cues), "names": list(extraction.names), "entities": list(entities),
            "trust": trust, "staged": staged, "redacted": list(redacted)}


_RECORD_FIELDS = tuple(f.name for f in dataclass_fields(Record))

__all__ = ["Draft", "Drafter", "KEY_ORDER", "OWN_PROPERTIES", "make_title", "parse_time", "union", "worker_pool"]
