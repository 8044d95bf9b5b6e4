"""Forgetting (SPEC §7): a forgotten memory moves to the archive, is never deleted, and is audited."""

import json
import os
import stat

import pytest

from vaultmem import NoteNotFound, VaultmemError
from vaultmem.notes.note import parse_note


def test_forget_archives_the_note_and_recall_no_longer_shows_it(vault):
    kept = vault.remember("Staging uses port 8443", tags=["ops"])
    gone = vault.forget(kept.id, reason="replaced by the new cluster")
    assert gone.action == "archived" and gone.status == "archived"
    assert gone.path.startswith("archive/") and not (vault.root / kept.path).exists()
    meta = parse_note((vault.root / gone.path).read_bytes()).meta
    assert meta["status"] == "archived" and meta["id"] == kept.id and meta["tags"] == ["ops"]
    assert vault.recall("staging port") == []
    assert [h.id for h in vault.recall("staging port", include=["archived"])] == [kept.id]


def test_forget_records_the_reason_and_is_idempotent(vault):
    kept = vault.remember("Staging uses port 8443")
    vault.forget(kept.id, reason="outdated")
    assert vault.forget(kept.id).action == "unchanged"
    audit = [json.loads(line) for path in (vault.state / "devices").rglob("audit*")
             for line in path.read_text(encoding="utf-8").splitlines()]
    forgets = [e for e in audit if e.get("event") == "forget"]
    assert len(forgets) == 1  # the second forget found it archived and wrote nothing
    assert forgets[0]["reason"] == "outdated" and forgets[0]["id"] == kept.id
    assert forgets[0]["path"] == "archive/Staging uses port 8443.md"


def test_forget_refuses_what_is_not_a_memory(vault):
    with pytest.raises(NoteNotFound):
        vault.forget("no such note")
    vault.add_entity("张三")
    with pytest.raises(VaultmemError, match="not a memory"):
        vault.forget("张三")


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_a_rewritten_or_moved_note_keeps_its_mode_and_a_new_note_gets_the_default(vault):
    """Issue 28 item 6: a person's chmod 600 of a note survives every edit vaultmem makes of it."""
    umask = os.umask(0o022)
    os.umask(umask)
    made = vault.remember("The staging database lives on host db-7 port 5433", tags=["ops"])
    note = vault.root / made.path
    assert _mode(note) == 0o644 & ~umask
    note.chmod(0o600)
    for rewrite in (lambda: vault.pin(made.id), lambda: vault.feedback(made.id, "wrong"),
                    lambda: vault.remember("The staging database lives on host db-7 port 5433", tags=["db"])):
        before = note.read_bytes()
        rewrite()
        assert note.read_bytes() != before and _mode(note) == 0o600
    archived = vault.root / vault.forget(made.id, reason="moved to the new cluster").path
    assert _mode(archived) == 0o600
    assert _mode(vault.root / vault.restore(made.id).path) == 0o600
    candidate = vault.remember("ACK managed clusters may add a fee", candidate=True)
    (vault.root / candidate.path).chmod(0o640)
    assert _mode(vault.root / vault.confirm(candidate.id).path) == 0o640
