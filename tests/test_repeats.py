"""Saying again what a note already holds changes nothing (issue 13 item 3): no score creep, no new
timestamp, no rewrite, no git diff; and a correction carries the old note's tags and lifecycle over."""

from __future__ import annotations

from tests.conftest import snapshot_files
from tests.test_clone import commit_all, git
from vaultmem.note import parse_note

INVOICE = "Invoice INV-2024-0042 is due on 2026-12-20"
PAID = "Invoice INV-2024-0042 is due on 2026-12-20, paid by bank transfer"


def _meta(vault, result) -> dict:
    return parse_note((vault.root / result.path).read_bytes()).meta


def test_a_repeat_after_a_merge_is_unchanged_and_leaves_every_file_and_git_alone(vault):
    vault.remember(INVOICE)
    merged = vault.remember(PAID)
    assert merged.action == "merged"
    git(vault.root, "init", "-q")
    commit_all(vault.root)
    before, meta = snapshot_files(vault.root), _meta(vault, merged)
    for again in (PAID, INVOICE, "invoice INV-2024-0042 is due on 2026-12-20 , paid by bank transfer!"):
        result = vault.remember(again)
        assert (result.action, result.id, result.score) == ("unchanged", merged.id, merged.score)
    assert snapshot_files(vault.root) == before  # bytes and mtimes: no rewrite
    assert _meta(vault, merged)["timestamp"] == meta["timestamp"] and _meta(vault, merged)["score"] == meta["score"]
    assert git(vault.root, "status", "--porcelain", "--", "memories", "episodes", "entities", "inbox") == ""


def test_a_repeat_that_brings_a_new_tag_still_merges_it(vault):
    first = vault.remember(INVOICE)
    again = vault.remember(INVOICE + ".", tags=["finance"])  # (the very same text is a retry: fingerprint)
    assert again.action == "merged" and again.id == first.id
    assert "finance" in _meta(vault, first)["tags"]


def test_a_repeat_inside_one_batch_is_unchanged_too(vault):
    results = vault.remember_many([{"text": INVOICE}, {"text": PAID}, {"text": PAID}, {"text": INVOICE + "."}])
    assert [r.action for r in results] == ["created", "merged", "unchanged", "unchanged"]
    assert len({r.id for r in results}) == 1


def test_a_correction_keeps_the_old_notes_tags_and_lifecycle(vault):
    vault.add_entity("张三")
    old = vault.remember("张三的合同编号是 CT2024-0771", tags=["client_zhangsan"], lifecycle="permanent")
    new = vault.remember("张三的合同编号改为 CT2024-0876")
    assert new.supersedes == old.id
    meta = _meta(vault, new)
    assert "client_zhangsan" in meta["tags"] and meta["lifecycle"] == "permanent"
    assert [h.id for h in vault.recall("", tags=["client_zhangsan"])] == [new.id]


def test_a_correction_with_its_own_tags_and_lifecycle_keeps_those(vault):
    vault.add_entity("张三")
    vault.remember("张三的合同编号是 CT2024-0771", tags=["client_zhangsan"], lifecycle="permanent")
    new = vault.remember("张三的合同编号改为 CT2024-0876", tags=["renewed"], lifecycle="fact")
    meta = _meta(vault, new)
    assert "client_zhangsan" not in meta["tags"] and "renewed" in meta["tags"] and meta["lifecycle"] == "fact"


def test_an_explicit_supersede_carries_the_tags_over(vault):
    old = vault.remember("The office is in Building 4", tags=["office"], lifecycle="fact")
    new = vault.remember("We moved: the office is now in the harbour tower", supersedes=old.id)
    assert new.supersedes == old.id
    assert "office" in _meta(vault, new)["tags"] and _meta(vault, new)["lifecycle"] == "fact"
