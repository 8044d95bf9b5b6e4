"""Export and import (issue 16 item 7): a vault as JSON lines that restore it byte for byte, and
memories brought in from elsewhere through the write pipeline (Hermes Agent's MEMORY.md / USER.md,
a folder of Markdown notes in any frontmatter style). A source is only ever read.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..errors import OwnerOnly, VaultmemError
from ..text.encoding import decode_text

if TYPE_CHECKING:
    from ..store.store import Store

EXPORT_SCHEMA = "vaultmem-export/1"
HERMES_FILES = {"MEMORY.md": "memory", "USER.md": "user"}  # Hermes' built-in memory files -> its targets
HERMES_SEPARATOR = "§"  # Hermes separates the entries of a memory file with this sign
HERMES_SOURCE = "hermes"
_TIME_KEYS = ("timestamp", "date", "created", "created_at", "updated")


# -- export -----------------------------------------------------------------------------------------
def export_records(vault: Store) -> Iterator[dict[str, Any]]:
    """One record per note the index knows (that the caller may see), in path order: its path, kind, id, properties, body and
    whole text (the bytes, as UTF-8), so that import_export restores it exactly. A note that is no
    UTF-8 text keeps its path and an `error`, not its bytes."""
    from ..notes.note import json_ready, parse_note

    vault.refresh()
    for row in sorted(vault.visible(vault.index.select_notes()), key=lambda r: r["path"]):
        record: dict[str, Any] = {"schema": EXPORT_SCHEMA, "path": row["path"], "kind": row["kind"], "id": row["id"]}
        try:
            data = (vault.root / row["path"]).read_bytes()
        except FileNotFoundError:
            continue  # deleted since the refresh
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            yield {**record, "error": "not UTF-8 text"}
            continue
        try:
            note = parse_note(data)
            record.update(meta=json_ready(note.meta), body=note.body)
        except VaultmemError as error:
            record["error"] = str(error)
        yield {**record, "text": text}


# -- import -----------------------------------------------------------------------------------------
def import_source(vault: Store, source: Path, namespace: str | None = None) -> dict[str, Any]:
    """Import a vaultmem export (a .jsonl file), a Hermes memory folder (MEMORY.md / USER.md) or a
    folder of Markdown notes; what it is is told by its shape. Returns {"source", "kind", counts...}."""
    source = Path(source).expanduser()
    if source.is_file() and source.suffix in (".jsonl", ".json"):
        return {"source": str(source), "kind": "vaultmem", **import_export(vault, _read_jsonl(source))}
    if source.is_file() and source.name in HERMES_FILES:
        return {"source": str(source), "kind": "hermes", **import_hermes(vault, [source], namespace)}
    if source.is_dir():
        hermes = [source / name for name in HERMES_FILES if (source / name).is_file()]
        if hermes:
            return {"source": str(source), "kind": "hermes", **import_hermes(vault, hermes, namespace)}
        return {"source": str(source), "kind": "markdown", **import_markdown(vault, source, namespace)}
    if not source.exists():
        raise VaultmemError(f"nothing to import at {source}")
    raise VaultmemError(f"{source}: import takes a vaultmem export (.jsonl), Hermes' MEMORY.md/USER.md or a "
                        "folder of Markdown notes")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every record of an export, read whole before the first is restored: a bad line (not UTF-8, not
    JSON, not a record) is an error with nothing written."""
    records = []
    for number, line in enumerate(decode_text(path.read_bytes(), str(path)).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise VaultmemError(f"{path}, line {number}: not JSON ({error.msg}); nothing was imported") from None
        if not isinstance(record, dict) or record.get("schema") != EXPORT_SCHEMA:
            raise VaultmemError(f"{path}, line {number}: not a {EXPORT_SCHEMA} record; nothing was imported")
        records.append(record)
    return records


def import_export(vault: Store, records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Restore exported notes with their ids and bytes. A note whose id the vault already has is merged
    into the vault's note by the merge driver's rules (mergedriver.merge_copies: tags unioned, the later
    timestamp, the higher score, a body both changed kept in a callout): `merged`, or `unchanged` when
    the export brings nothing new, or `kept` when either is no note the driver can read. One whose path
    is taken by another note goes under the next free numbered name. Paths are checked to stay inside
    the vault's note folders. A vault owner's operation: a caller confined to its namespace gets
    OwnerOnly (the notes come back byte for byte, in any namespace, merged into any note by id)."""
    if vault.caller.confined:
        raise OwnerOnly("restoring a vaultmem export writes notes of every namespace byte for byte: it is the "
                        f"vault owner's, not an agent's confined to {', '.join(vault.caller.own)}")
    vault.refresh()
    known = {row["id"]: row["path"] for row in vault.index.select_notes(columns=("id", "path"))}
    counts: Counter[str] = Counter()
    for record in records:
        text, rel = record.get("text"), str(record.get("path") or "")
        if not isinstance(text, str):
            counts["skipped"] += 1
            continue
        if record.get("id") in known:
            counts[_merged_into(vault, known[record["id"]], text)] += 1
            continue
        target = _inside(vault, rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        name, _ = vault.create_numbered(target.parent, target.stem, text.encode("utf-8"))
        known[record.get("id")] = vault.relpath(target.parent / name)
        counts["restored"] += 1
    vault.refresh()
    return dict(counts)


def _merged_into(vault: Store, rel: str, text: str) -> str:
    """Merge an exported note into the vault's note of the same id: merged, unchanged or kept.

    Raises WriteConflict: the note changed on disk while it was merged (a person's save); it is left as saved.
    """
    from ..store.index.records import content_hash
    from .mergedriver import merge_copies

    path = vault.root / rel
    current = vault.read_current(path)
    merged = merge_copies(current, text.encode("utf-8"), rel)
    if merged is None:
        return "kept"
    if merged == current:
        return "unchanged"
    vault.write_text(path, merged, expected_sha=content_hash(current))
    return "merged"


def _inside(vault: Store, rel: str) -> Path:
    """The vault path of an exported note, refused unless it is a Markdown file in a note folder."""
    parts = PurePosixPath(rel).parts
    folders = {vault.relpath(vault.folders[kind]) for kind in ("memories", "entities", "episodes", "inbox",
                                                               "archive") if kind in vault.folders}
    if (not rel.endswith(".md") or PurePosixPath(rel).is_absolute() or ".." in parts or "\\" in rel
            or not any(rel.startswith(folder + "/") for folder in folders)):
        raise VaultmemError(f"an exported note's path must be a .md file in a note folder, not {rel!r}")
    return vault.root / Path(*parts)


def import_hermes(vault: Store, files: list[Path], namespace: str | None = None) -> dict[str, int]:
    """Each `§`-separated entry of Hermes' MEMORY.md (facts) and USER.md (the user's preferences) as a
    memory, tagged `hermes/memory` or `hermes/user` as the Hermes provider mirrors them."""
    items = []
    for path in files:
        target = HERMES_FILES[path.name]
        for entry in decode_text(path.read_bytes(), str(path)).split(HERMES_SEPARATOR):
            if entry.strip():
                items.append({"text": entry.strip(), "source": HERMES_SOURCE, "tags": [f"hermes/{target}"],
                              "lifecycle": "preference" if target == "user" else "fact",
                              **({"namespace": namespace} if namespace else {})})
    return _written(vault, items)


def import_markdown(vault: Store, folder: Path, namespace: str | None = None) -> dict[str, int]:
    """Every Markdown file under a folder as a memory: its body the text, its YAML, TOML or JSON
    frontmatter's tags and time kept (python-frontmatter reads all three), its file name the title."""
    import frontmatter

    handlers = [_yaml_reader(), *(h for h in frontmatter.handlers if h.START_DELIMITER != "---"), _toml_reader()]
    items = []
    for path in sorted(folder.rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue  # .obsidian/, .git/, .trash/
        note = decode_text(path.read_bytes(), str(path))
        try:
            handler = next((h for h in handlers if h.detect(note)), None)
            post = frontmatter.loads(note, handler=handler) if handler else frontmatter.Post(note)
        except (ValueError, VaultmemError) as error:
            raise VaultmemError(f"{path}: cannot be read as a Markdown note ({error}); nothing was imported") from None
        if not isinstance(post.metadata, dict):
            post.metadata = {}
        if not post.content.strip():
            continue
        item: dict[str, Any] = {"text": post.content.strip(), "title": path.stem,
                                "source": f"import:{folder.name or 'markdown'}"}
        tags = post.metadata.get("tags")
        if isinstance(tags, str):
            tags = tags.replace(",", " ").split()
        if isinstance(tags, list):
            item["tags"] = [str(t).lstrip("#") for t in tags if str(t).strip("# ")]
        when = next((post.metadata[k] for k in _TIME_KEYS if post.metadata.get(k)), None)
        if when is not None:
            item["timestamp"] = when.isoformat() if isinstance(when, (dt.date, dt.datetime)) else str(when)
        if namespace:
            item["namespace"] = namespace
        items.append(item)
    return _written(vault, items)


def _yaml_reader():
    """python-frontmatter's YAML handler on vaultmem's bounded safe loader: a note in the folder whose
    aliases would expand it a billion times is that note's error, not the machine's memory."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    from ..notes.plainyaml import bounded

    loader = bounded(getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    class BoundedYaml(YAMLHandler):
        def load(self, fm: str, **kwargs: Any) -> Any:
            try:
                return yaml.load(fm, Loader=loader) or {}
            except yaml.YAMLError as error:
                raise ValueError(f"bad YAML frontmatter: {error}") from None

    return BoundedYaml()


def _toml_reader():
    """A python-frontmatter handler for `+++` TOML frontmatter read with the standard library's
    tomllib (python-frontmatter's own needs the third-party `toml` package); read-only."""
    import re
    import tomllib

    from frontmatter.default_handlers import BaseHandler

    class TomlReader(BaseHandler):
        FM_BOUNDARY = re.compile(r"^\+{3,}\s*$", re.MULTILINE)
        START_DELIMITER = END_DELIMITER = "+++"

        def load(self, fm: str, **kwargs: Any) -> dict[str, Any]:
            try:
                return tomllib.loads(fm)
            except tomllib.TOMLDecodeError as error:
                raise ValueError(f"bad TOML frontmatter: {error}") from None

        def export(self, metadata: dict[str, Any], **kwargs: Any) -> str:
            raise NotImplementedError("vaultmem writes YAML frontmatter only")

    return TomlReader()


def _written(vault: Store, items: list[dict[str, Any]]) -> dict[str, int]:
    from ..write.pipeline import remember_many

    results = remember_many(vault, items) if items else []
    return dict(Counter(r.action for r in results))


__all__ = ["EXPORT_SCHEMA", "export_records", "import_export", "import_hermes", "import_markdown", "import_source"]
