"""What the index knows of one note file: parsed fields, index terms and flags."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ...text import terms as text
from ...text.decay import Policy, read_policy
from ...text.dedup import sketch_keys
from ...text.times import FIRST_TS, LAST_TS, iso_time
from ...errors import InvalidValue, NoteFormatError, VaultmemError
from ...notes.sealed import MARKER as SEALED_TYPE, is_sealed  # (it imports no note parser)

if TYPE_CHECKING:
    from ...settings import NoteDefaults

KINDS = ("memory", "entity", "episode")
STATUS_BY_FOLDER = {"inbox": "candidate", "archive": "archived"}
TAG_PREFIX = "#"
LINK_PREFIX = "@"
QUESTION_TERM = "?question"  # marks a memory whose text ends with a question (no query word can spell it)
_MAX_SCORE = 10.0  # scoring.MAX_SCORE, the top of SPEC's 0..10 (scoring loads numpy; indexing a note never does)


@dataclass
class Record:
    """One note as the index stores it (path is relative to the vault, POSIX style)."""

    path: str
    kind: str
    title: str
    mtime_ns: int
    size: int
    sha: str
    id: str = ""
    fp: str = ""
    type: str = ""
    value: str = ""
    score: float = 5.0
    ts: float = 0.0
    lifecycle: str = ""
    source: str = ""
    trust: str = ""
    status: str = "active"
    namespace: str = ""
    episode: str = ""
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    body: str = ""
    stamp: str = ""  # the note's timestamp exactly as written (for display)
    error: str = ""
    terms: Counter = field(default_factory=Counter)
    sketch: list[int] = field(default_factory=list)  # near-duplicate keys of the body (dedup.sketch_keys)
    policy: str = ""  # the note's own decay policy as JSON (text/decay.py: half_life, decay_floor, pinned), "" if none


def link_key(name: str) -> str:
    """How a link target or an entity title is compared: file name only, no `.md`, normalised."""
    base = name.rsplit("/", 1)[-1]
    return text.normalize(base[:-3] if base.lower().endswith(".md") else base).strip()


def content_hash(data: bytes) -> str:
    """A short, stable digest of a file's bytes (change detection, not security)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def synthetic_id(relpath: str) -> str:
    """An id for a note that has none (a hand-made note): stable while the note keeps its path."""
    return "path-" + hashlib.blake2b(relpath.encode("utf-8"), digest_size=8).hexdigest()


def to_epoch(value: Any, fallback: float) -> float:
    """POSIX seconds of a frontmatter time (datetime, date or ISO string; naive means local time);
    `fallback` for a value that is no time.

    Raises:
        ValueError: a time outside the years 1 to 9999 in some time zone: one such note would
            stop every command that shows or compares times.
    """
    if isinstance(value, str):
        value = iso_time(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, dt.datetime):
        return fallback
    try:
        seconds = value.timestamp()
    except (OverflowError, OSError, ValueError):  # a naive time shifted into year 0 or 10000
        seconds = math.nan
    if not FIRST_TS <= seconds <= LAST_TS:
        raise InvalidValue(f"{value.isoformat()} is out of range (years 1 to 9999)")
    return seconds


def given_epoch(text: str, end_of_day: bool = False) -> float:
    """POSIX seconds of a YYYY-MM-DD or ISO 8601 time a user gives (`--since`); naive means local
    time, and with end_of_day a bare date means its last instant. A bound such as 0001-01-01 or
    9999-12-31, past what to_epoch takes, is the nearest time it takes: no note lies beyond.

    Raises:
        VaultmemError: not such a time.
    """
    parsed = iso_time(text)
    if parsed is None:
        raise VaultmemError(f"invalid date {text!r}: use YYYY-MM-DD or ISO 8601")
    try:
        if end_of_day and len(text.strip()) == 10:
            parsed += dt.timedelta(days=1, microseconds=-1)
        return to_epoch(parsed, 0.0)
    except (OverflowError, ValueError):
        return FIRST_TS if parsed.year < 5000 else LAST_TS


def _stamp(value: Any) -> str:
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else _str(value)


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def note_score(value: Any) -> float:
    """A note's score as a number from 0 to 10 however it is written (0 when it is no number)."""
    return _score(value, 0.0)[0]


def _score(value: Any, fallback: float) -> tuple[float, str]:
    """A note's score, and what is wrong with it ('' when nothing): a number from 0 to 10, else
    the nearest one, or `fallback` for text or for a number no float holds (NaN, 1e400)."""
    if value is None:
        return fallback, ""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if 0.0 <= number <= _MAX_SCORE:
        return number, ""
    problem = f"score {_str(value)[:40]} is not a number from 0 to {_MAX_SCORE:g}"
    return (min(max(number, 0.0), _MAX_SCORE) if math.isfinite(number) else fallback), problem


def build_record(data: bytes, relpath: str, kind: str, folder: str, stat: tuple[int, int],
                 defaults: NoteDefaults, sketch: list[int] | None = None, note: Any = None,
                 plain: str | None = None, like: Record | None = None, *, max_chars: int | None) -> Record:
    """Parse one file's bytes into a Record; a note that fails to parse is indexed by its raw text.

    The write pipeline, which has just rendered the note, passes what it knows: `note` (the
    note.Note of these bytes), `sketch` (its body's near-duplicate keys), `plain` (its body's
    text.plain_text) and `like` (the record of an earlier rendering: see amended_terms).
    `max_chars` (`write.max_text_chars`; None: all): of a memory's body, the index holds and tokenises
    the first max_chars characters, its tags and links included. A longer note (written by hand, synced
    in) then costs indexing and every recall no more than the limit's worth, recall finds and shows that
    part of it, and doctor names the note.
    """
    name = relpath.rsplit("/", 1)[-1]
    title = name[:-3] if name.endswith(".md") else name
    rec = Record(path=relpath, kind=kind, title=title, mtime_ns=stat[0], size=stat[1], sha=content_hash(data))
    mtime = stat[0] / 1e9
    from ...notes.note import parse_note  # here, not at the top: recall never parses notes, nor imports YAML

    cut = max_chars if kind == "memory" else None  # a day note grows by a line a memory: it stays whole
    try:
        note = parse_note(data, relpath) if note is None else note
    except NoteFormatError as exc:
        rec.error = str(exc)
        rec.id = synthetic_id(relpath)
        rec.body = data.decode("utf-8", errors="replace").replace("\x00", "")[:cut]
        rec.ts = mtime
        rec.status = STATUS_BY_FOLDER.get(folder, "active")
        rec.fp = text.fingerprint(rec.body)
        rec.terms = index_terms(rec)
        return rec
    if is_sealed(note.meta):  # encrypted (notes/sealed.py): indexed by its clear properties, never by its words
        _fill_from_note(rec, note.meta, "", [], [], [], folder, mtime, defaults, "")
        rec.type, rec.fp, rec.terms = SEALED_TYPE, "", Counter()
        return rec
    if cut is not None and len(note.body) > cut:  # its tags and links too: as if the body ended there
        note, sketch, plain, like = replace(note, body=note.body[:cut]), None, None, None
    plain = _fill_from_note(rec, note.meta, note.body, note.tags, note.aliases, note.links, folder, mtime, defaults,
                            plain, like)
    if kind == "memory":
        rec.sketch = sketch_keys(plain) if sketch is None else sketch
    return rec


def rendered_record(data: bytes, meta: dict[str, Any], body: str, relpath: str, folder: str,
                    stat: tuple[int, int], defaults: NoteDefaults, sketch: list[int] | None = None,
                    plain: str | None = None, like: Record | None = None, *, max_chars: int) -> Record:
    """The record of a memory note vaultmem has just rendered (notes.writing.render_new) from these
    properties and body: what parsing `data` would give, without parsing it. `like`: the record
    of an earlier rendering of the note (before a merge changed its properties)."""
    from ...notes.note import Note

    content = data.decode("utf-8")
    note = Note(None, content, meta, body, "\n", True, len(content) - len(body))
    if like is not None and like.body == body and sketch is None:
        sketch = like.sketch  # the same body: the same keys
    return build_record(data, relpath, "memory", folder, stat, defaults, sketch, note, plain, like,
                        max_chars=max_chars)


def _fill_from_note(rec: Record, meta: dict[str, Any], body: str, tags: list[str], aliases: list[str],
                    links: list[str], folder: str, mtime: float, defaults: NoteDefaults,
                    plain: str | None = None, like: Record | None = None) -> str:
    """Fill a record from a parsed note; returns the body's plain_text (fingerprint and sketch share it)."""
    rec.id = _str(meta.get("id")).strip() or synthetic_id(rec.path)
    rec.type = _str(meta.get("type")) or (rec.kind if rec.kind != "memory" else "")
    rec.value = _str(meta.get("value"))
    rec.score, problem = _score(meta.get("score"), float(defaults.score))
    problems = [problem] if problem else []
    when = meta.get("timestamp", meta.get("date"))
    rec.stamp = _stamp(when)
    try:
        rec.ts = to_epoch(when, mtime)
    except ValueError as exc:  # the note is found, dated by its file; doctor names it
        rec.ts = mtime
        problems.append(f"timestamp {exc}")
    policy = read_policy(meta)
    rec.policy = _policy_json(policy)
    problems.extend(policy.problems)  # ignored by recall, named by doctor
    rec.error = str(NoteFormatError(rec.path, None, "; ".join(problems))) if problems else ""
    rec.lifecycle = _str(meta.get("lifecycle")) or _str(defaults.lifecycle)
    rec.source = _str(meta.get("source"))
    rec.trust = _str(meta.get("trust"))
    rec.status = _str(meta.get("status")) or STATUS_BY_FOLDER.get(folder, "active")
    rec.namespace = _str(meta.get("namespace")) or _str(defaults.namespace)
    rec.episode = _str(meta.get("episode"))
    rec.tags, rec.aliases, rec.links = tags, aliases, links
    rec.body = body
    if rec.kind == "episode":  # a day note is never a memory's duplicate: no fingerprint, no pass over its whole day
        plain = ""
    else:
        plain = text.plain_text(body) if plain is None else plain
        rec.fp = text.digest(plain)
    rec.terms = index_terms(rec) if like is None else amended_terms(like, rec)
    return plain


def _policy_json(policy: Policy) -> str:
    """The policy's valid overrides as compact JSON; "" when the note has none (nearly every note)."""
    found = policy.to_dict()
    return json.dumps(found, separators=(",", ":"), sort_keys=True) if found else ""


def build_records(root: str, items: list[tuple], defaults: NoteDefaults, max_chars: int
                  ) -> tuple[list[Record], list[tuple]]:
    """Read and parse a chunk of files (runs in worker processes for large refreshes).

    Args:
        items: (relative path, kind, folder, mtime_ns, size, known sha or "") per file.
        max_chars: of a longer memory's body, what the index reads (build_record).
    Returns:
        (records of changed files, (mtime_ns, size, path) of files whose bytes did not change).
    """
    records, restamped = [], []
    for rel, kind, folder, mtime, size, known_sha in items:
        try:
            with open(os.path.join(root, rel), "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # vanished between scan and read: the next refresh drops it
        if known_sha and known_sha == content_hash(data):
            restamped.append((mtime, size, rel))  # touched, not changed
        else:
            records.append(build_record(data, rel, kind, folder, (mtime, size), defaults, max_chars=max_chars))
    return records, restamped


def unwritten_records(items: list[tuple[bytes, str, str, str]], defaults: NoteDefaults, max_chars: int
                      ) -> list[Record]:
    """build_record of each (data, vault path, kind, folder) about to be written, with the stat
    (0, size): the writer sets the mtime once the file exists (worker jobs at the end of a batch)."""
    return [build_record(data, rel, kind, folder, (0, len(data)), defaults, max_chars=max_chars)
            for data, rel, kind, folder in items]


def index_terms(rec: Record) -> Counter:
    """The terms a note is found by: words and grams of its title, body, tags and aliases, the
    value's own terms (value_terms), plus one exact term per tag (`#tag`) and per link target (`@target`), and QUESTION_TERM when
    the body ends with a question mark (recall's question channel)."""
    indexed = "\n".join([rec.title, rec.body, " ".join(rec.tags), " ".join(rec.aliases)])
    terms = Counter(text.terms(indexed))
    terms.update(value_terms(rec.value))
    terms.update(map(tag_term, rec.tags))
    terms.update(map(link_term, rec.links))
    if rec.body.rstrip().endswith(("?", "？")):
        terms[QUESTION_TERM] = 1
    return terms


def value_terms(value: str) -> list[str]:
    """The terms a note's typed value adds: the value as one term ("2022-08-27", "13800138000") and
    its parts that are not bare numbers. A value is often worked out, not written ("see you
    tomorrow" is 2022-08-27): its numbers as terms would match any question naming 27 or 2022."""
    if not value:
        return []
    found = text.terms(value)
    whole = text.normalize(value)
    return [t for t in found if t == whole or not t.isdigit()]


def amended_terms(like: Record, rec: Record) -> Counter:
    """index_terms(rec), from those of `like`, a record of the same note before its properties
    changed: when its title, body, value and aliases are the same, only the terms of its tags
    and links are worked out again (a batch merges into ~10% of the notes it creates).

    Exact because text.terms of lines joined by a line break are the terms of each line: no
    word and no CJK run spans a line break, and NFKC and case folding work within a line.
    """
    if (like.title, like.body, like.value, like.aliases) != (rec.title, rec.body, rec.value, rec.aliases):
        return index_terms(rec)
    return _swapped(like.terms, _tag_andlink_terms(like), _tag_andlink_terms(rec))


def appended_record(like: Record, data: bytes, added: str, stat: tuple[int, int]) -> Record | None:
    """The record of a day note that is `like`'s note with whole lines `added` at its end (`data`: its
    bytes now), worked out from `like` without parsing the day again; None when that is not exact
    (code or a #tag involved, a note that did not parse): then the caller parses it.

    Exact as amended_terms is: the terms of the text the lines join are the old terms plus theirs.
    The day grows by a line a memory: parsing it whole made each remember cost more than the last.
    """
    from ...notes.note import extract_links

    if like.kind != "episode" or like.error or (like.body and not like.body.endswith("\n")):
        return None
    if "#" in added or "`" in added or "~~~" in added or "`" in like.body or "~~~" in like.body:
        return None  # a tag changes the tag terms; code hides what it holds (and may start before the lines)
    known = set(like.links)
    links = [link for link in extract_links(added) if link not in known]
    terms = Counter(like.terms)
    terms.update(text.terms(added))
    terms.update(map(link_term, links))
    body = like.body + added
    terms.pop(QUESTION_TERM, None)
    if body.rstrip().endswith(("?", "？")):
        terms[QUESTION_TERM] = 1
    return replace(like, mtime_ns=stat[0], size=stat[1], sha=content_hash(data), body=body,
                   links=[*like.links, *links], terms=terms)


def _tag_andlink_terms(rec: Record) -> list[str]:
    """The part of index_terms that comes from a record's tags and links."""
    return [*text.terms(" ".join(rec.tags)), *map(tag_term, rec.tags), *map(link_term, rec.links)]


def tag_term(tag: str) -> str:
    """The exact term of a tag (`#tag`)."""
    return TAG_PREFIX + "_".join(text.normalize_tag(tag).split())


def link_term(link: str) -> str:
    """The exact term of a link target (`@target`)."""
    return LINK_PREFIX + " ".join(link_key(link).split())


def _swapped(terms: Counter | str, out: Iterable[str], into: Iterable[str]) -> Counter:
    """Term counts (or encode_terms of them) with `out` taken away and `into` added."""
    counts = decode_terms(terms) if isinstance(terms, str) else Counter(terms)
    counts.subtract(out)
    counts.update(into)
    return +counts  # unary plus drops the terms whose count fell to zero


def encode_terms(terms: Counter | str) -> str:
    """Term counts as one string, `term<TAB>count` a line (terms hold no tab or line break): what the
    delta table stores, and what a batch keeps in memory per note until the index takes it."""
    return terms if isinstance(terms, str) else "\n".join(f"{term}\t{tf}" for term, tf in terms.items())


def decode_terms(blob: str) -> Counter:
    """The term counts of encode_terms."""
    terms, counts = split_terms(blob)
    return Counter(dict(zip(terms, map(int, counts))))


def split_terms(blob: str) -> tuple[list[str], list[str]]:
    """The terms of an encode_terms string and their counts (as text), in order.

    One split and two slices, all in C: the index reads ~60 terms a note for 100,000 notes at the
    end of a batch (a loop over the lines in Python was ~3 s of it).
    """
    if not blob:
        return [], []
    fields = blob.replace("\n", "\t").split("\t")  # terms hold no tab and no line break
    return fields[0::2], fields[1::2]


def relink(rec: Record, links: list[str]) -> None:
    """Give a record other link targets (a property of its note now links another note): only the
    link terms change."""
    terms = _swapped(rec.terms, map(link_term, rec.links), map(link_term, links))
    rec.terms = encode_terms(terms) if isinstance(rec.terms, str) else terms
    rec.links = links


def retitle(rec: Record, title: str) -> None:
    """Give a record another title (its note took another file name): the old title's terms out,
    the new one's in, without tokenising the body again."""
    rec.terms = encode_terms(_swapped(rec.terms, text.terms(rec.title), text.terms(title)))
    rec.title = title


__all__ = ["KINDS", "LINK_PREFIX", "QUESTION_TERM", "Record", "SEALED_TYPE", "STATUS_BY_FOLDER", "TAG_PREFIX", "amended_terms",
           "appended_record", "build_record", "build_records", "content_hash", "decode_terms", "encode_terms",
           "given_epoch", "index_terms", "link_key", "note_score", "relink", "rendered_record", "retitle",
           "split_terms", "synthetic_id", "to_epoch", "unwritten_records", "value_terms"]
