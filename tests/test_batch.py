"""Batches through the write pipeline: drafted in worker processes or not, the same notes come out."""

import os

from vaultmem import Vault
from vaultmem.write import drafts
from vaultmem.notes.note import parse_note


def _items(n: int) -> list[dict]:
    items = []
    for i in range(n):
        items.append({"text": f"Customer Li Wei{i % 3} renewed contract CT2024-{1000 + i % 7} on 2026-0{1 + i % 9}-1{i % 10}.",
                      "tags": ["sales"], "timestamp": f"2026-03-0{1 + i % 9}T10:{i % 60:02d}:00+08:00",
                      "source": "crm" if i % 5 else "user"})
        items.append({"text": f"服务器 web-{i % 11} 的 CPU 告警阈值改为 {70 + i % 20}%，记住。",
                      "timestamp": f"2026-03-0{1 + i % 9}T11:{i % 60:02d}:00+08:00"})
    items.append(dict(items[0]))  # an exact repeat
    return items


def _notes(vault: Vault) -> dict[str, tuple]:
    """Every memory note by path: its body and its properties except the random id."""
    out = {}
    for path in sorted((vault.root / "memories").glob("*.md")):
        note = parse_note(path.read_bytes())
        out[path.name] = (note.body, {k: v for k, v in note.meta.items() if k != "id"})
    return out


def test_worker_processes_draft_exactly_what_one_process_drafts(tmp_path, monkeypatch):
    items = _items(60)
    serial = Vault.init(tmp_path / "serial")
    one = [(r.action, r.path, r.supersedes is not None) for r in serial.remember_many(items)]
    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr(drafts, "CHUNK", 7)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    adopt = drafts._adopt

    def adopt_and_sign(drafter):  # each worker leaves its pid: proof the batch left this process
        (tmp_path / f"worker-{os.getpid()}").touch()
        adopt(drafter)

    monkeypatch.setattr(drafts, "_adopt", adopt_and_sign)
    parallel = Vault.init(tmp_path / "parallel")
    many = [(r.action, r.path, r.supersedes is not None) for r in parallel.remember_many(items)]
    assert many == one
    workers = [p.name for p in tmp_path.glob("worker-*")]
    assert workers and f"worker-{os.getpid()}" not in workers
    assert {a for a, _, _ in one} == {"created", "merged", "unchanged"}
    assert _notes(parallel) == _notes(serial)
    assert parallel.recall("CPU 告警阈值") and parallel.doctor().ok


def test_a_note_merged_in_the_batch_that_created_it_is_indexed_with_both_statements(vault):
    results = vault.remember_many([{"text": "Contract CT2024-0876 signed with Acme"},
                                   {"text": "Contract CT2024-0876 renewal due in March"}])
    assert [r.action for r in results] == ["created", "merged"]
    row = vault.index.select_notes("path = ?", (results[0].path,))[0]
    assert "renewal due in March" in row["body"]
    assert vault.recall("renewal March")[0].path == results[0].path
    assert vault.refresh().parsed == 0  # the index already holds what is on disk


def test_a_batch_links_every_memory_to_the_entities_the_batch_names(vault):
    results = vault.remember_many([{"text": "Li Wei asked for the invoice again."},
                                   {"text": "New customer Li Wei from Acme signed up."}])
    body = parse_note((vault.root / results[0].path).read_bytes()).body
    assert "[[Li Wei]]" in body
    assert (vault.root / "entities" / "Li Wei.md").exists()


def test_a_name_taken_on_disk_during_a_batch_gets_the_next_free_name(vault, monkeypatch):
    from vaultmem.write import pipeline as write

    (vault.root / "memories").mkdir(exist_ok=True)
    taken = []
    original = write.Writer._place

    def place_after_someone_took_the_name(self, draft):
        if not taken:  # Obsidian saves a note of that very name after the batch listed the folder
            self.flight.names._taken.setdefault(draft.folder, set())  # the folder listed before the save
            (vault.root / "memories" / f"{draft.stem}.md").write_text("a person's note\n", encoding="utf-8")
            taken.append(draft.stem)
        return original(self, draft)

    monkeypatch.setattr(write.Writer, "_place", place_after_someone_took_the_name)
    results = vault.remember_many([{"text": f"Deploy window {i} is Friday 18:00"} for i in range(3)])
    assert results[0].path == f"memories/{taken[0]} 2.md"
    assert (vault.root / "memories" / f"{taken[0]}.md").read_text(encoding="utf-8") == "a person's note\n"
    assert vault.resolve(results[0].id)["title"] == f"{taken[0]} 2"
    assert vault.recall("deploy window")


def test_a_name_taken_after_it_was_reserved_is_written_under_the_next_one(vault, monkeypatch):
    from vaultmem.write.batch.pending import PendingNotes

    flush = PendingNotes.flush

    def someone_saves_that_name_first(self, *args):
        first_new = next(rel for rel, pending in self._open.items() if pending.sha is None)
        (vault.root / first_new).write_text("a person's note\n", encoding="utf-8")
        flush(self, *args)

    monkeypatch.setattr(PendingNotes, "flush", someone_saves_that_name_first)
    results = vault.remember_many([{"text": "Deploy window is Friday 18:00", "timestamp": "2026-11-02T10:00:00+00:00"},
                                   {"text": "Rollback owner is Dana", "timestamp": "2026-11-02T10:05:00+00:00"}])
    assert results[0].path == "memories/Deploy window is Friday 18∶00 2.md"
    assert results[0].title == "Deploy window is Friday 18∶00 2"
    assert (vault.root / "memories/Deploy window is Friday 18∶00.md").read_text(encoding="utf-8") == "a person's note\n"
    assert vault.resolve(results[0].id)["path"] == results[0].path
    day = (vault.root / "episodes/2026-11-02.md").read_text(encoding="utf-8")
    assert "[[Deploy window is Friday 18∶00 2]]" in day


def test_a_note_saved_by_a_person_while_a_batch_merges_into_it_keeps_both(vault, monkeypatch):
    from vaultmem.write.batch.pending import PendingNotes

    first = vault.remember("Contract CT2024-0876 signed with Acme")
    flush = PendingNotes.flush

    def person_saves_meanwhile(self, *args):
        path = vault.root / first.path
        path.write_text(path.read_text(encoding="utf-8") + "\nCall Acme's CFO first.\n", encoding="utf-8")
        flush(self, *args)

    monkeypatch.setattr(PendingNotes, "flush", person_saves_meanwhile)
    results = vault.remember_many([{"text": "Contract CT2024-0876 renewal due in March"},
                                   {"text": "Unrelated: the lab opens at nine"}])
    assert results[0].action == "merged" and results[0].path == first.path
    body = parse_note((vault.root / first.path).read_bytes()).body
    assert "Call Acme's CFO first." in body and "renewal due in March" in body
    assert "renewal due in March" in vault.index.select_notes("path = ?", (first.path,))[0]["body"]


def test_a_retitled_record_has_the_terms_a_fresh_parse_gives(vault):
    from vaultmem.settings import default_settings
    from vaultmem.store.index.records import build_record, decode_terms, index_terms, retitle

    data = "---\nid: X1\ntags: [ops]\n---\n生产集群 CPU>90% 持续5分钟 [[Li Wei]] #oncall\n".encode()
    rec = build_record(data, "memories/生产集群 CPU 告警.md", "memory", "memories", (0, len(data)), default_settings().defaults,
                       max_chars=None)
    retitle(rec, "生产集群 CPU 告警 12")
    assert decode_terms(rec.terms) == index_terms(rec) and rec.title == "生产集群 CPU 告警 12"
    assert "12" in decode_terms(rec.terms)


def test_repeated_titles_in_a_batch_take_the_next_numbers(vault):
    results = vault.remember_many([{"text": f"Daily standup notes\n\nitem {i}: owner {chr(65 + i)}"} for i in range(4)])
    assert [r.title for r in results] == ["Daily standup notes", "Daily standup notes 2", "Daily standup notes 3",
                                          "Daily standup notes 4"]
    assert {h.title for h in vault.recall("standup notes", limit=10)} == {r.title for r in results}


def test_a_first_import_rebuilds_the_lookups_it_dropped(vault, monkeypatch):
    from vaultmem.store.index import index

    def lookups():
        rows = vault.index._conn().execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        return sorted(rows)

    before = lookups()
    monkeypatch.setattr(index, "BULK_ROWS", 2)
    results = vault.remember_many([{"text": f"Invoice INV-2026-{100 + i} paid by Acme"} for i in range(6)])
    assert lookups() == before
    assert vault.resolve(results[4].id)["path"] == results[4].path
    plan = " ".join(str(r) for r in vault.index._conn().execute(
        "EXPLAIN QUERY PLAN SELECT path FROM notes WHERE id = ?", (results[4].id,)))
    assert "notes_id" in plan


def test_a_multi_threaded_host_drafts_through_a_fork_server(tmp_path, monkeypatch):
    import threading

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # an agent's other thread: forking now would be unsafe
    other.start()
    try:
        vault = Vault.init(tmp_path / "hosted")
        vault.add_entity("Li Wei0")
        results = vault.remember_many(_items(20))
    finally:
        stop.set()
        other.join()
    assert {r.action for r in results} >= {"created", "merged"}
    assert "[[Li Wei0]]" in parse_note((vault.root / results[0].path).read_bytes()).body


def test_records_built_by_the_workers_are_the_ones_a_reindex_builds(tmp_path, monkeypatch):
    """At the end of a large batch the workers create the files while the writer indexes them,
    then parse the day notes: the index must hold exactly what indexing the same files from
    scratch gives."""
    import shutil

    from vaultmem.write.batch import inflight, pending

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr(drafts, "CHUNK", 7)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    monkeypatch.setattr(pending, "CREATE_MIN", 2)
    monkeypatch.setattr(inflight, "PARSE_CHUNK", 1)
    pools = []
    flush = pending.PendingNotes.flush

    def flush_and_note_the_pool(self, pool=None, index_early=None):
        pools.append((pool, index_early))
        flush(self, pool, index_early)

    monkeypatch.setattr(pending.PendingNotes, "flush", flush_and_note_the_pool)
    vault = Vault.init(tmp_path / "batch")
    results = vault.remember_many(_items(60))
    assert pools and None not in pools[-1]  # the last flush: files created by the workers, indexed meanwhile
    assert sum(r.action == "merged" for r in results) >= 2 and len(list((vault.root / "episodes").glob("*.md"))) >= 2
    shutil.copytree(vault.root, tmp_path / "again", ignore=shutil.ignore_patterns(".vaultmem"),
                    copy_function=shutil.copy2)
    again = Vault.init(tmp_path / "again")
    again.refresh(force=True)

    def rows(v):
        return {r["path"]: dict(r) for r in v.index.select_notes("1")}

    assert rows(vault) == rows(again)
    for query in ("CPU 告警阈值", "Li Wei1 contract", "renewed", "2026-03-02"):
        assert [(h.id, round(h.final, 6)) for h in vault.recall(query)] == \
            [(h.id, round(h.final, 6)) for h in again.recall(query)]
    assert vault.refresh().parsed == 0


def test_a_name_taken_while_the_workers_create_the_notes_moves_its_early_index_row(vault, monkeypatch):
    from vaultmem.write.batch import pending

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    monkeypatch.setattr(pending, "CREATE_MIN", 1)
    flush = pending.PendingNotes.flush

    def someone_saves_that_name_first(self, *args):
        first_new = next(rel for rel, p in self._open.items() if p.sha is None)
        (vault.root / first_new).write_text("a person's note\n", encoding="utf-8")
        flush(self, *args)

    monkeypatch.setattr(pending.PendingNotes, "flush", someone_saves_that_name_first)
    results = vault.remember_many([{"text": "Deploy window is Friday 18:00", "timestamp": "2026-11-02T10:00:00+00:00"},
                                   {"text": "Rollback owner is Dana", "timestamp": "2026-11-02T10:05:00+00:00"}])
    reserved, moved = "memories/Deploy window is Friday 18∶00.md", "memories/Deploy window is Friday 18∶00 2.md"
    assert results[0].path == moved
    assert (vault.root / reserved).read_text(encoding="utf-8") == "a person's note\n"
    assert vault.resolve(results[0].id)["path"] == moved
    assert all(row["id"] != results[0].id for row in vault.index.select_notes("path = ?", (reserved,)))
    assert vault.refresh().parsed == 1  # the person's note, nothing of the batch's (before a recall catches up)
    assert [h.path for h in vault.recall("deploy window Friday")][:1] == [moved]
    day = (vault.root / "episodes" / "2026-11-02.md").read_text(encoding="utf-8")  # planned with the old name
    assert "[[Deploy window is Friday 18∶00 2]]" in day and "[[Deploy window is Friday 18∶00]]" not in day


def test_a_day_note_saved_while_the_batch_creates_its_notes_keeps_the_persons_text(vault, monkeypatch):
    """A large batch works out its day notes' text while a worker creates its notes, and writes them
    after: a day note someone saved in between gets the lines again over their text, and is indexed
    as it ends up on disk."""
    from vaultmem.write.batch import inflight, pending

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    monkeypatch.setattr(pending, "CREATE_MIN", 1)
    write_planned = inflight.write_planned
    saved = vault.root / "episodes" / "2026-11-03.md"

    def someone_saves_a_day_note_first(v, plans, *args, **kwargs):
        assert {p.path.name for p in plans} == {"2026-11-02.md", "2026-11-03.md"}
        saved.write_text("# My day\n\nWrote this by hand.\n", encoding="utf-8")
        return write_planned(v, plans, *args, **kwargs)

    monkeypatch.setattr(inflight, "write_planned", someone_saves_a_day_note_first)
    vault.remember_many([{"text": "Deploy window is Friday 18:00", "timestamp": "2026-11-02T10:00:00+00:00"},
                         {"text": "Rollback owner is Dana", "timestamp": "2026-11-03T09:05:00+00:00"}])
    text = saved.read_text(encoding="utf-8")
    assert text.startswith("# My day\n\nWrote this by hand.\n") and "[[Rollback owner is Dana]]" in text
    assert "[[Deploy window is Friday 18∶00]]" in (vault.root / "episodes" / "2026-11-02.md").read_text(encoding="utf-8")
    rows = {row["path"]: row for row in vault.index.select_notes("kind = 'episode'")}
    for rel in ("episodes/2026-11-02.md", "episodes/2026-11-03.md"):
        st = (vault.root / rel).stat()
        assert (rows[rel]["mtime_ns"], rows[rel]["size"]) == (st.st_mtime_ns, st.st_size)
    assert "Wrote this by hand." in rows["episodes/2026-11-03.md"]["body"]
    assert vault.refresh().parsed == 0


def _create_keeping_the_clock(items, mtime_ns=None):
    """Stands in for files.create_files on a file system that keeps its own times (a coarse clock,
    a network share): the files do not get the time their rows were indexed with."""
    from vaultmem.store.files import atomic_write

    return [(st.st_mtime_ns, st.st_size) for st in
            (atomic_write(path, data, durable=False, exclusive=True) for path, data in items)]


def test_rows_indexed_before_their_files_exist_end_with_the_files_own_stat(tmp_path, monkeypatch):
    """A large batch indexes its new notes while a worker creates them, with the modification
    time the worker gives each file; where the files end up with another, the rows follow them,
    so the next refresh finds nothing to read again."""
    import time

    from vaultmem.store import files
    from vaultmem.write.batch import pending

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    monkeypatch.setattr(pending, "CREATE_MIN", 2)
    items = [{"text": f"Invoice INV-2026-{100 + i} for Acme is due on 2026-04-{10 + i}"} for i in range(6)]
    stamped = Vault.init(tmp_path / "stamped")
    before = time.time_ns()
    stamped.remember_many(items)
    rows = stamped.index.select_notes("kind = 'memory'")
    assert len({row["mtime_ns"] for row in rows}) == 1 and before - 3_000_000_000 < rows[0]["mtime_ns"] < before
    others = [p for folder in ("episodes", "entities") for p in (stamped.root / folder).glob("*.md")]
    assert stamped.refresh().read <= len(others)  # the batch's notes are not even re-hashed (too new to trust)
    _create_keeping_the_clock.__module__, _create_keeping_the_clock.__qualname__ = "vaultmem.store.files", "create_files"
    monkeypatch.setattr(files, "create_files", _create_keeping_the_clock)  # the forked workers inherit it
    own = Vault.init(tmp_path / "own")
    own.remember_many(items)
    for vault in (stamped, own):
        rows = vault.index.select_notes("kind = 'memory'")
        assert len(rows) == 6
        assert all((row["mtime_ns"], row["size"]) == ((st := (vault.root / row["path"]).stat()).st_mtime_ns, st.st_size)
                   for row in rows)
        time.sleep(0.01)
        assert vault.refresh().parsed == 0


def _create_one_then_fill_the_disk(items, mtime_ns=None):
    """Stands in for files.create_files in the workers: the disk fills after the first note."""
    import errno

    from vaultmem.store.files import atomic_write

    atomic_write(items[0][0], items[0][1], durable=False, exclusive=True, mtime_ns=mtime_ns)
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_batch_whose_file_creation_fails_leaves_no_index_row_without_its_note(vault, monkeypatch):
    """The notes of a batch's last flush are indexed while a worker creates their files: if that
    fails, no row may remain for a note that was never written (a later remember would merge into it)."""
    import pytest

    from vaultmem.store import files
    from vaultmem.write.batch import pending

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    monkeypatch.setattr(pending, "CREATE_MIN", 1)
    _create_one_then_fill_the_disk.__module__, _create_one_then_fill_the_disk.__qualname__ = "vaultmem.store.files", "create_files"
    monkeypatch.setattr(files, "create_files", _create_one_then_fill_the_disk)  # the forked workers inherit it
    items = [{"text": f"Contract CT2024-{1000 + i} signed with Acme on 2026-03-0{i + 1}"} for i in range(3)]
    with pytest.raises(OSError, match="No space left"):
        vault.remember_many(items)
    rows = vault.index.select_notes("kind = 'memory'")
    assert len(rows) <= 1 and all((vault.root / row["path"]).is_file() for row in rows)
    again = vault.remember("Contract CT2024-1001 signed with Acme on 2026-03-02")  # no merge into a missing note
    assert (vault.root / again.path).is_file()
    monkeypatch.undo()
    assert {r.action for r in vault.remember_many(items)} <= {"created", "unchanged", "merged"}
    assert all((vault.root / row["path"]).is_file() for row in vault.index.select_notes("kind = 'memory'"))


def test_a_day_note_that_is_not_text_stops_the_batch_with_a_clear_error_and_loses_nothing(vault, monkeypatch):
    """The day note of a large batch's day is binary (a bad sync, a stray file): the batch says so,
    leaves that file as it was, and the notes it wrote are whole and indexed."""
    import pytest

    from vaultmem.write.batch import pending
    from vaultmem.errors import NoteFormatError

    monkeypatch.setattr(drafts, "PARALLEL_MIN", 1)
    monkeypatch.setattr("vaultmem.store.workers.worker_count", lambda: 2)
    monkeypatch.setattr(pending, "CREATE_MIN", 1)
    day = vault.root / "episodes" / "2026-11-02.md"
    day.parent.mkdir(parents=True, exist_ok=True)
    day.write_bytes(b"\xff\xfe\x00binary")
    items = [{"text": f"Ticket OPS-{i} closed", "timestamp": f"2026-11-02T10:0{i}:00+00:00"} for i in range(3)]
    with pytest.raises(NoteFormatError, match="not a UTF-8 text note"):
        vault.remember_many(items)
    assert day.read_bytes() == b"\xff\xfe\x00binary"
    rows = vault.index.select_notes("kind = 'memory'")
    assert len(rows) == 3 and all((vault.root / row["path"]).is_file() for row in rows)
