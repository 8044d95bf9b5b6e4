"""Daily episode notes (episodes.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from vaultmem.write.episodes import EpisodeLine, append_episodes
from vaultmem.errors import WriteConflict
from vaultmem.write.links import add_entity

from .conftest import write_note

CST = dt.timezone(dt.timedelta(hours=8))
UTC = dt.timezone.utc


def at(day: int, hour: int, minute: int, tz: dt.tzinfo = CST) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, minute, tzinfo=tz)


def read(vault, rel: str) -> bytes:
    return (vault.root / rel).read_bytes()


def test_new_day_note_has_the_sample_vault_format(vault):
    lines = [EpisodeLine(at(8, 10, 45), "Weekly sync 2026-10-08", "hermes"),
             EpisodeLine(at(8, 9, 5), "客户张三合同编号 CT2024-0876", "user")]
    assert append_episodes(vault, lines) == ["episodes/2026-10-08.md"]
    assert read(vault, "episodes/2026-10-08.md").decode() == (
        "---\ntype: episode\ndate: 2026-10-08\n---\n## vaultmem\n"
        "- 09:05 [[客户张三合同编号 CT2024-0876]] (source: user)\n"
        "- 10:45 [[Weekly sync 2026-10-08]] (source: hermes)\n")


def test_lines_go_to_the_day_of_their_own_time_zone(vault):
    late_in_shanghai = dt.datetime(2026, 10, 8, 23, 30, tzinfo=CST)
    same_instant_in_utc = late_in_shanghai.astimezone(UTC)  # 15:30 on the 8th
    next_day_in_utc = dt.datetime(2026, 10, 8, 23, 30, tzinfo=UTC)  # 07:30 on the 9th in Shanghai
    written = append_episodes(vault, [EpisodeLine(late_in_shanghai, "A", "user"),
                                      EpisodeLine(same_instant_in_utc, "B", "user"),
                                      EpisodeLine(next_day_in_utc, "C", "user")])
    assert written == ["episodes/2026-10-08.md"]
    text = read(vault, "episodes/2026-10-08.md").decode()
    assert "- 23:30 [[A]] (source: user)\n" in text
    assert "- 15:30 [[B]] (source: user)\n" in text
    assert "- 23:30 [[C]] (source: user)\n" in text


def test_days_split_across_files(vault):
    written = append_episodes(vault, [EpisodeLine(at(9, 0, 1), "B", "user"), EpisodeLine(at(8, 23, 59), "A", "user")])
    assert written == ["episodes/2026-10-09.md", "episodes/2026-10-08.md"]
    assert read(vault, "episodes/2026-10-08.md").decode().endswith("## vaultmem\n- 23:59 [[A]] (source: user)\n")
    assert read(vault, "episodes/2026-10-09.md").decode().endswith("## vaultmem\n- 00:01 [[B]] (source: user)\n")


def test_appends_to_the_end_of_its_own_section(vault):
    person = ("---\ntype: episode\ndate: 2026-10-08\n---\nMorning notes.\n\n## vaultmem\n"
              "- 09:00 [[Old]] (source: user)\n\n## Tasks\n- [ ] call 张三\n")
    write_note(vault, "episodes/2026-10-08.md", person)
    append_episodes(vault, [EpisodeLine(at(8, 11, 0), "New", "hermes")])
    assert read(vault, "episodes/2026-10-08.md").decode() == person.replace(
        "(source: user)\n\n", "(source: user)\n- 11:00 [[New]] (source: hermes)\n\n")


def test_persons_text_is_kept_byte_for_byte_with_crlf_and_no_final_newline(vault):
    person = "# 2026-10-08\r\n\r\nDaily note by hand ✓\r\n- [x] done\r\n\r\n## vaultmem\r\n- 08:00 [[Old]] (source: user)"
    (vault.root / "episodes/2026-10-08.md").write_bytes(person.encode())
    append_episodes(vault, [EpisodeLine(at(8, 12, 0), "New", "user")])
    after = read(vault, "episodes/2026-10-08.md")
    assert after == (person + "\r\n- 12:00 [[New]] (source: user)\r\n").encode()
    assert after.startswith(person.encode())


def test_heading_is_added_at_the_end_when_absent(vault):
    person = "Quiet day.\n- [ ] write the report\n\n### Log\nlunch"
    write_note(vault, "episodes/2026-10-09.md", person)
    append_episodes(vault, [EpisodeLine(at(9, 14, 20), "生产集群 CPU 告警阈值", "user")])
    assert read(vault, "episodes/2026-10-09.md").decode() == (
        person + "\n\n## vaultmem\n- 14:20 [[生产集群 CPU 告警阈值]] (source: user)\n")


def test_heading_follows_frontmatter_directly(vault):
    write_note(vault, "episodes/2026-10-09.md", "---\ntype: episode\ndate: 2026-10-09\n---\n")
    append_episodes(vault, [EpisodeLine(at(9, 9, 0), "A", "user")])
    assert read(vault, "episodes/2026-10-09.md").decode() == (
        "---\ntype: episode\ndate: 2026-10-09\n---\n## vaultmem\n- 09:00 [[A]] (source: user)\n")


def test_rerunning_a_batch_changes_nothing(vault):
    lines = [EpisodeLine(at(8, 9, 0), "A", "user"), EpisodeLine(at(8, 9, 0), "A", "user"),
             EpisodeLine(at(9, 10, 0), "B", "bot")]
    assert append_episodes(vault, lines) == ["episodes/2026-10-08.md", "episodes/2026-10-09.md"]
    before = {rel: read(vault, rel) for rel in ("episodes/2026-10-08.md", "episodes/2026-10-09.md")}
    assert read(vault, "episodes/2026-10-08.md").decode().count("[[A]]") == 1
    assert append_episodes(vault, lines) == []
    assert {rel: read(vault, rel) for rel in before} == before


def test_sample_day_note_gets_one_more_line(sample):
    rel = "episodes/2026-09-21.md"
    before = read(sample, rel).decode()
    append_episodes(sample, [EpisodeLine(dt.datetime(2026, 9, 21, 23, 5, tzinfo=CST), "Coffee order", "user")])
    assert read(sample, rel).decode() == before + "- 23:05 [[Coffee order]] (source: user)\n"


def test_a_save_between_read_and_write_is_kept(vault, monkeypatch):
    rel = "episodes/2026-10-08.md"
    write_note(vault, rel, "## vaultmem\n- 08:00 [[Old]] (source: user)\n\n## Notes\n")
    real_write = vault.write_text
    calls = []

    def person_saves_first(path, content, *, expected_sha, durable=True):
        if not calls:  # Obsidian saves the person's edit after vaultmem read the note
            path.write_text(path.read_text(encoding="utf-8") + "Typed while the agent worked.\n", encoding="utf-8")
        calls.append(path)
        return real_write(path, content, expected_sha=expected_sha, durable=durable)

    monkeypatch.setattr(vault, "write_text", person_saves_first)
    append_episodes(vault, [EpisodeLine(at(8, 9, 30), "New", "hermes")])
    assert len(calls) == 2
    assert read(vault, rel).decode() == ("## vaultmem\n- 08:00 [[Old]] (source: user)\n"
                                         "- 09:30 [[New]] (source: hermes)\n\n## Notes\nTyped while the agent worked.\n")


def test_a_day_note_created_meanwhile_is_appended_to(vault, monkeypatch):
    rel = "episodes/2026-10-08.md"
    real_write = vault.write_text

    def someone_creates_it(path, content, *, expected_sha, durable=True):
        if expected_sha is None:
            write_note(vault, rel, "Written by hand first.\n")
        return real_write(path, content, expected_sha=expected_sha, durable=durable)

    monkeypatch.setattr(vault, "write_text", someone_creates_it)
    append_episodes(vault, [EpisodeLine(at(8, 9, 30), "New", "hermes")])
    assert read(vault, rel).decode() == "Written by hand first.\n\n## vaultmem\n- 09:30 [[New]] (source: hermes)\n"


def test_gives_up_after_retries(vault, monkeypatch):
    def always_conflict(path, content, *, expected_sha, durable=True):
        raise WriteConflict(path)

    monkeypatch.setattr(vault, "write_text", always_conflict)
    with pytest.raises(WriteConflict):
        append_episodes(vault, [EpisodeLine(at(8, 9, 30), "New", "hermes")])


def test_day_notes_are_indexed_as_episodes(vault):
    append_episodes(vault, [EpisodeLine(at(8, 9, 0), "Coffee order", "user")])
    rows = vault.index.select_notes("kind = 'episode'")
    assert [(r["path"], r["links"]) for r in rows] == [("episodes/2026-10-08.md", ["Coffee order"])]


def test_doctor_is_clean_after_entities_and_episodes(vault):
    add_entity(vault, "Project Atlas", ["Atlas"])
    remembered = vault.remember("Atlas phase one is due 2026-11-15", timestamp="2026-10-08T09:00:00+08:00")
    append_episodes(vault, [EpisodeLine(at(8, 9, 0), remembered.title, "user"),
                            EpisodeLine(at(8, 9, 5), "Project Atlas", "user")])
    report = vault.doctor()
    assert report.unparsable == [] and report.duplicate_ids == {} and report.missing_ids == []
    assert report.broken_links == []
    assert report.drift == {"new": 0, "changed": 0, "deleted": 0}


def test_a_full_day_goes_on_in_a_second_part_that_links_back(vault, monkeypatch):
    """An agent writing thousands of memories a day: each part stays about PART_BYTES, so an append
    costs the same at the end of the day as at its start."""
    import vaultmem.write.episodes as episodes

    monkeypatch.setattr(episodes, "PART_BYTES", 400)
    for minute in range(30):
        append_episodes(vault, [EpisodeLine(at(8, 10, minute), f"Memory number {minute}", "hermes")])
    folder = vault.folders["episodes"]
    parts = sorted(p.name for p in folder.glob("2026-10-08*.md"))
    assert parts[0] == "2026-10-08 (2).md" and "2026-10-08.md" in parts and len(parts) >= 3
    for path in folder.glob("2026-10-08*.md"):
        assert path.stat().st_size < 400 + 100  # full at 400 bytes, then at most the lines of one append
    second = (folder / "2026-10-08 (2).md").read_text(encoding="utf-8")
    assert second.startswith("---\ntype: episode\ndate: 2026-10-08\n---\nContinued from [[2026-10-08]].\n")
    text = "".join(p.read_text(encoding="utf-8") for p in folder.glob("2026-10-08*.md"))
    assert all(text.count(f"[[Memory number {minute}]]") == 1 for minute in range(30))
    kinds = {row["path"]: row["kind"] for row in vault.index.select_notes("path LIKE 'episodes/%'")}
    assert set(kinds.values()) == {"episode"} and len(kinds) == len(parts)


def test_a_line_retried_as_the_day_moves_on_is_not_written_twice(vault, monkeypatch):
    """A crash after a line reached a part that is now full: the retry starts the next part without it."""
    import vaultmem.write.episodes as episodes

    line = EpisodeLine(at(8, 11, 0), "The retried memory", "hermes")
    append_episodes(vault, [line])
    size = (vault.folders["episodes"] / "2026-10-08.md").stat().st_size
    monkeypatch.setattr(episodes, "PART_BYTES", size)
    assert append_episodes(vault, [line, EpisodeLine(at(8, 11, 1), "A new one", "hermes")]) == \
        ["episodes/2026-10-08 (2).md"]
    second = (vault.folders["episodes"] / "2026-10-08 (2).md").read_text(encoding="utf-8")
    assert "[[A new one]]" in second and "[[The retried memory]]" not in second
