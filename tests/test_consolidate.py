"""Consolidation: repeated events or choices become one note linking its sources (issue 17 item 7)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.errors import ConfigError, VaultmemError
from vaultmem.lifecycle.consolidate import confidence, core_words, gist, group_gists
from vaultmem.notes.note import parse_note
from vaultmem.surfaces.cli import app
from vaultmem.text.terms import plain_text

OAT = ["Ordered an oat milk latte at Blue Bottle", "Ordered oat milk flat white", "Ordered an oat milk cappuccino"]
UNRELATED = ["Bought a new laptop", "Met Alice about the budget", "Ordered a new keyboard"]


def _write(vault: Vault, texts: list[str], first_day: int = 1, **fields) -> list[str]:
    """Remember texts one day apart; returns their ids."""
    return [vault.remember(t, source="hermes", timestamp=f"2026-05-{first_day + i:02d}T10:00:00+00:00", **fields).id
            for i, t in enumerate(texts)]


def _gists(texts: list[str], namespace: str = "shared") -> list[tuple[str, frozenset[str]]]:
    return [(namespace, gist(plain_text(t))) for t in texts]


def _meta(vault: Vault, rel: str) -> dict:
    return parse_note((vault.root / rel).read_bytes()).meta


# -- the pure rule ----------------------------------------------------------------------------------
def test_gist_drops_digits_and_stopwords():
    assert gist(plain_text("Ordered an oat milk latte on 2026-05-01 for 4.50")) == {"order", "oat", "milk", "latt"}


def test_three_similar_group_on_their_shared_terms():
    assert group_gists(_gists(OAT), 0.5, 2) == [([0, 1, 2], frozenset({"order", "oat", "milk"}))]


def test_unrelated_notes_make_no_group():
    assert group_gists(_gists(UNRELATED), 0.5, 2) == []


def test_a_note_naming_two_of_the_words_is_no_repeat():
    # "bought oat milk at the store" shares oat+milk, but not the group's whole core (order): no member
    texts = [OAT[0], "Bought oat milk at the store", OAT[1], OAT[2]]
    assert group_gists(_gists(texts), 0.5, 2) == [([0, 2, 3], frozenset({"order", "oat", "milk"}))]


def test_no_chaining_through_a_middle_note():
    # A~B share {red, bike, ride}; B~C share {bike, ride, park, lake}... a group needs its core in every member
    texts = ["red bike ride", "red bike ride park lake", "bike ride park lake swim"]
    groups = group_gists(_gists(texts), 0.5, 2)
    assert all(len(m) == 2 for m, _ in groups) and len(groups) == 1


def test_namespaces_never_mix():
    items = [*_gists(OAT[:2], "agent-a"), *_gists(OAT[2:], "agent-b")]
    assert [m for m, _ in group_gists(items, 0.5, 2)] == [[0, 1]]


def test_an_earlier_loose_note_joins_a_group_formed_later():
    # the first note pairs with neither neighbour alone first, yet holds the core the later pair shares
    texts = ["oat milk order", "Ordered oat milk flat white", "Ordered an oat milk cappuccino"]
    assert group_gists(_gists(texts), 0.5, 2)[0][0] == [0, 1, 2]


def test_confidence_grows_with_count_and_spread():
    assert confidence(3, 1) == 0.5
    assert confidence(3, 3) == 0.75
    assert confidence(5, 5) == 0.94
    assert confidence(50, 50) == 0.95  # capped
    assert confidence(4, 4) > confidence(4, 1)


# -- the vault --------------------------------------------------------------------------------------
def test_three_repeats_become_one_linked_note(vault):
    ids = _write(vault, OAT)
    report = vault.consolidate()
    assert [g.action for g in report.groups] == ["create"]
    note = report.groups[0].note
    meta = _meta(vault, note["path"])
    assert meta["source"] == "consolidation" and meta["type"] == "preference"
    assert meta["consolidates"] == ids and meta["confidence"] == 0.75
    body = parse_note((vault.root / note["path"]).read_bytes()).body
    for title in OAT:
        assert f"[[{title}]]" in body
    assert "(recurring)" in body
    assert vault.get(note["id"]).id == note["id"]


def test_unrelated_and_two_similar_write_nothing(vault):
    _write(vault, [*UNRELATED, *OAT[:2]])
    before = sorted(p.name for p in vault.folders["memories"].glob("*.md"))
    report = vault.consolidate()
    assert report.groups == [] and report.candidates == 5
    assert sorted(p.name for p in vault.folders["memories"].glob("*.md")) == before


def test_min_option_and_config(vault):
    _write(vault, OAT[:2])
    assert vault.consolidate(dry_run=True).groups == []
    assert [g.action for g in vault.consolidate(dry_run=True, min_repeats=2).groups] == ["create"]
    with pytest.raises(VaultmemError):
        vault.consolidate(min_repeats=1)
    (vault.state / "config.yaml").write_text("consolidate:\n  min_repeats: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        Vault(vault.root)


def test_dry_run_writes_nothing(vault):
    _write(vault, OAT)
    before = {p: p.read_bytes() for p in vault.root.rglob("*") if p.is_file() and "cache" not in p.parts}
    report = vault.consolidate(dry_run=True)
    assert [g.action for g in report.groups] == ["create"] and report.groups[0].note is None
    after = {p: p.read_bytes() for p in vault.root.rglob("*") if p.is_file() and "cache" not in p.parts}
    assert after == before


def test_idempotent_and_sources_untouched(vault):
    _write(vault, OAT)
    sources = {p: p.read_bytes() for p in vault.folders["memories"].glob("*.md")}
    vault.consolidate()
    after_first = {p: p.read_bytes() for p in vault.folders["memories"].glob("*.md")}
    assert all(after_first[p] == data for p, data in sources.items())  # no source edited
    second = vault.consolidate()
    assert [g.action for g in second.groups] == ["unchanged"]
    assert {p: p.read_bytes() for p in vault.folders["memories"].glob("*.md")} == after_first


def test_a_fourth_repeat_updates_the_note(vault):
    ids = _write(vault, OAT)
    note = vault.consolidate().groups[0].note
    fourth = _write(vault, ["Ordered oat milk mocha"], first_day=9)
    report = vault.consolidate()
    assert [(g.action, g.note["id"]) for g in report.groups] == [("update", note["id"])]
    meta = _meta(vault, note["path"])
    assert meta["consolidates"] == [*ids, *fourth] and meta["confidence"] == confidence(4, 4)
    assert "[[Ordered oat milk mocha]]" in (vault.root / note["path"]).read_text(encoding="utf-8")
    assert len([p for p in vault.folders["memories"].glob("*.md") if "recurring" in p.name]) == 1


def test_a_deleted_consolidation_is_not_recreated(vault):
    _write(vault, OAT)
    note = vault.consolidate().groups[0].note
    (vault.root / note["path"]).unlink()
    report = vault.consolidate()
    assert [g.action for g in report.groups] == ["skip"]
    assert "gone" in report.groups[0].reason
    assert not (vault.root / note["path"]).exists()
    _write(vault, ["Ordered oat milk mocha"], first_day=9)  # not even when another repeat comes
    assert [g.action for g in vault.consolidate().groups] == ["skip"]


def test_other_types_are_no_candidates(vault):
    _write(vault, OAT, type="task")
    assert vault.consolidate().candidates == 0


def test_cli_consolidate(vault):
    _write(vault, OAT)
    runner = CliRunner()
    dry = runner.invoke(app, ["consolidate", "--dry-run", "--vault", str(vault.root)])
    assert dry.exit_code == 3 and "would create" in dry.output
    done = runner.invoke(app, ["consolidate", "--json", "--vault", str(vault.root)])
    assert done.exit_code == 0
    assert [g["action"] for g in json.loads(done.output)["groups"]] == ["create"]
    again = runner.invoke(app, ["consolidate", "--dry-run", "--vault", str(vault.root)])
    assert again.exit_code == 0 and "unchanged" in again.output
    assert runner.invoke(app, ["consolidate", "--min", "1", "--vault", str(vault.root)]).exit_code == 2


def test_cli_consolidate_names_a_group_in_the_words_of_its_notes_not_its_stems(vault):
    """Issue 30 item 6: it printed "sharing latt, milk, oat, order" and, of Chinese, the 2-grams
    "了燕, 拿铁, 点了, 燕麦, 麦拿"; a person reads the notes' own words, in their order."""
    _write(vault, ["Ordered an oat milk latte at Blue Bottle", "Ordered another oat milk latte before the standup",
                   "Ordered an oat milk latte with pastries"])
    _write(vault, ["早上点了燕麦拿铁", "下午又点了燕麦拿铁", "周五点了燕麦拿铁"], first_day=10)
    dry = CliRunner().invoke(app, ["consolidate", "--dry-run", "--vault", str(vault.root)])
    heads = [line for line in dry.output.splitlines() if line.startswith("would create")]
    assert [head.split(" sharing ")[1].split(" (")[0] for head in heads] == ["Ordered, oat, milk, latte", "点了燕麦拿铁"]
    groups = json.loads(CliRunner().invoke(app, ["consolidate", "--dry-run", "--json", "--vault", str(vault.root)]).output)
    assert groups["groups"][0]["core"] == ["latt", "milk", "oat", "order"]  # --json keeps the terms for scripts
    assert groups["groups"][0]["words"] == ["Ordered", "oat", "milk", "latte"]


def test_a_core_word_is_the_form_its_notes_use_most():
    bodies = ["ordered lattes today", "Ordered a latte", "ordered a latte again", "two lattes, ordered"]
    assert core_words(bodies, {"order", "latt"}) == ["ordered", "lattes"]  # 3 ordered to 1, lattes 2 to latte 2: first
    assert core_words(["拿铁和燕麦拿铁"], {"燕麦", "麦拿", "拿铁"}) == ["拿铁", "燕麦拿铁"]


def test_the_same_choice_of_two_people_is_no_repetition(vault):
    vault.add_entity("Alice")
    vault.add_entity("Bob")
    _write(vault, ["Alice prefers window seats", "Bob prefers window seats", "Alice prefers window seats on trains"])
    assert vault.consolidate(dry_run=True, min_repeats=2).groups[0].ids.__len__() == 2
    assert vault.consolidate(dry_run=True).groups == []


def test_chinese_repeats_group_by_their_bigrams():
    texts = ["今天点了燕麦拿铁", "又点了燕麦拿铁", "早上点了燕麦拿铁"]
    assert [m for m, _ in group_gists(_gists(texts), 0.5, 2)] == [[0, 1, 2]]
    assert group_gists(_gists(["今天点了燕麦拿铁", "明天去北京开会", "周末在家看电影"]), 0.5, 2) == []


def test_the_note_names_what_repeats(vault):
    _write(vault, OAT)
    body = parse_note((vault.root / vault.consolidate().groups[0].note["path"]).read_bytes()).body
    assert body.splitlines()[0] == "Ordered oat milk (recurring)"
    assert "For example: Ordered an oat milk cappuccino" in body


def test_entity_names_do_not_make_a_core(vault):
    vault.add_entity("David Scott")
    _write(vault, ["David Scott prefers Slack over email, especially for the partial interview",
                   "David Scott prefers metric units, especially for the weekly milestone",
                   "David Scott prefers tables for comparisons, especially for the permanent migration"])
    assert vault.consolidate(dry_run=True).groups == []


def test_a_detail_the_first_two_share_does_not_shut_the_others_out():
    # in a vault, "with friends" is common and "Dovipa" is not: the core drops the detail, keeps the name
    common = ["Dinner with friends", "Called friends", "Hiked with friends"]
    texts = [*common, "Painted the Dovipa fence with friends", "Painted the Dovipa fence with friends downtown",
             "Painted the Dovipa fence today", "Painted the Dovipa fence early"]
    assert group_gists(_gists(texts), 0.5, 2) == [([3, 4, 5, 6], frozenset({"paint", "dovipa", "fenc"}))]


def test_a_core_never_sheds_its_most_specific_word():
    texts = ["Watched the Vizone bicycle race with friends", "Watched the Vizone bicycle race with friends",
             "Watched the Sudopa bicycle race with friends"]
    assert [m for m, _ in group_gists(_gists(texts), 0.5, 2)] == [[0, 1]]
