"""Saying again what a note already holds changes nothing (issue 13 item 3): no score creep, no new
timestamp, no rewrite, no git diff; and a correction carries the old note's tags and lifecycle over."""

from __future__ import annotations

from tests.conftest import snapshot_files
from tests.test_clone import commit_all, git
from vaultmem.notes.note import parse_note

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


MONDAY, TUESDAY = "2026-11-02T09:00:00+00:00", "2026-11-03T10:00:00+00:00"  # 25 hours apart
WINDOW = "The deploy window is on Tuesday 22:00 for the billing service"
RESTATED = "The deploy window is Tuesday 22:00 for the billing service"  # other words, the same memory


def test_the_very_same_words_with_a_new_tag_add_the_tag_and_nothing_else(vault):
    first = vault.remember(INVOICE, timestamp=MONDAY)
    before = _meta(vault, first)
    again = vault.remember(INVOICE, tags=["finance"], timestamp=TUESDAY)
    assert (again.action, again.id) == ("merged", first.id)
    after = _meta(vault, first)
    assert "finance" in after["tags"]
    assert after["score"] == before["score"] and after["timestamp"] == before["timestamp"]  # a retry is no news
    assert vault.remember(INVOICE, tags=["finance"]).action == "unchanged"


def test_a_restatement_strengthens_a_memory_once_a_day_and_saying_it_again_is_unchanged(vault):
    first = vault.remember(WINDOW, timestamp=MONDAY)
    soon = vault.remember(RESTATED, timestamp="2026-11-02T15:00:00+00:00")  # the same day: no creep
    assert (soon.action, soon.id, soon.score) == ("unchanged", first.id, first.score)
    before = snapshot_files(vault.root)
    assert vault.remember(RESTATED, timestamp="2026-11-02T16:00:00+00:00").action == "unchanged"
    assert snapshot_files(vault.root) == before
    later = vault.remember(RESTATED, timestamp=TUESDAY)  # a day on, telling it again strengthens it once
    assert (later.action, later.id) == ("merged", first.id) and later.score == first.score + 1
    assert _meta(vault, first)["timestamp"].isoformat() == TUESDAY
    assert vault.remember(RESTATED, timestamp="2026-11-03T11:00:00+00:00").score == later.score


def test_a_restatement_within_the_day_still_adds_its_new_tag(vault):
    first = vault.remember(WINDOW, timestamp=MONDAY)
    soon = vault.remember(RESTATED, tags=["deploys"], timestamp="2026-11-02T15:00:00+00:00")
    assert (soon.action, soon.id, soon.score) == ("merged", first.id, first.score)
    assert "deploys" in _meta(vault, first)["tags"] and _meta(vault, first)["timestamp"].isoformat() == MONDAY


def test_a_correction_links_the_entities_the_old_note_linked(vault):
    vault.add_entity("Acme Corp")
    old = vault.remember("Acme Corp has its office in Building 4", tags=["office"])
    assert "[[Acme Corp]]" in (vault.root / old.path).read_text()
    new = vault.remember("We moved: the office is now in the harbour tower", supersedes=old.id)
    assert _meta(vault, new)["entities"] == ["[[Acme Corp]]"]
    hits = vault.recall("Acme Corp", record_access=False)
    assert hits[0].id == new.id and hits[0].channels["graph"] > 0
    given = vault.remember("The office is now at Pier 9", supersedes=new.id, entity=["Globex"])
    assert _meta(vault, given)["entities"] == ["[[Globex]]"]  # entities given replace the old ones


def test_an_entity_the_text_does_not_name_is_linked_in_the_entities_property(vault):
    result = vault.remember("Contract renewed for two years", entity=["Acme Corp"])
    assert _meta(vault, result)["entities"] == ["[[Acme Corp]]"]
    named = vault.remember("Acme Corp pays by bank transfer", entity=["Acme Corp"])
    assert "entities" not in _meta(vault, named)  # the body links it already
    assert {h.id for h in vault.recall("Acme Corp", record_access=False)} >= {result.id, named.id}


def test_an_explicit_supersede_in_nearly_the_same_words_replaces_the_note_instead_of_merging(vault):
    """Hermes' memory tool replaces an entry with a reworded one; `--supersedes` says the same: the
    new wording must become the memory, not be folded into the old note and lost."""
    old = vault.remember(WINDOW, timestamp=MONDAY)
    new = vault.remember(RESTATED, supersedes=old.id, timestamp=TUESDAY)
    assert (new.action, new.supersedes) == ("created", old.id) and new.id != old.id
    assert _meta(vault, old)["status"] == "superseded"
    assert [h.id for h in vault.recall("deploy window Tuesday", record_access=False)] == [new.id]


def test_a_restatement_of_a_hand_written_note_without_tags_is_decided_not_a_crash(vault):
    """A note a person wrote has no `tags:` line; a restatement of it within the day is unchanged."""
    (vault.root / "memories" / "Deploy window.md").write_text(
        f"---\nid: 01J0000000000000000000000D\ntimestamp: {MONDAY}\n---\n{WINDOW}\n", encoding="utf-8")
    vault.refresh()
    again = vault.remember(RESTATED, timestamp="2026-11-02T15:00:00+00:00")
    assert (again.action, again.id) == ("unchanged", "01J0000000000000000000000D")


def test_a_merge_into_a_note_whose_hand_typed_time_has_no_offset_takes_the_newer_time(vault):
    """YAML reads `2026-11-01 09:00:00` as a naive time; comparing it with the restatement's crashed."""
    (vault.root / "memories" / "Deploy window.md").write_text(
        f"---\nid: 01J0000000000000000000000E\ntimestamp: 2026-11-01 09:00:00\n---\n{WINDOW}\n", encoding="utf-8")
    vault.refresh()
    later = vault.remember(RESTATED, timestamp="2026-11-05T10:00:00+00:00")
    assert (later.action, later.id) == ("merged", "01J0000000000000000000000E")
    assert _meta(vault, later)["timestamp"].isoformat() == "2026-11-05T10:00:00+00:00"


def _reminders(count: int) -> list[dict]:
    return [{"text": f"Invoice INV-2024-0042: reminder number {i} went to the customer's office",
             "timestamp": f"2026-11-{i + 1:02d}T09:00:00+00:00"} for i in range(count)]


def _notes_saying(vault, statement: str) -> list[str]:
    return [p.name for p in (vault.root / "memories").glob("*.md") if statement in p.read_text(encoding="utf-8")]


def test_a_repeat_of_a_statement_appended_to_a_full_note_is_unchanged_in_a_batch(vault):
    # bench/write.py at 100k notes: an exact repeat of a statement that had been appended to a
    # same-value note was appended again to the newer note that value started when the first was full
    reminders = _reminders(20)
    results = vault.remember_many([*reminders, reminders[1]])
    assert len({r.id for r in results[:20]}) >= 2  # the cap started a second note
    assert results[1].action == "merged"
    assert (results[-1].action, results[-1].id) == ("unchanged", results[1].id)
    assert len(_notes_saying(vault, reminders[1]["text"])) == 1


def test_a_repeat_of_a_statement_appended_to_a_full_note_is_unchanged_in_a_later_write(vault):
    reminders = _reminders(20)
    results = vault.remember_many(reminders)
    again = vault.remember(**reminders[1])
    assert (again.action, again.id) == ("unchanged", results[1].id)
    reworded = vault.remember("invoice INV-2024-0042 : Reminder number 1 went to the customer's office!")
    assert (reworded.action, reworded.id) == ("unchanged", results[1].id)
    assert len(_notes_saying(vault, reminders[1]["text"])) == 1


TWO_CLIENTS = ["合同 CT2024-0001 由刘敏签署，另见李丽。", "刘敏的合同编号改为 CT2024-0002",
               "李丽的合同编号是 CT2024-0003"]


def _two_clients(vault) -> None:
    vault.add_entity("刘敏")
    vault.add_entity("李丽")


def test_a_new_value_of_one_clients_attribute_leaves_anothers_current_note_alone(vault):
    # bench/write.py at 100k: a correction found by 刘敏's contract carried the old note's link to 李丽
    # over and so became 李丽's contract note too; 李丽's next contract then retired 刘敏's (6,423 of
    # 6,865 supersedes retired a note about someone else, and their notes ended linking 39 people)
    _two_clients(vault)
    first, liumin, lili = (vault.remember(said) for said in TWO_CLIENTS)
    assert liumin.supersedes == first.id
    assert lili.supersedes is None and _meta(vault, liumin)["status"] == "active"
    assert "entities" not in _meta(vault, liumin)  # it names 刘敏; 李丽 was the old note's business


def test_a_new_value_of_one_clients_attribute_leaves_anothers_current_note_alone_in_a_batch(vault):
    _two_clients(vault)
    first, liumin, lili = vault.remember_many([{"text": said} for said in TWO_CLIENTS])
    assert liumin.supersedes == first.id
    assert lili.supersedes is None and _meta(vault, liumin)["status"] == "active"
