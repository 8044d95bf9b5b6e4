"""The life of a memory after it is written: promotion from the inbox (forgetting, feedback and
consolidation will live here too)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import VaultmemError, WriteConflict
from .write import WriteResult, numbered

if TYPE_CHECKING:
    from .vault import Vault


def confirm(vault: Vault, ref: str) -> WriteResult:
    """Promote a candidate from the inbox: status active, moved to the memories folder."""
    with vault.index.writing():
        return _confirm(vault, ref)


def _confirm(vault: Vault, ref: str) -> WriteResult:
    from .note import parse_note, update_fields
    from .records import content_hash

    row = vault.resolve(ref)
    if row["kind"] != "memory" or row["status"] != "candidate":
        raise VaultmemError(f"{row['path']} is not a candidate (status {row['status'] or 'active'})")
    src = vault.root / row["path"]
    data = src.read_bytes()
    new_text = update_fields(parse_note(data, row["path"]), {"status": "active"})
    folder = vault.folders["memories"]
    folder.mkdir(parents=True, exist_ok=True)
    for attempt in range(10_000):
        dst = numbered(folder, src.stem, attempt)
        try:
            vault.write_text(dst, new_text, expected_sha=None)
        except WriteConflict:
            continue
        break
    else:
        raise VaultmemError(f"no free file name for {src.stem!r} in {folder}")
    if content_hash(src.read_bytes()) != content_hash(data):
        dst.unlink()
        raise WriteConflict(src)
    src.unlink()
    vault.refresh()
    vault.audit([{"event": "confirm", "id": row["id"], "path": vault.relpath(dst)}])
    return WriteResult("confirmed", row["id"], vault.relpath(dst), dst.stem, None, row["type"], row["value"],
                       row["score"], "active", list(row["tags"]))
