"""The bundled sample vault is what a new user meets first: it must be whole and answer well."""

from vaultmem.notes.note import parse_note

from .conftest import SAMPLE


def test_the_sample_vault_is_big_enough_and_every_note_parses():
    memories = list((SAMPLE / "memories").glob("*.md")) + list((SAMPLE / "inbox").glob("*.md"))
    assert len(memories) >= 60
    ids = [parse_note(p.read_bytes(), p).meta["id"] for p in memories]
    assert len(set(ids)) == len(ids)
    assert list((SAMPLE / "entities").glob("*.md")) and list((SAMPLE / "episodes").glob("20??-??-??.md"))


def test_doctor_finds_nothing_wrong_with_the_sample_vault(sample):
    report = sample.doctor()
    assert report.ok, report.to_dict()
    assert not report.missing_ids and not report.broken_links


def test_the_readme_query_finds_the_current_contract_first(sample):
    hits = sample.recall("合同编号")
    assert hits[0].title == "客户张三合同编号 CT2024-0876"
    assert all(h.status != "superseded" for h in hits)
    old = sample.recall("CT2024-0771", include=["superseded"])
    assert any(h.status == "superseded" for h in old)


def test_templates_are_never_recalled(vault):
    assert (vault.root / "templates" / "memory.md").exists()
    assert vault.recall() == [] and vault.recall("memory") == []
    assert vault.stats()["notes"] == 0
