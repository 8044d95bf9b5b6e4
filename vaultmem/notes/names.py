"""Note names: the ULID a note is known by, and the readable file name its title becomes."""

from __future__ import annotations

import os
import re
import time
import unicodedata

__all__ = ["LOOK_ALIKES", "MAX_NAME_BYTES", "MAX_NAME_CHARS", "new_ulid", "numbered_name", "safe_filename"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FORBIDDEN = re.compile(r'[*"\\/<>:|?#^\[\]\x00-\x1f\x7f]')
# Characters a file name cannot hold (Windows, macOS' Finder, Obsidian's links) written as close
# look-alikes, so "Deploy window is Tuesday 22:00" stays readable. Symbols, not letters: `\w` and
# NFKC leave them alone, so a title's words are still split where the original character split them
# (U+A789 '꞉', a modifier letter, would glue "22꞉00" into one word). Controls and the path
# separators become spaces: "../../etc/passwd" must not pass for a readable name ("..∕..∕etc∕passwd").
LOOK_ALIKES = {":": "\u2236", "*": "\u2217", "|": "\u2223", "?": "\uff1f",
               '"': "\u201d", "<": "\u2039", ">": "\u203a", "#": "\uff03", "^": "\u02c4", "[": "\u27e6",
               "]": "\u27e7"}
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
MAX_NAME_CHARS = 100
MAX_NAME_BYTES = 200  # below the 255-byte limit of ext4/APFS, leaving room for " 12.md"


def new_ulid(when: float | None = None) -> str:
    """A ULID: 48-bit millisecond time + 80 random bits, Crockford base32 (sorts by creation time)."""
    ms = int((time.time() if when is None else when) * 1000) & ((1 << 48) - 1)
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def safe_filename(title: str) -> str:
    """A readable file stem Obsidian and every OS accept: no forbidden characters, no reserved
    names, no leading dots, at most MAX_NAME_CHARS characters and MAX_NAME_BYTES bytes."""
    name = unicodedata.normalize("NFC", title)
    name = _FORBIDDEN.sub(lambda m: LOOK_ALIKES.get(m.group(), " "), name)
    name = " ".join(name.split()).strip(" .")
    if name.lower().split(".")[0] in _RESERVED:
        name = name + "_"
    name = name[:MAX_NAME_CHARS]
    while len(name.encode("utf-8")) > MAX_NAME_BYTES:
        name = name[:-1]
    return name.strip(" .") or "memory"


def numbered_name(stem: str, attempt: int) -> str:
    """The attempt-th readable name for a note: `stem.md`, then `stem 2.md`, `stem 3.md` …"""
    return f"{stem}.md" if attempt == 0 else f"{stem} {attempt + 1}.md"
