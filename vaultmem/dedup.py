"""Near-duplicate detection for the write pipeline: sketch keys find candidates, a fuzzy ratio decides.

A memory's sketch is the bottom four of its distinct terms under a stable hash; each pair of them
is a key. Two restatements of one fact share most terms, so they almost always share a pair, while
two unrelated memories almost never do. Keys live in the index (table `dupkey`) for the notes on
disk and in a dict for a batch in flight; only the candidates they name are compared, with
rapidfuzz's ratio over `text.plain_text`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from itertools import combinations

from . import text

SKETCH_TERMS = 4
_NUMBER = re.compile(r"\d+")
_MASK = (1 << 63) - 1  # SQLite integers are signed 64-bit


def sketch_keys(terms: Iterable[str]) -> list[int]:
    """The candidate keys of a note from its index terms (tag and link terms ignored).

    Returns:
        up to six 63-bit keys (pairs of the bottom-4 term hashes); one key for a one-term note.
    """
    hashes = sorted({zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in terms if t[:1] not in ("#", "@")})
    low = hashes[:SKETCH_TERMS]
    if len(low) == 1:
        return [low[0]]
    return [((a << 32) | b) & _MASK for a, b in combinations(low, 2)]


def note_keys(body: str) -> list[int]:
    """sketch_keys of a text that is not indexed yet."""
    return sketch_keys(text.terms(body))


def restates(new_plain: str, old_plain: str) -> float:
    """How alike a new memory is to an old one it may repeat (0..1, rapidfuzz's normalised Indel
    ratio of their `text.plain_text`), or 0 when the new one says something the old one does not.

    A merge keeps the old text, so only a restatement may merge: the new text's numbers are the
    old one's ("room 301" is not "room 302") and it has no word the old one lacks ("moved to
    Tuesday" is not "moved to Saturday", however alike the letters).
    """
    from rapidfuzz import fuzz

    ratio = fuzz.ratio(new_plain, old_plain) / 100.0
    if ratio == 0 or sorted(_NUMBER.findall(new_plain)) != sorted(_NUMBER.findall(old_plain)):
        return 0.0
    if not set(text.terms(new_plain)) <= set(text.terms(old_plain)):
        return 0.0
    return ratio


class BatchKeys:
    """The sketch keys of the memories a batch has written so far, per namespace."""

    def __init__(self) -> None:
        self._owners: dict[tuple[str, int], list[str]] = {}

    def add(self, namespace: str, keys: Iterable[int], owner: str) -> None:
        """Remember that `owner` (a note path) has these keys."""
        for key in keys:
            self._owners.setdefault((namespace, key), []).append(owner)

    def candidates(self, namespace: str, keys: Iterable[int]) -> list[str]:
        """Owners sharing at least one key, first written first, each once."""
        found: dict[str, None] = {}
        for key in keys:
            for owner in self._owners.get((namespace, key), ()):
                found[owner] = None
        return list(found)
