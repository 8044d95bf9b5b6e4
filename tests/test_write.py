"""remember: the note it writes, idempotency, imports and batches."""

import json

import pytest

from vaultmem import VaultmemError
from vaultmem.notes.note import parse_note
from vaultmem.write.items import read_jsonl


def test_remember_writes_a_spec_note(vault):
    result = vault.remember("客户张三的合同编号是 CT2024-0876", tags=["contract", "client_zhangsan"],
                            source="finance-bot", lifecycle="fact", score=7, type="contract_id", value="CT2024-0876")
    assert result.action == "created"
    note = parse_note((vault.root / result.path).read_bytes())
    assert list(note.meta)[:3] == ["id", "type", "value"]
    assert note.meta["id"] == result.id
    assert note.meta["tags"] == ["contract", "client_zhangsan", "contract_id"]  # the extracted type is a tag
    assert note.meta["score"] == 7.0 and note.meta["source"] == "finance-bot"
    assert note.meta["lifecycle"] == "fact" and note.meta["status"] == "active"
    assert note.meta["namespace"] == "shared" and note.meta["trust"] == "agent"  # trust follows the source
    assert note.meta["version"] == ["testbox-0001:1"]
    assert note.meta["timestamp"].tzinfo is not None
    assert note.body.strip() == "客户[[张三]]的合同编号是 CT2024-0876"  # the customer became an entity
    assert (vault.root / "entities/张三.md").exists()
    assert result.path == "memories/客户张三的合同编号是 CT2024-0876.md"


def test_defaults_come_from_config(vault):
    cfg = vault.root / ".vaultmem/config.yaml"
    cfg.write_text("defaults:\n  lifecycle: preference\n  namespace: team\n", encoding="utf-8")
    from vaultmem import Vault

    v = Vault(vault.root)
    note = parse_note((v.root / v.remember("Likes dark mode").path).read_bytes())
    assert note.meta["lifecycle"] == "preference" and note.meta["namespace"] == "team"


def test_the_same_content_twice_is_one_note(vault):
    first = vault.remember("Weekly sync is on Monday at 10:00.")
    second = vault.remember("  weekly sync is on   Monday at 10:00.  ")
    assert second.action == "unchanged" and second.id == first.id
    assert len(list((vault.root / "memories").glob("*.md"))) == 1


def test_same_title_different_content_gets_a_second_readable_name(vault):
    a = vault.remember("Server alert threshold", tags=["a"])
    b = vault.remember("Server alert threshold\n\nRaised after the October incident, see the runbook.")
    assert a.path != b.path
    assert b.path.endswith("Server alert threshold 2.md") or b.path.endswith("Server alert threshold!.md")


def test_timestamp_sets_the_time_of_an_imported_memory(vault):
    result = vault.remember("Moved to the Shanghai office.", timestamp="2023-05-08T13:56:00+08:00")
    note = parse_note((vault.root / result.path).read_bytes())
    assert note.meta["timestamp"].isoformat() == "2023-05-08T13:56:00+08:00"
    with pytest.raises(VaultmemError, match="invalid timestamp"):
        vault.remember("x", timestamp="last tuesday")


def test_bad_fields_are_refused_before_anything_is_written(vault):
    with pytest.raises(VaultmemError, match="score"):
        vault.remember("too important", score=11)
    with pytest.raises(VaultmemError, match="text"):
        vault.remember("   ")
    assert [p.name for p in (vault.root / "memories").iterdir()] == [".gitignore"]


def test_batch_imports_with_progress_and_dedups(vault):
    items = [{"text": f"Memory number {i}", "tags": ["batch"], "episode": "s1"} for i in range(50)]
    items.append({"text": "Memory number 7"})
    seen = []
    results = vault.remember_many(items, progress=seen.append)
    assert seen[-1] == 51
    assert sum(r.action == "created" for r in results) == 50
    assert results[-1].action == "unchanged" and results[-1].id == results[7].id
    assert len(vault.recall(tags=["batch"], limit=100)) == 50


def test_a_batch_killed_half_way_finishes_without_duplicates_when_run_again(vault, monkeypatch):
    from vaultmem.write import pipeline as write
    from vaultmem.write.pipeline import Writer

    monkeypatch.setattr(write, "PENDING_MAX", 4)  # new notes are written four at a time

    items = [{"text": f"Imported fact {i}", "timestamp": "2026-11-02T10:00:00+00:00"} for i in range(20)]
    real = Writer._create
    calls = {"n": 0}

    def crash_after_ten(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 10:
            raise KeyboardInterrupt  # the process is killed mid-batch
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Writer, "_create", crash_after_ten)
    with pytest.raises(KeyboardInterrupt):
        vault.remember_many(items)
    monkeypatch.setattr(Writer, "_create", real)
    on_disk = list((vault.root / "memories").glob("*.md"))
    assert len(on_disk) == 8 and all(parse_note(p.read_bytes()).meta["id"] for p in on_disk)
    results = vault.remember_many(items)
    assert sum(r.action == "unchanged" for r in results) == 8
    assert len(list((vault.root / "memories").glob("*.md"))) == 20
    assert not list((vault.root / "memories").glob(".*.tmp"))  # no temp files left behind
    day = (vault.root / "episodes/2026-11-02.md").read_text(encoding="utf-8")
    assert day.count("[[Imported fact") == 20  # the episode lines the killed run owed are written
    assert vault.doctor().ok


def test_jsonl_errors_name_the_line():
    with pytest.raises(VaultmemError, match="line 2"):
        list(read_jsonl(['{"text": "ok"}', "{not json"]))
    with pytest.raises(VaultmemError, match="line 1"):
        list(read_jsonl(['["a list"]']))


def test_unknown_batch_fields_are_refused(vault):
    with pytest.raises(VaultmemError, match="unknown field"):
        vault.remember_many([{"text": "a", "colour": "red"}, {"text": "b"}])


def test_jsonl_batch_fields_reach_the_note(vault):
    line = json.dumps({"text": "Caroline went to the LGBTQ support group.", "source": "Caroline",
                       "timestamp": "2023-05-08T13:56:00+00:00", "episode": "conv-26/session_1",
                       "namespace": "conv-26", "lifecycle": "event", "score": 4, "type": "event"})
    [result] = vault.remember_many(list(read_jsonl([line])))
    meta = parse_note((vault.root / result.path).read_bytes()).meta
    assert meta["source"] == "Caroline" and meta["episode"] == "conv-26/session_1"
    assert meta["namespace"] == "conv-26" and meta["lifecycle"] == "event" and meta["score"] == 4.0
