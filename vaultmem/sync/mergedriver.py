"""The git merge driver for memory notes: `vaultmem merge-driver %O %A %B %P`.

Git runs it for a file both sides changed, with the ancestor (O), ours (A) and theirs (B); the result
goes into A, and exit 0 tells git the file is merged. Git's line merge conflicts when two machines
change adjacent frontmatter keys (one raises `score`, the other adds a tag); this driver merges a note
property by property and its body three-way, starting from ours' exact text so that every byte the two
sides agree on stays as it was (only the lines of properties that take theirs' value change).

Properties, when both sides changed one (a change on one side only always takes that side's value;
a property added on one side is kept; one deleted on one side and unchanged on the other is deleted):
- `version`: the version vectors joined, each device's counter the higher of the two.
- `tags`, `aliases`, `entities`: ours' items in ours' order, then theirs' new ones; an item one side
  removed (and the other kept) is removed.
- `score`, `confidence`: the higher (a memory both machines strengthened keeps the stronger belief).
  vaultmem keeps no counters in notes: access counts and feedback live in the device logs.
- `status`: by precedence superseded > needs-verification > archived > active > candidate. Only a
  supersession is final; needs-verification outranks archived because an archived note leaves recall
  and a question flagged for a person would go unseen there (they may archive it again after looking).
- `timestamp`: the later.
- anything else: ours' value is kept and theirs' is recorded in a callout at the end of the body;
  deleted on one side and changed on the other, the changed value is kept.

Bodies are merged by `git merge-file`. Where both sides changed the same lines, both texts stay in the
note inside an Obsidian callout (`> [!warning] vaultmem: both machines changed this note`, each side as
a quoted block named ours/theirs with the devices its version vector advanced), and the note's status
becomes needs-verification (by the precedence above: a superseded note stays superseded). Such a note
is merged as far as git is concerned (exit 0): the callout, not a conflict marker, carries the conflict,
so nothing ever commits `<<<<<<<` into a note, and no text is lost. A recorded property conflict does
the same; a value of theirs that ours' callout records already is not recorded twice.

`merge_copies` serves what bypassed git's driver (`vaultmem repair`, an import of an export): two copies
of a note, or two sides with their ancestor, merged by these same rules.

A file that is not a note on both sides (no frontmatter, invalid YAML, binary) gets git's own text
merge (`git merge-file`): its result and exit status, so git reports a normal conflict. Renames,
deletes and modify/delete conflicts never reach a driver (it only ever sees three contents):
`vaultmem sync` settles them after the pull (gitsync.py). An add/add (both machines created the
note) comes with an empty ancestor; the copies' shared lines stand in for it. Episode notes (`type:
episode`, the day's timeline) merge their bodies as a union: both machines' lines are kept.
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable

from ..errors import InvalidValue, NoteFormatError, VaultmemError
from ..notes.note import Note, parse_note
from ..notes.sealed import is_sealed_text
from ..notes.writing import DELETE, update_fields

__all__ = ["CALLOUT", "STATUS_PRECEDENCE", "main", "merge_copies", "merge_notes", "run_merge_driver"]

CALLOUT = "> [!warning] vaultmem: both machines changed this note"
STATUS_PRECEDENCE = ("candidate", "active", "archived", "needs-verification", "superseded")  # lowest first
_FLAGGED = "needs-verification"
_LISTS = ("tags", "aliases", "entities")
_LEVELS = ("score", "confidence")
_MARKER_RUN = re.compile(r"^([<=>|])\1*", re.MULTILINE)


class _Missing:
    """The type of MISSING."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A property a side does not have."""
_NO_RULE: Any = object()  # what a field rule returns when the values are not of its kind


@dataclass
class _Merged:
    """The merged properties of a note and what could not be merged."""

    meta: dict[str, Any] = field(default_factory=dict)
    conflicts: list[tuple[str, Any, Any]] = field(default_factory=list)  # (property, ours, theirs)


# --- entry points ----------------------------------------------------------------------------


def merge_notes(base: bytes, ours: bytes, theirs: bytes, path: str) -> tuple[bytes, bool]:
    """Merge three versions of a note; (the merged bytes, whether git may take them as merged).

    Notes are always merged (True), conflicts kept in callouts; any other file gets git's text merge.
    """
    if ours == theirs or base == theirs:
        return ours, True
    if base == ours:
        return theirs, True
    if is_sealed_text(ours) or is_sealed_text(theirs):  # an encrypted note: opened with the passphrase, or not
        from .sealedmerge import merge_sealed

        return merge_sealed(base, ours, theirs, path, merge_notes)
    notes = _parse_sides(base, ours, theirs, path)
    if notes is not None and not base.strip():
        # add/add: two machines created the note (a day's episode note, most often) with no common
        # version; git gives an empty ancestor, under which every line would clash. What the two
        # copies share stands in for it, as for a repair.
        copied = merge_copies(ours, theirs, path)
        if copied is not None:
            return copied, True
    merged = None if notes is None else _merge_note(notes[0].meta, notes[0].body, notes[1], notes[2])
    if merged is None:
        return _text_merge(base, ours, theirs, path)
    return merged.encode("utf-8"), True


def merge_copies(ours: bytes, theirs: bytes, path: str, base: bytes | None = None) -> bytes | None:
    """Two copies of one note (or two sides with their ancestor) merged by the driver's rules, for what
    bypassed the driver (`vaultmem repair`, `vaultmem import`); None when a side is no note.

    Without a base, the base is what the two copies share: the properties of equal value and the body
    lines common to both. A property or a line only one copy has is then that copy's addition and is
    kept; a property both hold differently goes by its rule; lines each copy has in one place go into
    the callout. So no text is lost, and a line one copy deleted comes back (a copy cannot tell a
    deletion from an addition). Notes without frontmatter on both sides get the body merge alone.
    """
    try:
        sides = (parse_note(ours, path), parse_note(theirs, path))
        ancestor = parse_note(base, path) if base is not None else None
    except NoteFormatError:
        return None
    if ancestor is not None and ancestor.has_frontmatter != sides[0].has_frontmatter:
        ancestor = None
    if sides[0].has_frontmatter != sides[1].has_frontmatter:
        return None
    if ancestor is None:
        meta = {k: v for k, v in sides[0].meta.items() if _equal(v, sides[1].meta.get(k, MISSING))}
        body = sides[1].body if _holds(sides[0].body, sides[1].body) else _shared_lines(sides[0].body, sides[1].body)
    else:
        meta, body = ancestor.meta, ancestor.body
    if not sides[0].has_frontmatter:
        labels = ("**ours**", "**theirs**")
        return _merge_bodies(body, sides[0].body, sides[1].body, labels, sides[0].newline)[0].encode("utf-8")
    merged = _merge_note(meta, body, *sides)
    return None if merged is None else merged.encode("utf-8")


def _holds(ours: str, theirs: str) -> bool:
    """Whether every line of theirs is in ours already, as it is or quoted in a callout (a copy merged
    before, imported again): then theirs brings no text and ours' body stands."""
    held = {line.strip() for line in ours.splitlines()}
    held |= {line.strip()[4:].strip() for line in ours.splitlines() if line.strip().startswith("> > ")}
    return all(line.strip() in held for line in theirs.splitlines() if line.strip())


def _shared_lines(ours: str, theirs: str) -> str:
    """The lines two texts have in common, in order (their longest matching runs)."""
    a, b = _lines(ours), _lines(theirs)
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return "".join("".join(a[block.a:block.a + block.size]) for block in blocks)


def run_merge_driver(base: str | Path, ours: str | Path, theirs: str | Path, path: str) -> int:
    """Git's driver contract: read O, A and B, write the result into A; 0 when merged, 1 otherwise.

    Raises:
        VaultmemError: a file cannot be read or written.
    """
    try:
        data = [Path(p).read_bytes() for p in (base, ours, theirs)]
        merged, clean = merge_notes(*data, path)
        if merged != data[1]:
            Path(ours).write_bytes(merged)
    except OSError as exc:
        raise VaultmemError(f"merge-driver: {exc.filename or path}: {exc.strerror}") from None
    return 0 if clean else 1


def main(argv: list[str]) -> int:
    """`vaultmem merge-driver O A B P` without the CLI's start-up cost (git runs it once per note)."""
    try:
        return run_merge_driver(*argv)
    except VaultmemError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return 1


# --- sides -----------------------------------------------------------------------------------


def _parse_sides(base: bytes, ours: bytes, theirs: bytes, path: str) -> tuple[Note, Note, Note] | None:
    """The three notes, or None unless ours and theirs are notes with frontmatter (and base parses)."""
    try:
        notes = (parse_note(base, path), parse_note(ours, path), parse_note(theirs, path))
    except NoteFormatError:
        return None
    if not (notes[1].has_frontmatter and notes[2].has_frontmatter):
        return None
    return notes


def _merge_note(base_meta: dict[str, Any], base_body: str, ours: Note, theirs: Note) -> str | None:
    """The merged note's text, or None when no side's layout can take the merged properties."""
    merged = _merge_meta(base_meta, ours.meta, theirs.meta)
    merged.conflicts = [c for c in merged.conflicts if not _recorded(ours.body, c[0], c[2])]
    labels = (_label("ours", base_meta, ours.meta), _label("theirs", base_meta, theirs.meta))
    union = ours.meta.get("type") == theirs.meta.get("type") == "episode"
    body, clashed = _merge_bodies(base_body, ours.body, theirs.body, labels, ours.newline, union)
    if merged.conflicts:
        body = _with_property_callout(body, merged.conflicts, labels, ours.newline)
    if (clashed or merged.conflicts) and merged.meta.get("status") != "superseded":
        merged.meta["status"] = _FLAGGED
    for start in (ours, theirs):  # ours' bytes first; theirs' when ours' layout cannot take a value
        text = _apply(start, merged.meta)
        if text is not None:
            return text[: len(text) - len(start.body)] + body
    return None


def _apply(start: Note, meta: dict[str, Any]) -> str | None:
    """`start`'s text with its properties changed to `meta`, only the changed lines rewritten."""
    changes = {key: value for key, value in meta.items() if not _equal(start.meta.get(key, MISSING), value)}
    changes.update({key: DELETE for key in start.meta if key not in meta})
    try:
        return update_fields(start, changes)
    except (NoteFormatError, InvalidValue):
        return None


def _label(side: str, base: dict[str, Any], meta: dict[str, Any]) -> str:
    """`ours` or `theirs`, with the devices whose counters this side's version vector advanced."""
    before = _counters(base.get("version"))
    moved = [device for device, count in _counters(meta.get("version")).items() if count > before.get(device, -1)]
    return f"**{side}** (device {', '.join(moved)})" if moved else f"**{side}**"


# --- properties ------------------------------------------------------------------------------


def _merge_meta(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> _Merged:
    """Every property merged: ours' order, then the ones only theirs has, in theirs' order."""
    merged = _Merged()
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        value, conflict = _merge_value(key, base.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING))
        if value is not MISSING:
            merged.meta[key] = value
        if conflict:
            merged.conflicts.append((key, ours.get(key, MISSING), theirs.get(key, MISSING)))
    return merged


def _merge_value(key: str, base: Any, ours: Any, theirs: Any) -> tuple[Any, bool]:
    """One property's merged value (MISSING: deleted), and whether theirs' value had to be set aside."""
    if _equal(ours, theirs) or _equal(base, theirs):
        return ours, False
    if _equal(base, ours):
        return theirs, False
    rule = _RULES.get(key)
    value = rule(base, ours, theirs) if rule else _NO_RULE
    if value is not _NO_RULE:
        return value, False
    if ours is MISSING or theirs is MISSING:  # a change beats a delete: the value is kept
        return (theirs if ours is MISSING else ours), False
    return ours, True


def _join_versions(base: Any, ours: Any, theirs: Any) -> Any:
    """The version vectors joined: each device's counter the higher; odd entries kept as written."""
    if not all(isinstance(v, list) or v is MISSING for v in (ours, theirs)):
        return _NO_RULE
    joined: dict[tuple[str, bool], int] = {}  # (device or odd entry, is odd) -> counter
    for entry in [*(ours if ours is not MISSING else []), *(theirs if theirs is not MISSING else [])]:
        device, count = _entry(entry)
        key = (device, count is None)
        joined[key] = max(joined.get(key, 0), count or 0)
    return [device if odd else f"{device}:{count}" for (device, odd), count in joined.items()]


def _counters(version: Any) -> dict[str, int]:
    """device -> counter of a version vector's well-formed entries."""
    entries = (_entry(v) for v in version) if isinstance(version, list) else ()
    return {device: count for device, count in entries if count is not None}


def _entry(entry: Any) -> tuple[str, int | None]:
    """(device, counter) of a `device:n` entry; (the entry's text, None) when it is not one."""
    device, _, count = str(entry).rpartition(":")
    return (device, int(count)) if device and count.isdigit() else (str(entry), None)


def _merge_list(base: Any, ours: Any, theirs: Any) -> Any:
    """Ours' items, minus those theirs removed, then theirs' new ones."""
    sides = [[] if v is MISSING else v for v in (base, ours, theirs)]
    if not all(isinstance(v, list) for v in sides) or not _hashable(sides):
        return _NO_RULE
    was, kept = set(sides[0]), set(sides[2])
    items = [item for item in sides[1] if item in kept or item not in was]
    items += [item for item in sides[2] if item not in was and item not in items]
    return items if items or ours is not MISSING else MISSING  # deleted here, nothing new there


def _hashable(lists: list[list[Any]]) -> bool:
    return all(not isinstance(item, (list, dict)) for items in lists for item in items)


def _higher(base: Any, ours: Any, theirs: Any) -> Any:
    """The higher of two numbers."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (ours, theirs))
    return max(ours, theirs) if numbers else _NO_RULE


def _precedence(base: Any, ours: Any, theirs: Any) -> Any:
    """The status that ranks higher in STATUS_PRECEDENCE."""
    if ours not in STATUS_PRECEDENCE or theirs not in STATUS_PRECEDENCE:
        return _NO_RULE
    return max(ours, theirs, key=STATUS_PRECEDENCE.index)


def _later(base: Any, ours: Any, theirs: Any) -> Any:
    """The later of two times (both dates, or both datetimes with or both without an offset)."""
    if not (isinstance(ours, date) and isinstance(theirs, date)):
        return _NO_RULE
    try:
        return max(ours, theirs)
    except TypeError:  # a date and a datetime, or naive and aware times: no order
        return _NO_RULE


_RULES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "version": _join_versions, "status": _precedence, "timestamp": _later,
    **{key: _merge_list for key in _LISTS}, **{key: _higher for key in _LEVELS},
}


def _equal(a: Any, b: Any) -> bool:
    """The same property value, however it is spelled: 7 and 7.0 agree (Obsidian may rewrite one as
    the other), True and 1 do not; times must agree in their offset too."""
    if a is MISSING or b is MISSING:
        return a is b
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)]
    if all(numbers):
        return bool(a == b)
    if any(numbers) or type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, datetime):
        return a == b and a.utcoffset() == b.utcoffset()
    return bool(a == b)


# --- bodies ----------------------------------------------------------------------------------


def _merge_bodies(base: str, ours: str, theirs: str, labels: tuple[str, str], nl: str,
                  union: bool = False) -> tuple[str, bool]:
    """The body merged three-way, and whether a callout had to keep both texts of some lines. With
    `union` (an episode note: a timeline both machines append to), lines both sides changed at one
    place are all kept, ours first, with no callout: two machines' entries for one day are no conflict."""
    if ours == theirs or base == theirs:
        return ours, False
    if base == ours:
        return theirs, False
    size = _marker_size(base, ours, theirs)
    done = _git_merge_file(ours.encode("utf-8"), base.encode("utf-8"), theirs.encode("utf-8"),
                           ["-c", "merge.conflictStyle=merge"], [f"--marker-size={size}"] + ["--union"] * union)
    if done is None:  # no git, or it failed: both bodies stay whole
        parts: list[str | tuple[list[str], list[str]]] = [(_lines(ours), _lines(theirs))]
    else:
        parts = _parts(done.stdout.decode("utf-8"), size)
    body, after_callout = "", False
    for part in parts:
        if isinstance(part, str):
            # a line right after a quote would continue it: a blank line keeps the text outside
            body += (nl if after_callout and not part.startswith(("\n", "\r\n")) else "") + part
            after_callout = False
        else:
            body += _blank_line_before(body, nl) + _callout(part, labels, nl)
            after_callout = True
    return body, any(not isinstance(part, str) for part in parts)


def _marker_size(*texts: str) -> int:
    """A conflict-marker length longer than any run of <, =, > or | that starts a line of the texts."""
    longest = max((len(m[0]) for text in texts for m in _MARKER_RUN.finditer(text)), default=0)
    return max(7, longest + 1)


def _parts(merged: str, size: int) -> list[str | tuple[list[str], list[str]]]:
    """merge-file's output split at its conflict markers (no line of the notes can look like one)."""
    parts: list[str | tuple[list[str], list[str]]] = []
    agreed: list[str] = []
    sides: dict[str, list[str]] = {}
    where = None
    for line in _lines(merged):
        marker = line[:size]
        if marker == "<" * size:
            parts.append("".join(agreed))
            agreed, sides, where = [], {"ours": [], "base": [], "theirs": []}, "ours"
        elif where is not None and marker == "|" * size:
            where = "base"
        elif where is not None and marker == "=" * size:
            where = "theirs"
        elif where is not None and marker == ">" * size:
            parts.append((sides["ours"], sides["theirs"]))
            where = None
        elif where is None:
            agreed.append(line)
        else:
            sides[where].append(line)
    parts.append("".join(agreed))
    return [part for part in parts if part]


def _lines(text: str) -> list[str]:
    """Lines split at '\\n' only, endings kept (a last line without one as it is)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _blank_line_before(body: str, nl: str) -> str:
    """What `body` needs so that a callout after it starts a block of its own: a line break, a blank line."""
    if not body:
        return ""
    ending = "" if body.endswith("\n") else nl
    lines = (body + ending).split("\n")
    return ending + ("" if len(lines) > 2 and not lines[-2].strip() else nl)


def _callout(conflict: tuple[list[str], list[str]], labels: tuple[str, str], nl: str) -> str:
    """Both texts of conflicting lines, each as a quoted block inside one warning callout."""
    lines = [CALLOUT]
    for label, side in zip(labels, conflict):
        texts = [line.rstrip("\r\n") for line in side]
        lines.append(f"> {label} wrote:" if texts else f"> {label} deleted these lines.")
        lines += [f"> > {text}" if text.strip() else "> >" for text in texts]
        lines.append(">")
    return nl.join(lines[:-1]) + nl


def _with_property_callout(body: str, conflicts: list[tuple[str, Any, Any]], labels: tuple[str, str],
                           nl: str) -> str:
    """The body with a callout at its end naming each property kept from ours and theirs' value."""
    lines = [CALLOUT]
    for key, ours, theirs in conflicts:
        line = f"> property {key}: {labels[0]} {_shown(ours)} was kept; {labels[1]} had {_shown(theirs)}"
        lines.append(line.replace("\n", nl + "> "))  # a value's own line breaks stay inside the callout
    return body + _blank_line_before(body, nl) + nl.join(lines) + nl


def _recorded(body: str, key: str, theirs: Any) -> bool:
    """Whether ours' body has a callout line recording this value of theirs already (merged before)."""
    start, end = f"> property {key}: ", f" had {_shown(theirs)}"
    return any(line.startswith(start) and line.rstrip("\r").endswith(end) for line in body.split("\n"))


def _shown(value: Any) -> str:
    """A property value as a person would type it."""
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return "null" if value is None else str(value)


# --- git -------------------------------------------------------------------------------------


def _text_merge(base: bytes, ours: bytes, theirs: bytes, path: str) -> tuple[bytes, bool]:
    """Git's own line merge of a file that is not a note: its result, clean or with conflict markers;
    ours unchanged when git cannot merge it (a binary file)."""
    labels = [arg for side in ("ours", "base", "theirs") for arg in ("-L", f"{path} ({side})")]
    done = _git_merge_file(ours, base, theirs, [], labels)
    return (ours, False) if done is None else (done.stdout, done.returncode == 0)


def _git_merge_file(ours: bytes, base: bytes, theirs: bytes, config: list[str],
                    options: list[str]) -> subprocess.CompletedProcess[bytes] | None:
    """`git merge-file -p` of three texts (exit status: the number of conflicts); None when it failed."""
    stem = os.path.join(_scratch(), f"{os.getpid()}-{next(_calls)}")
    names = []
    try:
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            names.append(f"{stem}.{name}")
            Path(names[-1]).write_bytes(data)
        done = subprocess.run(["git", *config, "merge-file", "-p", *options, *names], capture_output=True,
                              check=False)
    except OSError:
        return None
    finally:
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(name)
    return done if 0 <= done.returncode < 128 else None


_calls = itertools.count()
_folder: list[str] = []


def _scratch() -> str:
    """One temp folder per process for merge-file's three inputs (a sync merges a thousand notes:
    no folder made and removed for each), removed when the process ends."""
    if not _folder or not os.path.isdir(_folder[0]):
        # in memory where the system has it: an encrypted note's plain text passes through here (sealedmerge.py)
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        folder = tempfile.mkdtemp(prefix="vaultmem-merge-", dir=shm)
        atexit.register(shutil.rmtree, folder, True)
        _folder[:] = [folder]
    return _folder[0]
