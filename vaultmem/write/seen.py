"""What one write knows of memory notes beyond the index: the notes it wrote or read, so that a batch
dedups against itself before its notes are indexed, and the index rows it already looked up. One
object per Writer (write/pipeline.py), dropped with it; nothing here reads or writes a file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..text.dedup import BatchKeys

if TYPE_CHECKING:
    from .drafts import Draft
    from .items import WriteResult

__all__ = ["KNOWN_COLUMNS", "Known", "Seen", "words_said"]

KNOWN_COLUMNS = ("path", "id", "title", "type", "value", "namespace", "status", "score", "sha")
_WORDS = re.compile(r"\w+")


def words_said(plain: str) -> str:
    """The words of a `text.plain_text` in order, one space apart: what a text says, its case, width,
    spacing and punctuation aside (a repeat says the same)."""
    return " ".join(_WORDS.findall(plain))


@dataclass
class Known:
    """A memory note the pipeline may merge into or supersede."""

    path: str
    id: str
    title: str
    type: str
    value: str
    namespace: str
    status: str
    score: float = 0.0
    sha: str = ""  # content hash of the note as the index knew it ("" for a note this writer made)


@dataclass
class Seen:
    """The notes a write has met, by what it looks them up by."""

    has_memories: bool  # whether the vault had any memory note when the write began (else nothing to dedup against)
    known: dict[str, Known] = field(default_factory=dict)  # path -> the note
    bodies: dict[str, str] = field(default_factory=dict)  # path -> body as the write last saw it
    plains: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (body, its plain text)
    # path -> (plain text, its words, its numbers: text.dedup.words_and_numbers), for near-duplicate checks
    words: dict[str, tuple[str, set[str], list[str]]] = field(default_factory=dict)
    by_fp: dict[str, WriteResult] = field(default_factory=dict)  # fingerprint -> what this write made of it
    by_value: dict[tuple[str, str, str], Known] = field(default_factory=dict)  # (namespace, type, value)
    # (namespace, type, value, words_said) of each statement of a value this write stored -> its note's
    # path: the newest note of a value is not the only one that may hold a statement of it (merge_cap)
    statements: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    by_attr: dict[tuple[str, str, str], Known] = field(default_factory=dict)  # (namespace, entity, type)
    attrs: dict[tuple[str, str], dict[str, dict]] = field(default_factory=dict)  # (ns, type) -> entity -> newest row
    keys: BatchKeys = field(default_factory=BatchKeys)  # near-duplicate keys of the notes this write made

    def track(self, known: Known, draft: Draft, settings: WriteSettings) -> None:
        """Let the rest of the write find this note, just made from `draft`, before it is indexed."""
        ns = known.namespace
        self.known[known.path] = known
        self.bodies[known.path] = draft.body
        self.plains[known.path] = (draft.body, draft.plain)
        if known.value:
            if len(draft.plain) <= int(settings.statement_chars):  # a message naming it is no target
                self.by_value[(ns, known.type, known.value)] = known
                self.stated(draft, known.path)
            for entity in draft.entities:
                self.by_attr[(ns, entity, known.type)] = known
        if float(settings.near_duplicate) < 1:
            self.keys.add(ns, draft.keys, known.path)  # drafted whenever near duplicates are looked for

    def stated(self, draft: Draft, path: str) -> None:
        """Let the rest of the write find the note at `path` by a statement of a value it now holds."""
        meta = draft.meta
        self.statements[(meta["namespace"], meta["type"], meta["value"], words_said(draft.plain))] = path

    def stating(self, draft: Draft) -> Known | None:
        """The note this write stored the draft's statement of its value in, if it did and the note is live."""
        meta = draft.meta
        path = self.statements.get((meta["namespace"], meta["type"], meta["value"], words_said(draft.plain)))
        known = self.known.get(path) if path is not None else None
        return known if known is not None and known.status in ("active", "candidate") else None

    def forget(self, rel: str) -> None:
        """Drop what was known of a note a person changed meanwhile (it is read again when needed)."""
        for cache in (self.known, self.bodies, self.plains, self.words):
            cache.pop(rel, None)
        self.attrs.clear()
