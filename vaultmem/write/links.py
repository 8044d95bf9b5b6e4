"""Entities and wikilinks (SPEC §6 step 6): known names in a memory become `[[links]]`.

Names are compared folded (NFKC + case-fold, character by character, as text.normalize does), so
"ＡＴＬＡＳ", "atlas" and "Atlas" are one name. A body is folded once, searched once for the keys
names are filed under (first Latin word or first character), and each hit is tried longest name first.
Links go only where Obsidian would show them as plain text: not into code, links, URLs, e-mails or tags.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate, chain
from pathlib import Path
from typing import TYPE_CHECKING

from ..text import terms as text
from ..errors import UnsafePath, VaultmemError, WriteConflict
from ..notes.note import parse_note
from ..notes.writing import render_new, update_fields
from ..store.index.records import content_hash
from ..store.store import retry_conflicts
from ..text.terms import _CJK, FULL_WIDTH, LazyPattern  # one definition of "CJK" for the tokenizer and the linker
from ..notes.names import new_ulid, safe_filename

if TYPE_CHECKING:
    from ..store.store import Store

__all__ = ["Entity", "EntityMatcher", "add_entity", "fold"]

MIN_NAME_CHARS = 2  # a one-character name ("张", "X") would link half the vault
_FEW_KEYS = 32  # up to this many keys, a substring test per key beats tokenising the body
_PENDING_CHARS = 32  # first characters learnt since the last compile, searched one by one meanwhile

_CJK_CHAR = LazyPattern(f"[{_CJK}]")
# A run of Latin word characters (letters, digits, '_' of any non-CJK script). A name needs a
# boundary against them on both sides; CJK text has no word boundaries at all.
_LATIN_RUN_RE = f"[^\\W{_CJK}]+"
_LATIN_RUN = LazyPattern(_LATIN_RUN_RE)
# Text a link must never be put into, each pattern tried only when its hint is in the body.
_PROTECTED = tuple((hint, LazyPattern(pattern, re.MULTILINE | re.DOTALL)) for hint, pattern in (
    ("```", r"^[ \t]{0,3}(`{3,}).*?(?:\n[ \t]{0,3}\1`*[ \t]*(?=\n|\Z)|\Z)"),  # fenced code
    ("~~~", r"^[ \t]{0,3}(~{3,}).*?(?:\n[ \t]{0,3}\1~*[ \t]*(?=\n|\Z)|\Z)"),
    ("`", r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)"),  # inline code
    ("[", r"!?\[\[[^\]\n]*\]\]|!?\[[^\]\n]*\](?:\([^)\n]*\)|\[[^\]\n]*\])"),  # wikilinks, Markdown links
    ("://", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>\"'`\[\]()]+"),  # URL
    ("www.", r"\bwww\.[^\s<>\"'`\[\]()]+"),
    ("@", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"),  # e-mail
    ("<", r"<[^>\s]+[:@][^>\s]*>"),  # autolink
    ("#", r"(?<!\S)#[^\s#\[\]]+"),  # inline #tag
))
_LINK_TARGET = re.compile(r"\[\[([^\]|#\n]*)")
_UNLINKABLE = re.compile(r"[\[\]|#^\n\r]")  # would break `[[Title|shown]]`


class _FoldTable(dict):
    """str.translate table folding each character as text.normalize would, filled on first use."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = text.normalize(chr(code))
        return folded


_FOLD = _FoldTable()


def fold(value: str) -> str:
    """A name or text in the form names are compared in: text.normalize applied character by character."""
    if value.isascii():
        return value.lower()
    quick = _quick_fold(value)
    return value.translate(_FOLD) if quick is None else quick


def _quick_fold(value: str) -> str | None:
    """fold() in C calls when NFKC leaves each character alone and case-folding keeps lengths, else None."""
    for wide, narrow in FULL_WIDTH.items():  # one to one: most Chinese bodies stay on the quick path
        value = value.replace(wide, narrow)
    if not unicodedata.is_normalized("NFKC", value):
        return None
    folded = value.casefold()
    # equal lengths: no character folded to several; each folded one is then NFKC-stable on its own
    if len(folded) != len(value) or not unicodedata.is_normalized("NFKC", folded):
        return None
    return folded


def _fold_with_offsets(body: str) -> tuple[str, list[int] | None]:
    """The folded body and, when folding changed lengths ('ß' -> 'ss'), where each character went.

    Returns:
        (folded, offsets) with offsets[i] the folded position of body[i] (len(body) + 1 entries),
        or None when positions are the same in both.
    """
    folded = fold(body)
    if len(folded) == len(body):  # no character folds to nothing, so every one stayed one
        return folded, None
    return folded, [0, *accumulate(len(_FOLD[ord(c)]) for c in body)]


def _is_latin_word(char: str) -> bool:
    """Whether a character belongs to a Latin word (a letter, digit or '_' of a script that is not CJK)."""
    return (char.isalnum() or char == "_") and (char.isascii() or not _CJK_CHAR.match(char))


@dataclass(frozen=True)
class Entity:
    """A linkable entity: its note's file stem (what Obsidian resolves) and its other names."""

    title: str
    aliases: tuple[str, ...] = ()


class EntityMatcher:
    """Finds entity names in text and links the first mention of each.

    Names are filed under their first Latin word ("project" for "Project Atlas") or, when they start
    otherwise (CJK, punctuation), their first character. A body is searched for those keys in one
    pass: a substring test per key while there are few, else one regex of Latin words and key characters.
    """

    def __init__(self, entities: Iterable[Entity] = ()):
        self._names: dict[str, tuple[Entity, bool]] = {}  # folded name -> (entity, is its title)
        self._by_word: dict[str, list[int]] = {}  # first Latin word -> lengths of its names, longest first
        self._by_char: dict[str, list[int]] = {}  # first character of the other names -> the same
        self._tokens: re.Pattern[str] | None = None  # Latin words | a _by_char key (when compiled)
        self._pending: set[str] = set()  # _by_char keys learnt since _tokens was compiled
        for entity in entities:
            self.add(entity)

    @classmethod
    def from_index(cls, vault: Store) -> EntityMatcher:
        """A matcher for every entity note in the vault's index."""
        rows = vault.index.select_notes("kind = 'entity'", columns=("title", "aliases"))
        return cls(Entity(row["title"], tuple(row["aliases"])) for row in rows)

    def __len__(self) -> int:
        return len(self._names)

    def add(self, entity: Entity) -> None:
        """Learn an entity's names; a title beats another entity's alias, otherwise the first one stays."""
        if _UNLINKABLE.search(entity.title):
            return
        for name, is_title in [(entity.title, True), *((a, False) for a in entity.aliases)]:
            key = fold(" ".join(name.split()))
            if len(key) < MIN_NAME_CHARS or _UNLINKABLE.search(name):
                continue
            known = self._names.get(key)
            if known is not None and (known[1] or not is_title):
                continue
            if known is None:
                self._file(key)
            self._names[key] = (entity, is_title)

    def _file(self, name: str) -> None:
        """File a new folded name under its first Latin word or its first character."""
        word = _LATIN_RUN.match(name)
        if word is not None:
            bucket = self._by_word.setdefault(word[0], [])
        else:
            if name[0] not in self._by_char:
                self._pending.add(name[0])
            bucket = self._by_char.setdefault(name[0], [])
        if len(name) not in bucket:
            bucket.append(len(name))
            bucket.sort(reverse=True)

    def link(self, body: str) -> tuple[str, list[str]]:
        """Link the first mention of each entity not yet linked in the body.

        Returns:
            (the body with `[[Title]]` / `[[Title|as written]]` links, titles newly linked in order).
        """
        mentions = self._mentions(body) if self._names else []
        if not mentions:
            return body, []
        linked = self.linked_titles(body)
        parts, titles, done = [], [], 0
        for start, end, entity in mentions:
            if entity.title in linked:
                continue
            linked.add(entity.title)
            titles.append(entity.title)
            parts += [body[done:start], _wikilink(entity.title, body, start, end)]
            done = end
        parts.append(body[done:])
        return "".join(parts), titles

    def title_of(self, name: str) -> str | None:
        """The title of the entity a name (title or alias) belongs to, if known."""
        hit = self._names.get(fold(" ".join(name.split())))
        return hit[0].title if hit is not None else None

    def linked_titles(self, body: str) -> set[str]:
        """Titles of the entities the body already links to (by title or by alias)."""
        if "[[" not in body:
            return set()
        found = (self._names.get(fold(" ".join(t.split()))) for t in _LINK_TARGET.findall(body))
        return {hit[0].title for hit in found if hit is not None}

    def _mentions(self, body: str) -> list[tuple[int, int, Entity]]:
        """(start, end, entity) of the names outside protected text: leftmost first, then longest."""
        folded, offsets = _fold_with_offsets(body)
        found = self._candidates(folded)
        if not found:
            return []
        found.sort()
        protected = _protected_spans(body)
        mentions, done = [], 0
        for start, minus_length, name in found:
            end = start - minus_length
            span = (start, end) if offsets is None else _original_span(offsets, start, end)
            if span is None:
                continue  # begins or ends inside one folded character (the 'ss' of 'ß')
            if span[0] >= done and not _overlaps(protected, *span):
                mentions.append((*span, self._names[name][0]))
                done = span[1]
        return mentions

    def _candidates(self, folded: str) -> list[tuple[int, int, str]]:
        """(start, -length, folded name) of the longest name at each position where one fits."""
        found, names = [], self._names
        for key in self._keys_in(folded):
            lengths = self._by_word.get(key)
            if lengths is not None:
                positions = _word_positions(folded, key)
            elif (lengths := self._by_char.get(key)) is not None:
                positions = _find_all(folded, key)
            else:
                continue
            for start in positions:
                for length in lengths:
                    end = start + length
                    name = folded[start:end]
                    if name in names and not (
                            end < len(folded) and _is_latin_word(name[-1]) and _is_latin_word(folded[end])):
                        found.append((start, -length, name))
                        break
        return found

    def _keys_in(self, folded: str) -> Iterable[str]:
        """The keys (first words, first characters) that may occur in the text: a superset is fine."""
        if len(self._by_word) + len(self._by_char) <= _FEW_KEYS:
            return [key for key in chain(self._by_word, self._by_char) if key in folded]
        if self._tokens is None or len(self._pending) > _PENDING_CHARS:
            chars = "".join(map(re.escape, self._by_char))
            self._tokens = re.compile(_LATIN_RUN_RE + (f"|[{chars}]" if chars else ""))
            self._pending = set()
        return {*self._tokens.findall(folded), *(c for c in self._pending if c in folded)}


def _find_all(haystack: str, needle: str) -> Iterator[int]:
    """Every position of needle in haystack."""
    at = haystack.find(needle)
    while at >= 0:
        yield at
        at = haystack.find(needle, at + 1)


def _word_positions(folded: str, word: str) -> Iterator[int]:
    """Where `word` stands as a whole run of Latin word characters."""
    for at in _find_all(folded, word):
        end = at + len(word)
        if (at == 0 or not _is_latin_word(folded[at - 1])) and (end == len(folded) or not _is_latin_word(folded[end])):
            yield at


def _original_span(offsets: list[int], start: int, end: int) -> tuple[int, int] | None:
    """The original span of a folded one, or None unless both its ends fall between original characters."""
    first, last = bisect_left(offsets, start), bisect_left(offsets, end)
    if last < len(offsets) and offsets[first] == start and offsets[last] == end:
        return first, last
    return None


def _protected_spans(body: str) -> list[tuple[int, int]]:
    """Sorted, merged (start, end) spans of code, links, URLs, e-mails and tags in the body."""
    patterns = [pattern for hint, pattern in _PROTECTED if hint in body]
    if not patterns:
        return []
    spans = sorted(m.span() for pattern in patterns for m in pattern.finditer(body))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _overlaps(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether [start, end) overlaps one of the sorted, disjoint spans."""
    at = bisect_left(spans, (end,))  # spans starting before `end` come before this index
    return at > 0 and spans[at - 1][1] > start


def _wikilink(title: str, body: str, start: int, end: int) -> str:
    """`[[Title]]` for the title as written, else `[[Title|as written]]` (`\\|` inside a table row)."""
    shown = body[start:end]
    if shown == title:
        return f"[[{title}]]"
    line_start = body.rfind("\n", 0, start) + 1
    bar = "\\|" if body[line_start:start].lstrip().startswith("|") else "|"
    return f"[[{title}{bar}{shown}]]"


# --- entity notes ----------------------------------------------------------------------------


def add_entity(vault: Store, name: str, aliases: Iterable[str] = (), *, tags: Iterable[str] = (),
               when: dt.datetime | None = None, durable: bool = True) -> tuple[str, str]:
    """Create entities/<name>.md, or add new aliases to the existing entity named `name` (by title or alias).

    A name that is not a safe file name is written under a sanitised title and kept as an alias.

    Returns:
        (action 'created' | 'merged' | 'unchanged', vault-relative path).
    Raises:
        PolicyViolation: the name, an alias or a tag holds a secret, or a tag is blocked (nothing written).
        UnsafePath: nothing of the name is usable as a file name.
        WriteConflict: the note kept changing on disk through every retry.
    """
    name = " ".join(name.split())
    aliases, tags = list(aliases), list(tags)
    if not name:
        raise VaultmemError("an entity needs a name")
    _check_policy(vault, name, aliases, tags)
    title = safe_filename(name)
    if title == "memory" and name != "memory":
        raise UnsafePath(f"{name!r} cannot be an entity's file name")
    wanted = [" ".join(a.split()) for a in (name, *aliases)]

    def once() -> tuple[str, Path]:  # created or edited by someone else meanwhile: found and read again
        path = _entity_path(vault, name) or vault.safe_path(str(vault.folders["entities"] / f"{title}.md"))
        return (_merge_aliases(vault, path, wanted, durable) if path.exists() else
                _create_entity(vault, path, name, wanted, tags, when, durable)), path

    action, path = retry_conflicts(once)
    if action != "unchanged":
        vault.index.upsert([vault.record_for(path)])
    return action, vault.relpath(path)


def _check_policy(vault: Store, name: str, aliases: list[str], tags: list[str]) -> None:
    """Refuse a name, alias or tag holding a secret (identifiers are never redacted) and blocked tags."""
    from .policy import Policy

    policy = Policy.of(vault)
    policy.check_identifier("entity name", name)
    for alias in aliases:
        policy.check_identifier("entity alias", alias)
    policy.check_tags(tags)
    for tag in tags:
        policy.check_identifier("entity tag", tag)


def _entity_path(vault: Store, name: str) -> Path | None:
    """The note of the indexed entity whose title or an alias is `name`, if it is still on disk."""
    key = fold(name)
    for row in vault.index.select_notes("kind = 'entity'", columns=("path", "title", "aliases")):
        if key in {fold(n) for n in (row["title"], *row["aliases"])}:
            path = vault.root / row["path"]
            if path.exists():
                return path
    return None


def _create_entity(vault: Store, path: Path, name: str, names: list[str], tags: Iterable[str],
                   when: dt.datetime | None, durable: bool) -> str:
    """Write a new entity note (never over an existing file)."""
    stamp = when or dt.datetime.now().astimezone().replace(microsecond=0)
    stamp = stamp.astimezone() if stamp.tzinfo is None else stamp
    meta = {
        "id": new_ulid(stamp.timestamp()),
        "type": "entity",
        "aliases": _new_names(names, [path.stem]),
        "tags": list(dict.fromkeys(["entity", *(t.strip().lstrip("#") for t in tags if t.strip(" #"))])),
        "timestamp": stamp,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    vault.write_text(path, render_new(meta, f"# {name}\n\n"), expected_sha=None, durable=durable)
    return "created"


def _merge_aliases(vault: Store, path: Path, names: list[str], durable: bool) -> str:
    """Add the names the entity note does not know yet to its `aliases`, changing nothing else."""
    try:
        data = vault.read_current(path)
    except FileNotFoundError:
        raise WriteConflict(path) from None  # renamed or deleted since it was found: look again
    if not data:  # still empty after waiting out a save in place: an edit would be all the note
        raise WriteConflict(path, "is empty (being saved?)")
    note = parse_note(data, path)
    new = _new_names(names, [path.stem, *note.aliases])
    if not new:
        return "unchanged"
    listed = note.meta.get("aliases")
    current = listed if isinstance(listed, list) else ([] if listed is None else [listed])
    edited = update_fields(note, {"aliases": [*current, *new]})
    vault.write_text(path, edited, expected_sha=content_hash(data), durable=durable)
    return "merged"


def _new_names(names: Iterable[str], known: Iterable[str]) -> list[str]:
    """The names, without empty ones and those equal (folded) to a known one or to each other."""
    seen = {fold(k) for k in known}
    fresh = []
    for name in names:
        key = fold(name)
        if key and key not in seen:
            seen.add(key)
            fresh.append(name)
    return fresh
