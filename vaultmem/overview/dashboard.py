"""`vaultmem dashboard`: an Obsidian Bases file (Obsidian 1.9+) and a Dataview note over the memories'
own properties: memories by namespace, fading soon, needs verification, recently superseded, pinned.

Both are written from the vault's settings (its folders, the half-life of each lifecycle) into the
memory root, as `Memory dashboard.base` and `Memory dashboard.md` (the note embeds the base first, so
Obsidian without Dataview shows the views too). Their first line says vaultmem wrote them and carries
a digest of the rest: a file whose digest still matches is vaultmem's own and is brought up to date; a
file edited by a person (in an editor or in Obsidian's view settings, which rewrite it) or one vaultmem
never wrote is left as it is, and the result says so. `force` replaces it, after copying it to
`.vaultmem/dashboard-backup/<UTC time>/`.

"Fading soon" is what Obsidian can know: a memory reaches half its strength one half-life after its
write (its own `half_life`, else its lifecycle's). A use resets that clock, and uses live in the
event logs, which Obsidian does not read: `vaultmem report` has the exact figures.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.files import atomic_write

if TYPE_CHECKING:
    from ..store.store import Store

BASE_NAME = "Memory dashboard.base"
NOTE_NAME = "Memory dashboard.md"
BACKUP_DIR = "dashboard-backup"
FADING_DAYS = 30
_MARK = "vaultmem dashboard"
_BASE_HEAD = "# {mark} {digest}: written by `vaultmem dashboard`; edit freely: vaultmem never writes over an edited copy\n"
_NOTE_HEAD = "%% {mark} {digest}: written by `vaultmem dashboard`; edit freely: vaultmem never writes over an edited copy %%\n"
_MARKED = re.compile(_MARK + r" ([0-9a-f]{16}):")
_SHOWN = ["file.name", "type", "lifecycle", "score", "source", "status", "timestamp"]


@dataclass
class Dashboard:
    """What `dashboard` did with each file: {name, path, action (created, updated, unchanged, kept,
    replaced), why (for kept), backup (for replaced)}."""

    files: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (--json)."""
        return asdict(self)


def write(vault: Store, force: bool = False, now: float | None = None) -> Dashboard:
    """Write (or bring up to date) the base and the note in the memory root; see the module's docstring."""
    folders = obsidian_folders(vault)
    done = Dashboard()
    stamp = time.time() if now is None else now
    for name, head, body in ((BASE_NAME, _BASE_HEAD, base_yaml(vault, folders)),
                             (NOTE_NAME, _NOTE_HEAD, dataview_note(vault, folders))):
        done.files.append(_put(vault, vault.memory_root / name, head, body, force, stamp))
    return done


def obsidian_folders(vault: Store) -> dict[str, str]:
    """The memory folders as Obsidian names them: relative to the Obsidian vault that holds the memory root
    (the nearest folder up from it with a `.obsidian/`), else to the vaultmem vault's root."""
    top = next((p for p in (vault.memory_root, *vault.memory_root.parents) if (p / ".obsidian").is_dir()), vault.root)
    return {role: Path(os.path.relpath(vault.folders[role], top)).as_posix()
            for role in ("memories", "inbox", "archive")}


def _digest(body: str) -> str:
    return hashlib.blake2b(body.encode("utf-8"), digest_size=8).hexdigest()


def _put(vault: Store, path: Path, head: str, body: str, force: bool, now: float) -> dict[str, Any]:
    text = head.format(mark=_MARK, digest=_digest(body)) + body
    done: dict[str, Any] = {"name": path.name, "path": vault.relpath(path)}
    try:
        old = path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        try:
            atomic_write(path, text.encode("utf-8"), exclusive=True)
        except FileExistsError:  # made by someone else a moment ago: theirs
            return {**done, "action": "kept", "why": "it appeared while vaultmem was writing it"}
        return {**done, "action": "created"}
    if old == text:
        return {**done, "action": "unchanged"}
    why = _not_ours(old)
    if why and not force:
        return {**done, "action": "kept", "why": why}
    backup = None
    if why:
        backup = vault.state / BACKUP_DIR / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) / path.name
        backup.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(backup, old.encode("utf-8"))
    try:
        atomic_write(path, text.encode("utf-8"), before_replace=lambda: _still(path, old))
    except _Changed:
        return {**done, "action": "kept", "why": "it changed while vaultmem was writing it"}
    if backup is None:
        return {**done, "action": "updated"}
    return {**done, "action": "replaced", "backup": vault.relpath(backup)}


class _Changed(Exception):
    """The file changed between reading it and replacing it (a person's save)."""


def _still(path: Path, old: str) -> None:
    if path.read_bytes().decode("utf-8", "replace") != old:
        raise _Changed


def _not_ours(old: str) -> str:
    """Why a file may not be replaced ('' when it is vaultmem's own, unedited)."""
    first, _, rest = old.partition("\n")
    found = _MARKED.search(first)
    if found is None:
        return "vaultmem did not write it"
    return "" if found.group(1) == _digest(rest) else "it was edited since vaultmem wrote it"


# -- the Bases file ---------------------------------------------------------------------------------
def base_yaml(vault: Store, folders: dict[str, str]) -> str:
    """The `.base` file's YAML (Obsidian's Bases syntax: filters, formulas, properties, views)."""
    import yaml

    spec = {
        "filters": {"and": ['file.ext == "md"', {"or": [f"file.inFolder({_quoted(folders[r])})"
                                                        for r in ("memories", "inbox", "archive")]}]},
        "formulas": {"half_strength_on": _half_strength_formula(vault),
                     "fades": "if(formula.half_strength_on, formula.half_strength_on.relative())"},
        "properties": {"formula.half_strength_on": {"displayName": "Half strength on"},
                       "formula.fades": {"displayName": "Fades"},
                       "superseded_by": {"displayName": "Superseded by"}},
        "views": [
            {"type": "table", "name": "By namespace", "filters": 'status != "archived"',
             "groupBy": {"property": "namespace", "direction": "ASC"}, "order": _SHOWN,
             "sort": [{"property": "timestamp", "direction": "DESC"}]},
            {"type": "table", "name": "Fading soon",
             "filters": {"and": ['status != "archived"', 'status != "superseded"', 'status != "candidate"',
                                 "pinned != true", "formula.half_strength_on > now()",
                                 f'formula.half_strength_on <= now() + "{FADING_DAYS}d"']},
             "order": ["file.name", "lifecycle", "score", "timestamp", "formula.half_strength_on", "formula.fades"],
             "sort": [{"property": "formula.half_strength_on", "direction": "ASC"}], "limit": 50},
            {"type": "table", "name": "Needs verification", "filters": 'status == "needs-verification"',
             "order": ["file.name", "type", "source", "timestamp", "file.mtime"],
             "sort": [{"property": "file.mtime", "direction": "DESC"}]},
            {"type": "table", "name": "Recently superseded", "filters": 'status == "superseded"',
             "order": ["file.name", "superseded_by", "value", "timestamp", "file.mtime"],
             "sort": [{"property": "file.mtime", "direction": "DESC"}], "limit": 30},
            {"type": "cards", "name": "Pinned", "filters": "pinned == true",
             "order": ["file.name", "type", "lifecycle", "score", "source"],
             "sort": [{"property": "score", "direction": "DESC"}]},
        ],
    }
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=1000)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lifecycle_hours(vault: Store) -> tuple[list[tuple[str, float | None]], float | None]:
    """(lifecycle, half-life hours or None for no decay) of each named lifecycle, and the default's."""
    table = dict(vault.settings.half_life_hours)
    default = table.pop("default", 30.0)
    clean = [(name, hours if hours and hours > 0 else None) for name, hours in table.items()]
    return clean, (default if default and default > 0 else None)


def _duration(hours: float) -> str:
    """A half-life as a duration both Bases and people read: whole hours, else whole minutes."""
    return f"{int(hours)}h" if float(hours).is_integer() else f"{round(hours * 60)}m"


def _half_strength_formula(vault: Store) -> str:
    """When a memory reaches half its strength by age alone: its write plus its own half_life, else its
    lifecycle's (null for one that does not decay)."""
    named, default = _lifecycle_hours(vault)
    chain = f'date(timestamp) + "{_duration(default)}"' if default else "null"
    for name, hours in reversed(named):
        then = f'date(timestamp) + "{_duration(hours)}"' if hours else "null"
        chain = f"if(lifecycle == {_quoted(name)}, {then}, {chain})"
    return f"if(half_life, date(timestamp) + half_life, {chain})"


# -- the Dataview note ------------------------------------------------------------------------------
def dataview_note(vault: Store, folders: dict[str, str]) -> str:
    """The Markdown note: the base embedded, then the same views as Dataview queries."""
    live = " OR ".join(_quoted(folders[r]) for r in ("memories", "inbox"))
    every = " OR ".join(_quoted(folders[r]) for r in ("memories", "inbox", "archive"))
    named, default = _lifecycle_hours(vault)
    fallback = f"date(timestamp) + dur({_dv_duration(default)})" if default else "null"
    half = fallback
    for name, hours in reversed(named):
        then = f"date(timestamp) + dur({_dv_duration(hours)})" if hours else "null"
        half = f"choice(lifecycle = {_quoted(name)}, {then}, {half})"
    return f"""# Memory dashboard

Written by `vaultmem dashboard` from this vault's settings. The views just below need Obsidian 1.9 or later
(Bases); the sections after them need the Dataview community plugin. Fading soon: a memory reaches half
its strength one half-life after it was written, unless it is used (uses are in vaultmem's logs, which
Obsidian does not read: `vaultmem report` shows the exact strength).

![[{BASE_NAME}]]

## Memories by namespace

```dataview
TABLE WITHOUT ID key AS Namespace, length(rows) AS Memories
FROM {live}
WHERE status != "archived"
GROUP BY namespace
SORT length(rows) DESC
```

## Fading soon (half strength within {FADING_DAYS} days)

```dataview
TABLE lifecycle, score, timestamp, half AS "Half strength on"
FROM {live}
WHERE status != "superseded" AND status != "candidate" AND pinned != true
FLATTEN {half} AS half
WHERE half AND half > date(now) AND half <= date(now) + dur({FADING_DAYS} days)
SORT half ASC
LIMIT 50
```

## Needs verification

Marked by `wrong` or `outdated` feedback, or by a merge that kept both texts.

```dataview
TABLE type, source, timestamp, file.mtime AS Changed
FROM {live}
WHERE status = "needs-verification"
SORT file.mtime DESC
```

## Recently superseded

```dataview
TABLE superseded_by AS "Superseded by", value, timestamp, file.mtime AS Changed
FROM {every}
WHERE status = "superseded"
SORT file.mtime DESC
LIMIT 30
```

## Pinned (never decay)

```dataview
TABLE type, lifecycle, score, source
FROM {live}
WHERE pinned = true
SORT score DESC
```
"""


def _dv_duration(hours: float) -> str:
    return f"{int(hours)} hours" if float(hours).is_integer() else f"{round(hours * 60)} minutes"


__all__ = ["BASE_NAME", "BACKUP_DIR", "Dashboard", "NOTE_NAME", "base_yaml", "dataview_note", "obsidian_folders",
           "write"]
