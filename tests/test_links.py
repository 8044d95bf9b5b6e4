"""Entity matching, wikilinks and entity notes (links.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from vaultmem.errors import UnsafePath, WriteConflict
from vaultmem.write.links import Entity, EntityMatcher, add_entity, fold
from vaultmem.notes.note import parse_note

from .conftest import write_note

ATLAS = Entity("Project Atlas", ("阿特拉斯项目", "Atlas"))
ZHANG = Entity("张三", ("老张", "Zhang San", "张总"))


@pytest.fixture
def matcher() -> EntityMatcher:
    return EntityMatcher([ATLAS, ZHANG, Entity("星河科技", ("Xinghe", "星河"))])


def test_title_mention_becomes_plain_link(matcher):
    assert matcher.link("Ship Project Atlas today.") == ("Ship [[Project Atlas]] today.", ["Project Atlas"])


def test_alias_and_case_mentions_keep_the_written_text(matcher):
    assert matcher.link("老张 says hi") == ("[[张三|老张]] says hi", ["张三"])
    assert matcher.link("project atlas is late") == ("[[Project Atlas|project atlas]] is late", ["Project Atlas"])
    assert matcher.link("ZHANG SAN called")[0] == "[[张三|ZHANG SAN]] called"


def test_full_width_mentions_match(matcher):
    linked, titles = matcher.link("客户ＡＴＬＡＳ的验收")
    assert linked == "客户[[Project Atlas|ＡＴＬＡＳ]]的验收"
    assert titles == ["Project Atlas"]


def test_chinese_names_match_inside_chinese_text(matcher):
    linked, titles = matcher.link("明天和张三去星河科技开会")
    assert linked == "明天和[[张三]]去[[星河科技]]开会"
    assert titles == ["张三", "星河科技"]


def test_longest_name_wins(matcher):
    assert matcher.link("Atlas: Project Atlas") == ("[[Project Atlas|Atlas]]: Project Atlas", ["Project Atlas"])
    assert matcher.link("about Project Atlas")[0] == "about [[Project Atlas]]"
    assert matcher.link("星河科技的合同")[0] == "[[星河科技]]的合同"  # not [[星河科技|星河]]科技


def test_latin_names_need_word_boundaries(matcher):
    assert matcher.link("Atlassian and Atlas2 and _Atlas") == ("Atlassian and Atlas2 and _Atlas", [])
    assert matcher.link("Atlas-based, (Atlas)")[0] == "[[Project Atlas|Atlas]]-based, (Atlas)"
    assert matcher.link("在Atlas上线")[0] == "在[[Project Atlas|Atlas]]上线"  # CJK next to Latin is a boundary


def test_only_the_first_mention_is_linked(matcher):
    linked, titles = matcher.link("Atlas, Project Atlas and atlas; 老张 and 张三")
    assert linked == "[[Project Atlas|Atlas]], Project Atlas and atlas; [[张三|老张]] and 张三"
    assert titles == ["Project Atlas", "张三"]


def test_an_entity_already_linked_is_not_linked_again(matcher):
    body = "Atlas first, then [[Project Atlas]] and [[张三|老张]]; 张三 again"
    assert matcher.link(body) == (body, [])
    assert matcher.link("[[Atlas]] and Project Atlas") == ("[[Atlas]] and Project Atlas", [])  # by alias


def test_code_links_urls_emails_and_tags_are_left_alone(matcher):
    body = ("`Atlas` and [[Other|Atlas]] and [Atlas](https://atlas.example.com) and "
            "https://example.com/Atlas and www.atlas.com/Atlas and atlas@example.com and #Atlas\n"
            "```\nAtlas in a fence\n```\n")
    assert matcher.link(body) == (body, [])
    linked, _ = matcher.link(body + "Atlas at last")
    assert linked.endswith("[[Project Atlas|Atlas]] at last")


def test_alias_bar_is_escaped_in_a_table_row(matcher):
    assert matcher.link("| owner | 老张 |")[0] == "| owner | [[张三\\|老张]] |"


def test_positions_survive_folding_that_changes_length():
    matcher = EntityMatcher([Entity("Straße"), Entity("Ångström Labs", ("ÅL",))])
    assert matcher.link("ẞ STRASSE Straße")[0] == "ẞ [[Straße|STRASSE]] Straße"
    assert matcher.link("ß, then Straße.")[0] == "ß, then [[Straße]]."
    assert matcher.link("ﬁ Ångström labs")[0] == "ﬁ [[Ångström Labs|Ångström labs]]"


def test_fold_is_text_normalize_character_by_character():
    assert fold("ＡＢＣ，Straße") == "abc,strasse"
    assert fold("Ｐｒｏｊｅｃｔ") == "project"


def test_entities_added_later_are_matched():
    matcher = EntityMatcher()
    assert matcher.link("Hermes and 星河") == ("Hermes and 星河", [])
    matcher.add(Entity("Hermes Agent", ("Hermes",)))
    matcher.add(Entity("星河科技", ("星河",)))
    assert matcher.link("Hermes and 星河")[0] == "[[Hermes Agent|Hermes]] and [[星河科技|星河]]"


def test_many_entities_use_the_compiled_path():
    companies = [Entity(f"{chr(0x5000 + i)}公司") for i in range(100)]
    matcher = EntityMatcher(companies + [Entity(f"Team {i}") for i in range(100)])
    linked, titles = matcher.link(f"{companies[42].title} met Team 7 and Team 77")
    assert linked == f"[[{companies[42].title}]] met [[Team 7]] and [[Team 77]]"
    matcher.add(Entity("一公司"))  # a first character learnt after the compile
    assert matcher.link("一公司")[0] == "[[一公司]]"
    for i in range(1, 40):  # enough of them to compile again
        matcher.add(Entity(f"{chr(0x4E00 + i)}公司"))
    assert matcher.link("丁公司和一公司")[0] == "[[丁公司]]和[[一公司]]"


def test_a_title_beats_another_entitys_alias():
    matcher = EntityMatcher([Entity("Apollo Team", ("Atlas",)), ATLAS, Entity("Atlas")])
    assert matcher.link("Atlas")[0] == "[[Atlas]]"


def test_one_character_names_are_not_linked():
    assert EntityMatcher([Entity("X", ("张",))]).link("X 张") == ("X 张", [])


# --- entity notes -----------------------------------------------------------------------------


def test_add_entity_creates_a_spec_note(vault):
    when = dt.datetime(2026, 9, 21, 10, 18, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    action, rel = add_entity(vault, "张三", ["老张", "Zhang San"], tags=["person", "#customer"], when=when)
    assert (action, rel) == ("created", "entities/张三.md")
    note = parse_note((vault.root / rel).read_bytes())
    assert list(note.meta) == ["id", "type", "aliases", "tags", "timestamp"]
    assert len(note.meta["id"]) == 26
    assert note.meta["type"] == "entity"
    assert note.meta["aliases"] == ["老张", "Zhang San"]
    assert note.meta["tags"] == ["entity", "person", "customer"]
    assert note.meta["timestamp"] == when
    assert "aliases: [老张, Zhang San]\n" in note.text
    assert note.body == "# 张三\n\n"


def test_new_entity_is_indexed_and_matchable_at_once(vault):
    add_entity(vault, "Project Atlas", ["Atlas", "阿特拉斯项目"])
    rows = vault.index.select_notes("kind = 'entity'")
    assert [(r["title"], r["aliases"]) for r in rows] == [("Project Atlas", ["Atlas", "阿特拉斯项目"])]
    linked, _ = EntityMatcher.from_index(vault).link("阿特拉斯项目 ships")
    assert linked == "[[Project Atlas|阿特拉斯项目]] ships"


def test_add_entity_merges_new_aliases_by_title_or_alias(vault):
    add_entity(vault, "张三", ["老张"])
    assert add_entity(vault, "老张", ["张总", "laozhang"]) == ("merged", "entities/张三.md")
    assert add_entity(vault, "ZHANG三", []) == ("created", "entities/ZHANG三.md")
    note = parse_note((vault.root / "entities/张三.md").read_bytes())
    assert note.meta["aliases"] == ["老张", "张总", "laozhang"]
    assert EntityMatcher.from_index(vault).link("张总好")[0] == "[[张三|张总]]好"


def test_add_entity_unchanged_when_nothing_is_new(vault):
    add_entity(vault, "Emily Carter", ["Emily"])
    before = (vault.root / "entities/Emily Carter.md").read_bytes()
    assert add_entity(vault, "emily carter", ["EMILY", "Emily Carter"]) == ("unchanged", "entities/Emily Carter.md")
    assert (vault.root / "entities/Emily Carter.md").read_bytes() == before


def test_merge_changes_only_the_aliases_lines_of_a_hand_written_note(sample):
    path = sample.root / "entities/星河科技.md"
    before = path.read_text(encoding="utf-8")
    sample.refresh()
    assert add_entity(sample, "Xinghe", ["星河物流"]) == ("merged", "entities/星河科技.md")
    after = path.read_text(encoding="utf-8")
    assert after == before.replace("  - 星河\n", "  - 星河\n  - 星河物流\n")


def test_merge_finds_a_note_not_yet_indexed(vault):
    write_note(vault, "entities/Hermes.md", "---\ntype: entity\naliases: []\n---\n# Hermes\n\nBy hand.\n")
    assert add_entity(vault, "Hermes", ["Hermes Agent"]) == ("merged", "entities/Hermes.md")
    assert "aliases: [Hermes Agent]\n" in (vault.root / "entities/Hermes.md").read_text(encoding="utf-8")


def test_merge_retries_when_the_note_changes_under_it(vault, monkeypatch):
    add_entity(vault, "李伟", ["小李"])
    path = vault.root / "entities/李伟.md"
    real_write = vault.write_text
    calls = []

    def person_saves_first(target, content, *, expected_sha, durable=True):
        if not calls:
            path.write_text(path.read_text(encoding="utf-8") + "Owns billing.\n", encoding="utf-8")
        calls.append(target)
        return real_write(target, content, expected_sha=expected_sha, durable=durable)

    monkeypatch.setattr(vault, "write_text", person_saves_first)
    assert add_entity(vault, "李伟", ["Li Wei"])[0] == "merged"
    text = path.read_text(encoding="utf-8")
    assert len(calls) == 2
    assert text.endswith("Owns billing.\n") and "aliases: [小李, Li Wei]" in text


def test_merge_gives_up_after_retries(vault, monkeypatch):
    add_entity(vault, "王芳")

    def always_conflict(target, content, *, expected_sha, durable=True):
        raise WriteConflict(target)

    monkeypatch.setattr(vault, "write_text", always_conflict)
    with pytest.raises(WriteConflict):
        add_entity(vault, "王芳", ["Wang Fang"])


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "..\\..\\boot.ini", "a/../../b"])
def test_unsafe_names_stay_inside_the_entities_folder(vault, name):
    action, rel = add_entity(vault, name)
    assert action == "created"
    path = (vault.root / rel).resolve()
    assert path.parent == vault.folders["entities"].resolve()
    assert rel.count("/") == 1 and ".." not in Path(rel).parts
    assert name.strip() in parse_note(path.read_bytes()).meta["aliases"]  # the name as given still matches


@pytest.mark.parametrize("name", ["..", "../..", " / "])
def test_names_without_a_usable_file_name_are_refused(vault, name):
    with pytest.raises(UnsafePath):
        add_entity(vault, name)


def test_doctor_is_clean_after_adding_entities(vault):
    add_entity(vault, "Project Atlas", ["Atlas"], tags=["project"])
    add_entity(vault, "张三", ["老张"])
    add_entity(vault, "老张", ["张总"])
    report = vault.doctor()
    assert report.unparsable == [] and report.duplicate_ids == {} and report.missing_ids == []
    assert report.broken_links == []
