"""Forgetting (SPEC §7): a forgotten memory moves to the archive, is never deleted, and is audited."""

import json

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
