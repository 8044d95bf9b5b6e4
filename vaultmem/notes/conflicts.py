"""What a merge or a sync tool left that is not a note's own text: git's conflict blocks in a note
(`<<<<<<<`, `|||||||` with diff3, `=======`, `>>>>>>>`) and sync tools' conflict copies' file names
(Syncthing, Dropbox, Obsidian Sync). Read by doctor and lint (finding them), repair (splitting them into
their sides) and the pre-commit hook (refusing them). Pure text: no file is opened here."""

from __future__ import annotations

import re

__all__ = ["conflict_marker_line", "copy_original", "is_sync_conflict_copy", "split_conflict"]

_BLOCK = (re.compile(r"^<{7}(?: |$)", re.M), re.compile(r"^={7}$", re.M), re.compile(r"^>{7}(?: |$)", re.M))
_MARKER = re.compile(r"^(<{7,}|\|{7,}|={7,}|>{7,})(?:[ \t].*)?\r?\n?$")
# the tail a sync tool adds to a note's stem: Syncthing's `.sync-conflict-YYYYMMDD-HHMMSS-DEVICE`,
# Dropbox's and Obsidian Sync's ` (… conflicted copy …)`, ` (conflict 2024-…)`
_COPY_TAIL = re.compile(r"(?:\.sync-conflict-\d{8}-\d{6}(?:-[A-Za-z0-9]+)?|\s*\([^)]*\bconflicted copy\b[^)]*\)"
                        r"|\s*\(conflict \d{4}-[^)]*\))$", re.IGNORECASE)


def conflict_marker_line(text: str) -> int | None:
    """The 1-based line of the first git conflict block (<<<<<<<, =======, >>>>>>> in that order), or None."""
    if "<<<<<<<" not in text:
        return None
    at = 0
    found = []
    for marker in _BLOCK:
        match = marker.search(text, at)
        if match is None:
            return None
        found.append(match.start())
        at = match.end()
    return text.count("\n", 0, found[0]) + 1


def split_conflict(text: str) -> tuple[str | None, str, str] | None:
    """A text with git's conflict blocks split into (base, ours, theirs); base None unless every block
    has its ancestor (diff3). None when the markers do not pair up. A block inside a block (markers of
    the same size) stays whole in its side, to be split in turn; in theirs' part, only `>>>>>>>` ends it
    (a `=======` there is a Markdown heading's underline)."""
    sides: dict[str, list[str]] = {"ours": [], "base": [], "theirs": []}
    where, size, depth, every_base, block_base = None, 0, 0, True, False
    for line in text.splitlines(keepends=True):
        marker = _MARKER.match(line)
        kind, length = (marker.group(1)[0], len(marker.group(1))) if marker else ("", 0)
        if where is None:
            if kind == "<":
                where, size, depth, block_base = "ours", length, 0, False
            else:
                for lines in sides.values():
                    lines.append(line)
            continue
        if length == size and kind == "<":
            depth += 1
        elif length == size and kind == ">" and depth:
            depth -= 1
        elif length == size and depth == 0 and (where, kind) in (("ours", "|"), ("ours", "="), ("base", "=")):
            block_base = block_base or kind == "|"
            where = "base" if kind == "|" else "theirs"
            continue
        elif length == size and depth == 0 and kind == ">":
            if where != "theirs":
                return None  # a block without its ======= line
            every_base = every_base and block_base
            where = None
            continue
        sides[where].append(line)
    if where is not None:
        return None  # an unclosed block
    return ("".join(sides["base"]) if every_base else None), "".join(sides["ours"]), "".join(sides["theirs"])


def is_sync_conflict_copy(path: str) -> bool:
    """Whether a file name is a sync tool's conflict copy: Syncthing's `x.sync-conflict-YYYYMMDD-HHMMSS-ID.md`,
    Dropbox's `x (… conflicted copy …).md`, Obsidian Sync's `x (Conflicted copy …).md`,
    `x (conflict 2024-…)`."""
    return copy_original(path.rsplit("/", 1)[-1]) is not None


def copy_original(name: str) -> str | None:
    """The file name a sync tool's conflict copy is a copy of (`x.sync-conflict-….md` -> `x.md`), or None."""
    stem, dot, ext = name.rpartition(".")
    match = _COPY_TAIL.search(stem) if dot else None
    return f"{stem[:match.start()]}.{ext}" if match and match.start() else None
