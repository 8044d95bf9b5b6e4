"""Daily episode notes (SPEC §6 step 7): episodes/YYYY-MM-DD.md, the day's timeline of memories.

A day note is rewritten whole at each append (atomically, over a person's edits) and indexed again,
so its cost grows with its size. An agent that writes thousands of memories a day would make every
remember slower than the last; so once a day's note passes PART_BYTES, the day goes on in
`YYYY-MM-DD (2).md`, then `(3)`, each a day note of the same date that links to the part before.
A person's day (tens of memories) never gets a second part.

vaultmem owns only its `## vaultmem` section of a day note and only ever appends to it. Whatever a
person wrote around it (text, headings, tasks, CRLF line endings, no final newline, no frontmatter)
stays byte for byte; a save in between a read and a write is detected and the append redone.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import NoteFormatError, WriteConflict
from ..notes.writing import render_new
from ..store.index.records import content_hash
from ..store.store import retry_conflicts

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

    from ..store.index.records import Record
    from ..store.store import Store

__all__ = ["DayPlan", "EpisodeLine", "PART_BYTES", "append_episodes", "index_planned", "part_name", "plan_days",
           "write_planned"]

HEADING = "## vaultmem"
PART_BYTES = 16 * 1024  # ~140 timeline lines: what a day note adds to a remember stays under ~1 ms
_KNOWN_DAYS = 4  # day notes whose last record a process keeps (today's, and a batch's few days)
# whole lines of the note (MULTILINE): a line's end may carry carriage returns before its line break
_OWN_HEADING = re.compile(r"^[ ]{0,3}##[ \t]+vaultmem[ \t]*#*[ \t]*\r*$", re.IGNORECASE | re.MULTILINE)
_SECTION_END = re.compile(r"^[ ]{0,3}#{1,2}(?:[ \t]|\r*$)", re.MULTILINE)  # a heading of level 1 or 2 ends it
_LINE_BREAK = re.compile(r"(?<=\n)")


@dataclass(frozen=True)
class EpisodeLine:
    """One entry of a day's timeline: when (aware; day and HH:MM in its own zone), which memory, from whom."""

    when: dt.datetime
    title: str
    source: str

    def render(self) -> str:
        """The line as written: `- HH:MM [[Title]] (source: SRC)`."""
        source = " ".join(self.source.split()) or "unknown"
        return f"- {_local(self.when):%H:%M} [[{self.title}]] (source: {source})"


def append_episodes(vault: Store, lines: Iterable[EpisodeLine], *, durable: bool = True,
                    records: dict[str, Record] | None = None) -> list[str]:
    """Append each line to episodes/YYYY-MM-DD.md under the `## vaultmem` heading; one read+write per day file.

    Lines already in a day note are skipped, so re-running a batch changes nothing. With `records`
    the caller indexes the day notes written (a write does, with its memories, in one go): their
    records are put there.

    Returns:
        The vault-relative paths of the day notes written, in the order of their first line.
    Raises:
        WriteConflict: a day note kept changing on disk through every retry.
        NoteFormatError: a day note is not UTF-8 text (it is left untouched).
    """
    written = [rec for path, day, rendered in _days(vault, lines)
               if (rec := _append_day(vault, path, day, rendered, durable)) is not None]
    if records is None:
        vault.index.upsert(written)
    else:
        records.update((rec.path, rec) for rec in written)
    return [rec.path for rec in written]


@dataclass(frozen=True)
class DayPlan:
    """A day note's next text, worked out before it is written (plan_days, then write_day)."""

    path: Path
    day: dt.date
    lines: list[str]  # the lines to add, rendered
    content: str      # the note's text with them
    sha: str | None   # hash of the text it replaces; None for a new day note


def plan_days(vault: Store, lines: Iterable[EpisodeLine], *, strict: bool = True) -> list[DayPlan]:
    """What append_episodes would write, without writing it: a batch works its day notes out (and
    has them indexed) while its memory notes are created, and writes them once those exist.

    Raises:
        NoteFormatError: a day note is not UTF-8 text (not strict: no plan at all instead, and
            append_episodes reports it later).
    """
    plans = []
    for path, day, rendered in _days(vault, lines):
        try:
            content, sha, _ = _next_text(vault, path, day, rendered)
        except NoteFormatError:
            if not strict:
                return []
            raise
        if content is not None:
            plans.append(DayPlan(path, day, rendered, content, sha))
    return plans


def index_planned(vault: Store, pool: Executor, plans: list[DayPlan], chunk: int) -> list[Future]:
    """Jobs building the index records of the planned day notes' text in a batch's workers, `chunk`
    notes a job (at 100k memories: ~366 day notes, ~2 s of parsing that would wait for the sync)."""
    from ..store.index.records import unwritten_records

    items = [(p.content.encode("utf-8"), vault.relpath(p.path), *vault.kind_of(p.path)) for p in plans]
    defaults, max_chars = vault.settings.defaults, vault.settings.write.max_text_chars
    return [pool.submit(unwritten_records, items[i:i + chunk], defaults, max_chars)
            for i in range(0, len(items), chunk)]


def write_planned(vault: Store, plans: list[DayPlan], jobs: list[Future], records: dict[str, Record], *,
                  durable: bool = True) -> list[str]:
    """Write the planned day notes (their lines link to notes that exist by now); returns their vault
    paths and puts the records of those written as planned (jobs: index_planned's) into `records`.

    A day note someone saved since it was planned gets its lines again over their text, as
    append_episodes does, and is left for the caller to parse.
    """
    planned = [rec for job in jobs for rec in job.result()]
    for plan, rec in zip(plans, planned):
        plan.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            st = vault.write_text(plan.path, plan.content, expected_sha=plan.sha, durable=durable)
        except WriteConflict:
            _append_day(vault, plan.path, plan.day, plan.lines, durable)
            continue
        rec.mtime_ns, rec.size = st.st_mtime_ns, st.st_size
        records[rec.path] = rec
    return [rec.path for rec in planned]


def _days(vault: Store, lines: Iterable[EpisodeLine]) -> list[tuple[Path, dt.date, list[str]]]:
    """(day note, day, its lines rendered in time order, each once), in the order of each day's first line."""
    by_day: dict[dt.date, list[EpisodeLine]] = {}
    for line in lines:
        by_day.setdefault(_local(line.when).date(), []).append(line)
    folder = vault.folders["episodes"]
    out = []
    for day, entries in by_day.items():
        entries.sort(key=lambda e: _local(e.when))
        rendered = list(dict.fromkeys(e.render() for e in entries))
        path, previous = _current_part(folder, day)
        if previous is not None:  # a retry of lines that landed just before the day moved on adds none twice
            rendered = _missing(_decode(_read_or_empty(previous), previous), rendered)
        if rendered:
            out.append((path, day, rendered))
    return out


def part_name(day: dt.date, part: int) -> str:
    """The file name of a day's note, part 1 (`2026-12-02.md`) or a later one (`2026-12-02 (2).md`)."""
    return f"{day.isoformat()}.md" if part == 1 else f"{day.isoformat()} ({part}).md"


def _current_part(folder: Path, day: dt.date) -> tuple[Path, Path | None]:
    """The part of a day's note that new lines go to, and the full part before it when that one is new."""
    part = 1
    while (folder / part_name(day, part + 1)).exists():
        part += 1
    path = folder / part_name(day, part)
    try:
        full = path.stat().st_size >= PART_BYTES
    except OSError:
        full = False
    if not full:
        return path, None
    nxt = folder / part_name(day, part + 1)
    return nxt, (path if not nxt.exists() else None)


def _read_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _local(when: dt.datetime) -> dt.datetime:
    """An aware time as given; a naive one is taken as local time."""
    return when.astimezone() if when.tzinfo is None else when


def _append_day(vault: Store, path: Path, day: dt.date, lines: list[str], durable: bool) -> Record | None:
    """Add the lines missing from one day note, re-reading it while someone else saves it; returns
    the record of its new text (None if no line was missing)."""

    def once() -> Record | None:  # created or saved by someone else since it was read: their text wins
        content, sha, current = _next_text(vault, path, day, lines)
        if content is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8")
        st = vault.write_text(path, data, expected_sha=sha, durable=durable)
        return _day_record(vault, path, sha, current, content, data, (st.st_mtime_ns, st.st_size))

    return retry_conflicts(once)


def _day_record(vault: Store, path: Path, sha: str | None, current: str, content: str, data: bytes,
                stat: tuple[int, int]) -> Record:
    """The index record of a day note just written: from the record of the text it replaced when
    this process made that one and the lines went at the end (records.appended_record), else parsed."""
    from ..store.index.records import appended_record, build_record

    known: dict[str, Record] = vault.reused("day_records", None, dict)
    rel = vault.relpath(path)
    like = known.pop(rel, None)
    rec = None
    if like is not None and like.sha == sha and current.endswith("\n") and content.startswith(current):
        rec = appended_record(like, data, content[len(current):], stat)
    if rec is None:
        rec = build_record(data, rel, *vault.kind_of(path), stat, vault.settings.defaults,
                           max_chars=vault.settings.write.max_text_chars)
    if len(known) >= _KNOWN_DAYS:
        known.clear()
    known[rel] = rec
    return rec


def _next_text(vault: Store, path: Path, day: dt.date, lines: list[str]) -> tuple[str | None, str | None, str]:
    """(the day note's text with the lines added, hash of its current bytes or None if it does not
    exist, its current text); the new text is None when every line is already there. A day note
    caught mid-save (empty) is read again first (Store.read_current)."""
    try:
        data = vault.read_current(path)
    except FileNotFoundError:
        return new_day_note(day, lines, _part_of(path)), None, ""
    current = _decode(data, path)
    content = with_lines(current, lines)
    return (None if content == current else content), content_hash(data), current


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteFormatError(path, None, "not a UTF-8 text note; the episode lines were not added") from None


def new_day_note(day: dt.date, lines: list[str], part: int = 1) -> str:
    """A new day note: `type: episode` and `date` properties, then the `## vaultmem` section; a later
    part of the day first links to the part before it."""
    before = "" if part == 1 else f"Continued from [[{part_name(day, part - 1)[:-3]}]].\n\n"
    return render_new({"type": "episode", "date": day}, before + "".join(f"{line}\n" for line in [HEADING, *lines]))


def _part_of(path: Path) -> int:
    """The part number a day note's file name gives (1 for `YYYY-MM-DD.md`)."""
    match = re.fullmatch(r"\d{4}-\d{2}-\d{2} \((\d+)\)\.md", path.name)
    return int(match.group(1)) if match else 1


def with_lines(note: str, lines: list[str]) -> str:
    """The note with the lines it lacks appended to its `## vaultmem` section (added at the end if absent).

    Every other character of the note is kept; the note's own line ending is used.
    """
    fresh = _missing(note, lines)
    if not fresh:
        return note
    newline = "\r\n" if "\r\n" in note else "\n"
    added = "".join(line + newline for line in fresh)
    at = _section_end(note)
    if at is None:
        return _terminated(note, newline) + _separator(note, newline) + HEADING + newline + added
    return _terminated(note[:at], newline) + added + note[at:]


def _missing(note: str, lines: list[str]) -> list[str]:
    """The lines no line of the note is (blanks around it aside), in order.

    A line found nowhere in the text is missing for sure (a search in C): the note is split into
    its lines only when one may be there, since a day note grows by a line per memory.
    """
    if all(line not in note for line in lines):
        return list(lines)
    present = {row.rstrip("\r\n").strip() for row in _LINE_BREAK.split(note)}
    return [line for line in lines if line not in present]


def _section_end(note: str) -> int | None:
    """Where the `## vaultmem` section's last non-blank line ends (after its line break), or None
    without the section. Found by searching the text, not by walking its lines one by one."""
    heading = _OWN_HEADING.search(note)
    if heading is None:
        return None
    start = note.find("\n", heading.end())
    start = len(note) if start < 0 else start + 1
    following = _SECTION_END.search(note, start)
    stop = len(note) if following is None else following.start()
    last = len(note[start:stop].rstrip())
    if not last:
        return start
    end = note.find("\n", start + last - 1)
    return stop if end < 0 or end >= stop else end + 1


def _terminated(text: str, newline: str) -> str:
    """The text ending with a line break (unless empty)."""
    return text if not text or text.endswith("\n") else text + newline


def _separator(note: str, newline: str) -> str:
    """A blank line before a new heading, unless the note is empty, ends blank or ends with its frontmatter."""
    last = note.rstrip("\r\n").rpartition("\n")[2]
    if not last.strip() or last.rstrip("\r") == "---" or note.endswith(("\n\n", "\n\r\n")):
        return ""
    return newline
