"""The life of a memory after it is written: promotion from the inbox, forgetting into the archive and
restoring from it (many at once: forget.py; feedback is feedback.py's; consolidation will live beside them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError, WriteConflict
from ..write.items import WriteResult

if TYPE_CHECKING:
    from ..store.store import Store


def confirm(vault: Store, ref: str) -> WriteResult:
    """Promote a candidate from the inbox: status active, moved to the memories folder. A candidate
    a clone or a pull brought (not indexed yet) is found as well (Index.catch_up)."""
    with vault.index.writing():
        vault.index.catch_up()
        row = vault.resolve(ref)
        if row["kind"] != "memory" or row["status"] != "candidate":
            raise VaultmemError(f"{row['path']} is not a candidate (status {row['status'] or 'active'})")
        return _move(vault, row, "memories", "active", "confirmed", {"event": "confirm"})


def forget(vault: Store, ref: str, reason: str = "") -> WriteResult:
    """Archive a memory (SPEC §7): status archived, moved to the archive folder, never deleted; the
    audit log keeps the reason, the day's episode note a line. A memory already archived is left as
    it is ('unchanged'). Many at once, or by tag, query or time: forget.forget_where."""
    from .forget import forget_rows

    with vault.index.writing():
        vault.index.catch_up()
        row = vault.resolve(ref)
        if row["kind"] != "memory":
            raise VaultmemError(f"{row['path']} is not a memory (it is a {row['kind']} note)")
        if row["status"] == "archived":
            return _result("unchanged", row, row["path"], "archived")
        done = forget_rows(vault, [row], " ".join(reason.split()), "forget")
        if done.skipped:
            raise WriteConflict(row["path"])
        return _result("archived", row, done.notes[0]["to"], "archived")


def restore(vault: Store, ref: str, now: float | None = None) -> WriteResult:
    """Undo an archive: the note back in memories/ (a candidate in the inbox) with the status it had
    before, as the audit of its forget or gc recorded (active, the default, removes the property).

    Raises VaultmemError for a note that is not archived, WriteConflict if it is being edited.
    """
    import time

    from ..notes.writing import DELETE
    from .forget import commit_moves, relocate, who

    stamp = time.time() if now is None else now
    with vault.index.writing():
        vault.index.catch_up()
        row = vault.resolve(ref)
        if row["kind"] != "memory" or row["status"] != "archived":
            raise VaultmemError(f"{row['path']} is not archived (status {row['status'] or 'active'}): nothing to restore")
        before = _status_before(vault, row["id"])
        folder = vault.folders["inbox" if before == "candidate" else "memories"]
        moved, skipped = relocate(vault, [row], folder, lambda r: {"status": DELETE if before == "active" else before})
        if skipped:
            raise WriteConflict(row["path"], skipped[0]["why"])
        to = moved[0][1]
        event = {"event": "restore", "id": row["id"], "title": row["title"], "path": to, "from": row["path"],
                 "status": before, **who(), "ts": stamp}
        commit_moves(vault, moved, [f"Restored [[{to.rpartition('/')[2][:-3]}]]"], [event], stamp)
        return _result("restored", row, to, before)


def _status_before(vault: Store, note_id: str) -> str:
    """The status a note had before its last archive, from every device's audit log (active if none says)."""
    from ..store.events import log_files, read_new_lines

    found: tuple[float, str] = (-1.0, "active")
    for path in log_files(vault.state / "devices", "audit"):
        for ev in read_new_lines(path, 0)[0]:
            if ev.get("id") == note_id and ev.get("action") == "archive" and isinstance(ev.get("status"), str):
                ts = ev.get("ts", 0)
                if isinstance(ts, (int, float)) and ts >= found[0]:
                    found = (float(ts), ev["status"])
    return found[1] if found[1] != "archived" else "active"


def _move(vault: Store, row: dict[str, Any], role: str, status: str, action: str,
          event: dict[str, Any]) -> WriteResult:
    """Write the note with its new status into the folder of `role` and remove the old file; nothing
    is lost if the old file changed meanwhile (the copy is removed and WriteConflict raised)."""
    from ..notes.note import parse_note
    from ..notes.writing import update_fields
    from ..store.files import file_mode
    from ..store.index.records import content_hash

    src = vault.root / row["path"]
    data = src.read_bytes()
    new_text = update_fields(parse_note(data, row["path"]), {"status": status})
    folder = vault.folders[role]
    folder.mkdir(parents=True, exist_ok=True)
    name, _ = vault.create_numbered(folder, src.stem, new_text.encode("utf-8"), mode=file_mode(src))
    dst = folder / name
    if content_hash(src.read_bytes()) != content_hash(data):
        dst.unlink()
        raise WriteConflict(src)
    src.unlink()
    # the two files it changed, not a rescan of the vault (which costs ~0.1 s at 10k notes)
    vault.index.upsert([vault.record_for(dst)], gone=[row["path"]])
    vault.index.wrote()
    vault.audit([{**event, "id": row["id"], "path": vault.relpath(dst)}])
    return _result(action, row, vault.relpath(dst), status)


def _result(action: str, row: dict[str, Any], path: str, status: str) -> WriteResult:
    return WriteResult(action, row["id"], path, path.rpartition("/")[2][:-3], None, row["type"], row["value"],
                       row["score"], status, list(row["tags"]))


__all__ = ["confirm", "forget", "restore"]
