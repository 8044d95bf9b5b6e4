"""What a note already says, as the write pipeline reads it before it decides: whether a draft's
words (and tags) are in a note, and the properties a merge compares (its list values, the links they
hold, its time). Pure functions of a note's parsed frontmatter and body."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError
from ..text import terms as text
from .drafts import parse_time
from .seen import words_said

if TYPE_CHECKING:
    from .drafts import Draft

__all__ = ["has_tags", "holds", "listed", "note_time", "property_links", "says"]


def holds(meta: dict[str, Any], body: str, draft: Draft) -> bool:
    """Whether a note already says what a draft says: its words, in order, within the note's (case,
    width, spacing and punctuation aside), and no tag the note lacks. Saying it again is then no
    news: the note keeps its score, timestamp and bytes (no git diff)."""
    return says(body, words_said(draft.plain)) and has_tags(meta.get("tags"), draft)


def says(body: str, said: str) -> bool:
    """Whether a note's body says these words (seen.words_said), in order, within its own."""
    return bool(said) and f" {said} " in f" {words_said(text.plain_text(body))} "


def listed(value: Any) -> list[Any]:
    """A property's values: a list as it is, one value as a list of one, nothing as []."""
    if value in (None, ""):
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def property_links(value: Any) -> list[str]:
    """The wikilink targets of a property's values (an `entities: ["[[Acme Corp]]"]` list)."""
    from ..notes.note import extract_links

    return extract_links("\n".join(map(str, listed(value))))


def note_time(meta: dict[str, Any]) -> dt.datetime | None:
    """A note's `timestamp` as an aware time, read as the pipeline reads every time (parse_time: a
    naive one is local); None when it has none a merge can compare (absent, text, a sub-minute offset)."""
    when = meta.get("timestamp")
    if not isinstance(when, dt.date):
        return None
    try:
        return parse_time(when)
    except VaultmemError:
        return None


def has_tags(tags: Any, draft: Draft) -> bool:
    """Whether a note's tags (None: it has none) include every tag of the draft."""
    have = {text.normalize_tag(str(t)) for t in tags or []}
    return all(text.normalize_tag(t) in have for t in draft.meta["tags"])
