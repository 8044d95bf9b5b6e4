"""remember: turn a text into a memory note (plain form: frontmatter defaults, idempotent by fingerprint)."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import text
from .errors import VaultmemError, WriteConflict
from .vault import new_ulid, safe_filename

if TYPE_CHECKING:
    from .vault import Vault

TITLE_CHARS = 60
_LINK = re.compile(r"\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")
BATCH_FIELDS = {"text", "tags", "source", "lifecycle", "score", "timestamp", "type", "value", "namespace",
                "episode", "title"}


@dataclass(frozen=True)
class WriteResult:
    """What remember did: created a note, or found the same memory already there (unchanged)."""

    action: str
    id: str
    path: str
    title: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def parse_time(value: str | dt.datetime | dt.date | None) -> dt.datetime:
    """An aware datetime from ISO 8601 text, a datetime or a date; naive times are local; None is now."""
    if value is None:
        return dt.datetime.now().astimezone().replace(microsecond=0)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise VaultmemError(f"invalid timestamp {value!r}: use ISO 8601, e.g. 2026-11-29T14:02:11+08:00") from None
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    return value.astimezone() if value.tzinfo is None else value


def make_title(body: str) -> str:
    """A readable title from a memory's first line: at most TITLE_CHARS characters, cut at a word."""
    line = next((ln.strip(" #-*>\t") for ln in body.splitlines() if ln.strip()), "")
    line = _LINK.sub(lambda m: m.group(2) or m.group(1), line)
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[:TITLE_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_CHARS // 2 else cut).rstrip(" ,.;:，。；：")


def _str_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, int, float)) for v in value):
        raise VaultmemError(f"{name} must be a list of strings")
    return [str(v).lstrip("#") for v in value if str(v).strip("# ")]


def build_meta(vault: Vault, fields: dict[str, Any]) -> dict[str, Any]:
    """SPEC §3 frontmatter for a new memory, in its documented key order, defaults from config."""
    d = vault.config["defaults"]
    when = parse_time(fields.get("timestamp"))
    meta: dict[str, Any] = {"id": new_ulid(when.timestamp()), "type": fields.get("type") or d["type"]}
    if fields.get("value") not in (None, ""):
        meta["value"] = str(fields["value"])
    score = fields.get("score")
    meta["score"] = float(d["score"] if score is None else score)
    if not 0 <= meta["score"] <= 10:
        raise VaultmemError(f"score must be between 0 and 10, not {meta['score']:g}")
    meta["timestamp"] = when
    meta["tags"] = _str_list(fields.get("tags"), "tags")
    meta["source"] = str(fields.get("source") or d["source"])
    meta["lifecycle"] = str(fields.get("lifecycle") or d["lifecycle"])
    meta["trust"] = str(d["trust"])
    meta["status"] = "active"
    meta["namespace"] = str(fields.get("namespace") or d["namespace"])
    if fields.get("episode"):
        meta["episode"] = str(fields["episode"])
    meta["version"] = [f"{vault.device}:1"]
    return meta


def _existing(vault: Vault, fp: str) -> WriteResult | None:
    rows = vault.index.select_notes("fp = ? AND kind = 'memory'", (fp,))
    for row in rows:
        if (vault.root / row["path"]).exists():
            return WriteResult("unchanged", row["id"], row["path"], row["title"])
    return None


def _new_path(folder: Path, title: str, attempt: int) -> Path:
    stem = safe_filename(title)
    return folder / (f"{stem}.md" if attempt == 0 else f"{stem} {attempt + 1}.md")


def _create(vault: Vault, body: str, fields: dict[str, Any], durable: bool,
            taken: set[str]) -> tuple[WriteResult, Path]:
    """Write a new note under a unique readable name (never replacing a file another writer took).

    taken: the case-folded names already in the folder, listed once per batch and kept up to date.
    """
    from .note import render_new  # YAML is imported only by code that writes notes

    meta = build_meta(vault, fields)
    title = str(fields.get("title") or make_title(body))
    content = render_new(meta, body.rstrip("\n") + "\n")
    folder = vault.folders["memories"]
    for attempt in range(10_000):
        path = _new_path(folder, title, attempt)
        if path.name.casefold() in taken:
            continue
        try:
            vault.write_text(path, content, expected_sha=None, durable=durable)
        except WriteConflict:
            taken.add(path.name.casefold())
            continue  # another process took the name a moment ago
        taken.add(path.name.casefold())
        return WriteResult("created", meta["id"], vault.relpath(path), path.stem), path
    raise VaultmemError(f"no free file name for {title!r} in {folder}")


def _clean_fields(item: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    unknown = set(item) - BATCH_FIELDS
    if unknown:
        raise VaultmemError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    body = item.get("text")
    if not isinstance(body, str) or not body.strip():
        raise VaultmemError(f"{where}: `text` is required and must be a non-empty string")
    return body.strip(), {k: v for k, v in item.items() if k != "text"}


def remember(vault: Vault, body: str, **fields: Any) -> WriteResult:
    """Store one memory; the same content again returns the existing note (action 'unchanged')."""
    return remember_many(vault, [{"text": body, **fields}])[0]


def remember_many(vault: Vault, items: Iterable[dict[str, Any]],
                  progress: Callable[[int], None] | None = None) -> list[WriteResult]:
    """Store many memories: one fsync at the end, one index update, duplicates collapsed.

    Crash-safe: every note is written whole (temp file + rename); a re-run finds the notes already
    written by their fingerprint and creates nothing twice.
    """
    batch = not isinstance(items, list) or len(items) > 1
    if batch:
        vault.refresh()  # notes of an interrupted earlier run must count as already written
    results: list[WriteResult] = []
    seen: dict[str, WriteResult] = {}
    written: list[Path] = []
    folder = vault.folders["memories"]
    folder.mkdir(parents=True, exist_ok=True)
    taken = {name.casefold() for name in os.listdir(folder)}
    for n, item in enumerate(items, 1):
        body, fields = _clean_fields(item, f"item {n}")
        fp = text.fingerprint(body)
        found = seen.get(fp) or _existing(vault, fp)
        if found is None:
            found, path = _create(vault, body, fields, not batch, taken)
            written.append(path)
            seen[fp] = found
        elif found.action == "created":
            found = WriteResult("unchanged", found.id, found.path, found.title)
        results.append(found)
        if progress:
            progress(n)
    if batch and written:
        os.sync()  # one flush for the whole batch instead of one fsync per note
    if written:
        vault.index.upsert([vault.record_for(p) for p in written])
        vault.audit({"event": "remember", "id": r.id, "path": r.path} for r in results if r.action == "created")
    return results


def read_jsonl(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Objects of a JSON-lines stream; a bad line raises VaultmemError naming its line number."""
    import json

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise VaultmemError(f"line {number}: not valid JSON ({exc.args[0]})") from None
        if not isinstance(item, dict):
            raise VaultmemError(f"line {number}: expected a JSON object")
        yield item
