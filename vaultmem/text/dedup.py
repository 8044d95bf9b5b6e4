"""Near-duplicate detection for the write pipeline: sketch keys find candidates, a fuzzy ratio decides.

Only a restatement may merge (see `restates`): the same numbers in the same order, no new word,
and the words in the same order. So a memory's keys are built from its numbers and the three
smallest of its distinct words under each of eight seeded hashes (a min-hash). Two restatements
share their numbers and most terms, so they share a key with high probability; two memories from the same template ("Met X on <date>
about Y") almost never do, because their numbers or their lowest terms differ. Keys live in the
index (table `dupkey`) for the notes on disk and in a dict for a batch in flight; only the
candidates they name are compared, with rapidfuzz's ratio over `text.plain_text`.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable

SKETCH_TERMS = 3
# one seeded CRC-32 per "permutation": XOR-ing one hash with constants keeps most of its order, so the
# minimums came out nearly alike and one restatement in nine (a word left out) shared no key. With
# eight seeds and three terms, a text with one of 8-16 words left out shares a key with it always,
# with two left out 99.7% of the time, with three 96% (simulated over random word lists)
_SEEDS = tuple(i * 0x9E3779B1 & 0xFFFFFFFF for i in range(8))
_MASK = (1 << 63) - 1  # SQLite integers are signed 64-bit
_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"\w+")


def sketch_keys(plain: str) -> list[int]:
    """The candidate keys of a memory from its body's `text.plain_text`: eight 63-bit keys (one per
    hash seed).

    Its words are runs of letters and digits (a Chinese clause is one word): cheaper than the
    index's terms, and a restatement has the same runs.
    """
    numbers = " ".join(sorted(_NUMBER.findall(plain)))
    words = [w.encode("utf-8", "surrogatepass") for w in set(_WORD.findall(plain))]
    keys = []
    for seed in _SEEDS:
        low = sorted([zlib.crc32(w, seed) for w in words])[:SKETCH_TERMS]
        signature = f"{seed}|{numbers}|{','.join(map(str, low))}".encode()
        keys.append(((zlib.crc32(signature) << 32) | zlib.adler32(signature)) & _MASK)
    return keys


def words_and_numbers(plain: str) -> tuple[set[str], list[str]]:
    """A text's distinct words and its numbers in order: a restatement has the numbers of the text it
    restates and no word that text lacks (see restates), so a caller comparing many texts pairwise
    can rule most pairs out with these first."""
    return set(_WORD.findall(plain)), _NUMBER.findall(plain)


def restates(new_plain: str, old_plain: str) -> float:
    """How alike a new memory is to an old one it may repeat (0..1, rapidfuzz's normalised Indel
    ratio of their `text.plain_text`), or 0 when the new one says something the old one does not.

    A merge keeps the old text, so only a restatement may merge: the new text's numbers are the
    old one's, in the same order ("room 301" is not "room 302", "from 9 to 10" is not "from 10 to
    9"), it has no word the old one lacks ("moved to Tuesday" is not "moved to Saturday", however
    alike the letters), and the words both say once come in the same order ("from Berlin to Paris"
    is not "from Paris to Berlin": a correction, not a restatement).
    """
    if _NUMBER.findall(new_plain) != _NUMBER.findall(old_plain):
        return 0.0
    new_words, old_words = _WORD.findall(new_plain), _WORD.findall(old_plain)
    if not set(new_words) <= set(old_words):
        return 0.0  # every word counts here, stopwords too: "not" and "again" are news
    if not _same_order(new_words, old_words):
        return 0.0
    from rapidfuzz import fuzz  # here: most candidates fail the tests above, and it costs ~20 ms to import

    return fuzz.ratio(new_plain, old_plain) / 100.0


def _same_order(new_words: list[str], old_words: list[str]) -> bool:
    """Whether the words that each text uses exactly once, and both use, stand in the same order in both."""
    shared = _once(new_words) & _once(old_words)
    return [w for w in new_words if w in shared] == [w for w in old_words if w in shared]


def _once(words: list[str]) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for word in words:
        (repeated if word in seen else seen).add(word)
    return seen - repeated


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


def duplicate_groups(memories: Iterable[tuple[str, str, str, str, str, str, list[int] | None]], merge_types: Iterable[str],
                     threshold: float) -> list[dict[str, object]]:
    """Memories that the write pipeline would have kept as one note, found among notes already there
    (two devices that wrote the same fact before syncing, a copied note): `doctor` reports them.

    Args:
        memories: (path, namespace, fingerprint, type, value, plain text, its sketch_keys or None
            to work them out) of each live memory.
        merge_types: the types whose same value makes one memory (config write.merge_types).
        threshold: the near-duplicate likeness at which a restatement merges (1 or more: off).
    Returns:
        [{"paths": [...], "reason": ...}], each path in one group at most, oldest path order kept.
    """
    merging = set(merge_types)
    owner: dict[str, str] = {}  # path -> the first path of its group (union by first seen)
    reasons: dict[str, str] = {}
    first_of: dict[tuple, str] = {}
    by_key: dict[tuple[str, int], list[tuple[str, str]]] = {}

    def join(path: str, other: str, reason: str) -> None:
        root_path, root_other = _root(owner, path), _root(owner, other)
        if root_path != root_other:
            owner[root_path] = root_other
            reasons.setdefault(root_other, reason)

    for path, namespace, fp, kind, value, plain, sketch_of in memories:
        owner.setdefault(path, path)
        keys: list[tuple] = [("fp", namespace, fp)]
        if value and kind in merging:
            keys.append(("value", namespace, kind, value))
        for key in keys:
            found = first_of.setdefault(key, path)
            if found != path:
                join(path, found, "the same text" if key[0] == "fp" else f"the same {kind} {value}")
        if threshold < 1:
            for sketch in sketch_keys(plain) if sketch_of is None else sketch_of:
                for other, other_plain in by_key.get((namespace, sketch), ()):
                    if _root(owner, other) != _root(owner, path):
                        likeness = max(restates(plain, other_plain), restates(other_plain, plain))
                        if likeness >= threshold:
                            join(path, other, f"a restatement ({likeness:.2f})")
                by_key.setdefault((namespace, sketch), []).append((path, plain))
    groups: dict[str, list[str]] = {}
    for path in owner:
        groups.setdefault(_root(owner, path), []).append(path)
    return [{"paths": paths, "reason": reasons.get(root, "")} for root, paths in groups.items() if len(paths) > 1]


def _root(owner: dict[str, str], path: str) -> str:
    while owner[path] != path:
        owner[path] = owner[owner[path]]
        path = owner[path]
    return path


__all__ = ["BatchKeys", "SKETCH_TERMS", "duplicate_groups", "restates", "sketch_keys", "words_and_numbers"]
