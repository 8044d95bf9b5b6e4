"""The sidecar: incremental, rebuildable, versioned, tolerant of bad notes and of several processes."""

import multiprocessing
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultmem import Vault
from vaultmem.text import terms as text

from .conftest import write_note


def test_refresh_parses_only_what_changed(vault):
    for i in range(5):
        write_note(vault, f"memories/n{i}.md", f"---\nid: N{i}\n---\nnote number {i}\n")
    first = vault.refresh()
    assert (first.scanned, first.parsed, first.added) == (5, 5, 5)
    assert vault.refresh().parsed == 0  # (files this fresh are re-hashed, not re-parsed)
    write_note(vault, "memories/n1.md", "---\nid: N1\n---\nnote number one, edited\n")
    again = vault.refresh()
    assert (again.parsed, again.updated, again.added) == (1, 1, 0)
    assert vault.recall("edited")[0].id == "N1"


def test_a_touched_but_unchanged_note_is_confirmed_by_hash(vault):
    import os

    path = write_note(vault, "memories/t.md", "---\nid: T\n---\nsame text\n")
    vault.refresh()
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 60_000_000_000))  # e.g. a git checkout
    stats = vault.refresh()
    assert (stats.read, stats.parsed, stats.updated) == (1, 0, 0)
    assert vault.refresh().read == 0  # the new mtime was stored


def _age(vault, seconds: int = 600) -> None:
    """Move every note's mtime back, as a checkout or a copy that keeps times does: the stat comparison
    decides then, not the rule that re-hashes a file changed just before the last look."""
    import os

    for path in vault.root.rglob("*.md"):
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 1_000_000_000))


def test_a_refresh_of_unchanged_files_reads_nothing_and_still_sees_every_change(vault):
    import os

    for i in range(4):
        write_note(vault, f"memories/n{i}.md", f"---\nid: N{i}\n---\nplain note {i}\n")
    _age(vault)
    vault.refresh()
    assert vault.refresh().read == 0  # the scan is the last one's
    edited = write_note(vault, "memories/n0.md", "---\nid: N0\n---\nzebra note 0\n")  # in place, same size
    st = edited.stat()
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns - 300_000_000_000))
    assert (vault.refresh().updated, [h.id for h in vault.recall("zebra")]) == (1, ["N0"])
    (vault.root / "memories" / "n1.md").rename(vault.root / "memories" / "One.md")
    (vault.root / "memories" / "n2.md").unlink()
    write_note(vault, "memories/n4.md", "---\nid: N4\n---\nplain note 4\n")
    _age(vault, 100)
    stats = vault.refresh()
    assert (stats.parsed, stats.updated, stats.added, stats.removed) == (2, 0, 2, 2)
    assert vault.get("N1").path == "memories/One.md"


def test_a_note_written_by_vaultmem_then_deleted_by_hand_drops_out(vault):
    for i in range(3):
        write_note(vault, f"memories/n{i}.md", f"---\nid: N{i}\n---\nnote number {i}\n")
    _age(vault)
    vault.refresh()
    before = set(vault.root.rglob("*.md"))
    vault.remember("The staging host is st-04")  # its note and its day note
    for path in set(vault.root.rglob("*.md")) - before:
        path.unlink()  # the files on disk are again exactly those of the last refresh
    assert vault.refresh().removed == 2
    assert vault.recall("staging host") == []


def test_a_note_that_could_not_be_read_is_read_at_the_next_refresh(vault, monkeypatch):
    import builtins

    from vaultmem.store.index import records

    for i in range(3):
        write_note(vault, f"memories/n{i}.md", f"---\nid: N{i}\n---\nnote number {i}\n")
    _age(vault)

    def refuse(path, *args, **kwargs):
        if str(path).endswith("n1.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(records, "open", refuse, raising=False)
    assert vault.refresh().parsed == 2
    monkeypatch.undo()
    assert vault.refresh().parsed == 1
    assert vault.get("N1").path == "memories/n1.md"


def test_deleted_and_renamed_notes_drop_out(vault):
    a = write_note(vault, "memories/a.md", "---\nid: A\n---\napple pie recipe\n")
    b = write_note(vault, "memories/b.md", "---\nid: B\n---\nbanana bread recipe\n")
    vault.refresh()
    a.unlink()
    b.rename(vault.root / "memories" / "Banana.md")
    stats = vault.refresh()
    assert stats.removed == 2 and stats.added == 1
    assert [h.id for h in vault.recall("recipe")] == ["B"]
    assert vault.recall("recipe")[0].path == "memories/Banana.md"


def test_deleting_the_cache_loses_nothing(sample):
    sample.refresh()
    before = [(h.id, round(h.final, 6)) for h in sample.recall("合同编号", now=1.8e9, record_access=False)]
    sample.close()
    shutil.rmtree(sample.root / ".vaultmem" / "cache")
    fresh = Vault(sample.root)
    fresh.refresh()
    assert [(h.id, round(h.final, 6)) for h in fresh.recall("合同编号", now=1.8e9, record_access=False)] == before


def test_a_damaged_sidecar_is_rebuilt(sample):
    sample.refresh()
    sample.close()
    db = sample.root / ".vaultmem/cache/index.sqlite"
    for extra in db.parent.glob("index.sqlite-*"):
        extra.unlink()
    db.write_bytes(b"this is not a database" * 100)
    fresh = Vault(sample.root)
    fresh.refresh()
    assert fresh.recall("合同编号")


def test_a_tokenizer_change_rebuilds_automatically(vault, monkeypatch):
    write_note(vault, "memories/x.md", "---\nid: X\n---\nzebra crossing\n")
    vault.refresh()
    vault.close()
    monkeypatch.setattr(text, "TOKENIZER_VERSION", text.TOKENIZER_VERSION + 1)
    fresh = Vault(vault.root)
    assert fresh.index.count() == 0  # the old index was dropped …
    fresh.refresh()
    assert fresh.recall("zebra")[0].id == "X"  # … and rebuilt from the notes
    assert fresh.index.info()["tokenizer_version"] == text.TOKENIZER_VERSION


def test_broken_yaml_is_indexed_by_raw_text_flagged_and_never_rewritten(vault):
    raw = "---\nid: BROKEN\ntags: ops: network\n---\nThe router admin page is 192.168.1.1\n"
    path = write_note(vault, "memories/broken.md", raw)
    vault.refresh()
    hits = vault.recall("router admin page")
    assert hits and hits[0].path == "memories/broken.md"
    report = vault.doctor()
    assert report.unparsable[0]["path"] == "memories/broken.md"
    assert "line 3" in report.unparsable[0]["error"]
    assert path.read_text(encoding="utf-8") == raw


def test_a_binary_file_in_the_vault_is_reported_not_fatal(vault):
    (vault.root / "memories" / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    write_note(vault, "memories/ok.md", "---\nid: OK\n---\nstill works\n")
    vault.refresh()
    assert vault.recall("still works")[0].id == "OK"
    assert [u["path"] for u in vault.doctor().unparsable] == ["memories/photo.md"]


def test_the_delta_is_merged_into_a_new_generation(vault):
    vault.index.compact_min = 10
    vault.index.compact_ratio = 0.0
    gen0 = vault.index.info()["generation"]
    for i in range(25):
        vault.remember(f"distinct memory {i} about topic{i}")
    info = vault.index.info()
    assert info["generation"] > gen0
    assert info["delta"] <= 10
    assert len(vault.recall("distinct memory", limit=50)) == 25
    assert vault.recall("topic17")[0].content == "distinct memory 17 about topic17"


def test_a_long_lived_vault_sees_writes_from_another_process(vault):
    vault.recall("anything")  # load a snapshot
    other = Vault(vault.root)
    other.remember("written by the other process")
    assert vault.recall("other process")[0].content == "written by the other process"


def _writer(root: str, start: int) -> None:
    v = Vault(root)
    for i in range(start, start + 40):
        v.remember(f"parallel memory {i}")
        if i % 5 == 0:
            v.refresh()
        v.recall(f"parallel memory {i}")


def test_two_processes_writing_and_refreshing_at_once(vault):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(vault.root), s)) for s in (0, 1000)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    vault.refresh()
    assert vault.index.count("kind = 'memory'") == 80
    assert len(vault.recall("parallel memory", limit=100)) == 80


def test_threads_share_one_vault(vault):
    from concurrent.futures import ThreadPoolExecutor

    for i in range(20):
        vault.remember(f"thread topic {i}")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: vault.recall(f"thread topic {i}")[0].content, range(20)))
    assert results == [f"thread topic {i}" for i in range(20)]



def test_a_sidecar_from_an_older_schema_is_rebuilt(vault):
    import sqlite3

    write_note(vault, "memories/x.md", "---\nid: X\n---\nquokka sighting\n")
    vault.refresh()
    vault.close()
    db = sqlite3.connect(vault.root / ".vaultmem/cache/index.sqlite")
    db.execute("DROP TABLE notes")
    db.execute("CREATE TABLE notes(doc INTEGER PRIMARY KEY, path TEXT, meta_json TEXT)")  # an old layout
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    fresh = Vault(vault.root)
    fresh.refresh()
    assert fresh.recall("quokka")[0].id == "X"


def test_a_crash_before_the_new_generation_is_repaired_by_the_next_refresh(vault, monkeypatch):
    from vaultmem.store.index.index import Index

    vault.index.compact_min = 5
    for i in range(20):
        write_note(vault, f"memories/n{i}.md", f"---\nid: C{i}\n---\ncrash test note {i}\n")
    real = Index._switch

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies after the rows, before the generation

    monkeypatch.setattr(Index, "_switch", killed)
    with pytest.raises(KeyboardInterrupt):
        vault.refresh()
    monkeypatch.setattr(Index, "_switch", real)
    assert vault.refresh().compacted  # the flag left behind forces the generation to be built
    assert len(vault.recall("crash test note", limit=50)) == 20


def test_a_full_reindex_rebuilds_everything_and_keeps_answers(sample):
    before = [h.id for h in sample.recall("合同编号", now=1.8e9, record_access=False)]
    stats = sample.refresh(force=True)
    assert stats.read == stats.parsed == stats.scanned > 60
    assert [h.id for h in sample.recall("合同编号", now=1.8e9, record_access=False)] == before


def test_a_symlinked_note_is_never_read(vault, tmp_path):
    import os

    secret = tmp_path / "outside.md"
    secret.write_text("---\nid: SECRET\n---\nthe root password is hunter2\n", encoding="utf-8")
    os.symlink(secret, vault.root / "memories" / "innocent.md")
    vault.refresh()
    assert vault.recall("root password") == []


@pytest.mark.parametrize("by_descriptor", [True, False])
def test_a_walk_lists_notes_temps_and_folder_times_and_skips_links(vault, tmp_path, monkeypatch, by_descriptor):
    import os

    from vaultmem.store.index import scan

    if by_descriptor and not scan._BY_FD:
        pytest.skip("this system lists folders by path only")
    monkeypatch.setattr(scan, "_BY_FD", by_descriptor)  # False: as on Windows
    memories = vault.root / "memories"
    a = write_note(vault, "memories/a.md", "---\nid: A\n---\napple\n")
    b = write_note(vault, "memories/deep/er/b.md", "---\nid: B\n---\nbanana\n")
    write_note(vault, "memories/.hidden/c.md", "---\nid: C\n---\ncherry\n")
    (memories / "notes.txt").write_text("not a note", encoding="utf-8")
    (memories / ".a.md.123.00beef.1.tmp").write_bytes(b"")
    os.symlink(vault.root / "memories" / "a.md", memories / "link.md")
    os.symlink(tmp_path, memories / "outside")
    temps: list[str] = []
    folders: dict[str, int] = {}
    found = {path: (mtime, size) for path, mtime, size in scan.walk(str(memories), temps, folders)}
    assert found == {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in (a, b)}
    base = str(memories) + os.sep
    assert temps == [base + ".a.md.123.00beef.1.tmp"] and scan.is_temp_name(".a.md.123.00beef.1.tmp")
    assert folders == {str(f): f.stat().st_mtime_ns for f in (memories, memories / "deep", memories / "deep" / "er")}
    assert list(scan.walk(str(vault.root / "nowhere"), temps, folders)) == []


def test_a_large_first_index_parses_in_worker_processes(vault, monkeypatch):
    from vaultmem.store.index import index

    monkeypatch.setattr(index, "CHUNK", 8)  # 60 notes -> 8 chunks: enough to start the pool
    vault.index.compact_min = 10
    for i in range(60):
        write_note(vault, f"memories/sub{i % 3}/w{i}.md", f"---\nid: W{i}\ntags: [batch{i % 2}]\n---\nworker note {i}\n")
    stats = vault.refresh()
    assert (stats.parsed, stats.compacted) == (60, True)
    assert len(vault.recall(tags=["batch1"], limit=100)) == 30
    assert vault.recall("worker note 42")[0].id == "W42"


def test_merged_generations_answer_exactly_like_a_full_rebuild(vault, tmp_path):
    import random

    rng = random.Random(7)
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet 合同 编号 发票 客户".split()
    vault.index.compact_min = 6
    vault.index.compact_ratio = 0.0

    def body():
        return " ".join(rng.choice(words) for _ in range(6))

    for i in range(30):
        write_note(vault, f"memories/m{i}.md", f"---\nid: M{i}\ntags: [t{i % 4}]\n---\n{body()}\n")
    vault.refresh()
    for step in range(40):  # edits, deletions, additions and renames, each followed by a refresh
        i = rng.randrange(45)
        path = vault.root / "memories" / f"m{i}.md"
        action = rng.choice(["edit", "edit", "delete", "rename"])
        if not path.exists():
            write_note(vault, f"memories/m{i}.md", f"---\nid: M{i}\n---\n{body()}\n")
        elif action == "edit":
            write_note(vault, f"memories/m{i}.md", f"---\nid: M{i}\ntags: [t{step % 4}]\n---\n{body()}\n")
        elif action == "delete":
            path.unlink()
        else:
            path.rename(path.with_name(f"r{step}.md"))
        vault.refresh()
    assert vault.index.info()["generation"] > 2  # several merges happened

    def answers(v):
        # ties may come in another order (documents are numbered differently): compare as sets
        return [sorted((h.id, round(h.channels["lexical"], 5)) for h in v.recall(q, limit=50, record_access=False))
                for q in words + ["alpha bravo", "客户 合同"]] + [
                   sorted(h.id for h in v.recall(tags=[f"t{k}"], limit=50, record_access=False)) for k in range(4)]

    vault.index.compact()  # merge what is pending: dead notes still count in df until then
    incremental = answers(vault)
    vault.refresh(force=True)
    assert answers(vault) == incremental


_WORDS = ["deploy", "Friday", "客户张三", "合同", "CT2024-0876", "ERR_4031", "café", "ﬁle", "Ａｃｍｅ", "İstanbul",
          "e\u0301", "\u0301x", "#ops", "[[Acme]]", "?", "？", "the", "で", "한국어", "-", "_", "\t", " "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join),
       st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map("".join), max_size=4),
       st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map("".join), max_size=4),
       st.lists(st.sampled_from(["Acme", "客户张三", "Deploy Window", "ａｃｍｅ"]), max_size=3),
       st.lists(st.sampled_from(["Acme", "客户张三", "Old title 2", "x"]), max_size=3))
def test_a_merge_amends_the_terms_of_a_record_as_indexing_it_again_would(body, old_tags, new_tags, old_links,
                                                                         new_links):
    """A note a batch created and then merged into keeps its title, body and value: its terms are
    the drafted ones with the tags' and links' swapped, and must equal index_terms of the new record."""
    from vaultmem.store.index.records import Record, amended_terms, encode_terms, index_terms

    def record(tags, links):
        rec = Record("memories/x.md", "memory", "Deploy 客户 window", 0, 0, "", value="CT2024-0876", body=body,
                     tags=tags, links=links)
        rec.terms = index_terms(rec)
        return rec

    old, new = record(old_tags, old_links), record(new_tags, new_links)
    assert amended_terms(old, new) == new.terms
    old.terms = encode_terms(old.terms)  # as a draft carries them
    assert amended_terms(old, new) == new.terms


_TERM_TEXTS = st.text(st.characters(blacklist_characters="\t\n", blacklist_categories=("Cs",)), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(_TERM_TEXTS, st.integers(1, 70_000), max_size=8), max_size=6))
def test_the_postings_of_encoded_terms_are_those_of_the_counts(docs):
    """A batch hands the index each note's terms as one encode_terms string: its postings must be
    exactly those of the counts, term numbers given in order of first use."""
    from collections import Counter

    from vaultmem.store.index.records import decode_terms, encode_terms
    from vaultmem.store.index.snapshot import PostingsBuilder

    counted, encoded = PostingsBuilder(), PostingsBuilder()
    for terms in docs:
        assert decode_terms(encode_terms(Counter(terms))) == Counter(terms)
        counted.add(Counter(terms))
        encoded.add(encode_terms(Counter(terms)))
    numbers: dict[str, int] = {}
    expected = [(numbers.setdefault(t, len(numbers)), doc, tf) for doc, terms in enumerate(docs) for t, tf in terms.items()]
    for built in (counted, encoded):
        assert list(zip(built.term_ids, built.docs, built.tfs)) == expected
        assert dict(built.ids) == numbers and built.n_docs == len(docs)
