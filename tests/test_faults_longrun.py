"""A long-lived process alternating remember and recall: each operation's work must not grow with
what the process wrote before (issue 12), and what it sees must stay what a fresh process sees."""

import datetime as dt
import time
from dataclasses import asdict

import numpy as np

import vaultmem.store.index.records as records_module
import vaultmem.store.index.snapshot as snapshot_module
from vaultmem import Vault
from vaultmem.settings import default_settings
from vaultmem.write.episodes import new_day_note, with_lines
from vaultmem.store.index.records import LINK_PREFIX, appended_record, build_record, decode_terms, link_key

TOPICS = ["invoice", "contract", "server", "deploy", "budget", "meeting", "ticket", "release"]
DEFAULTS = default_settings().defaults._replace(lifecycle="")
# one clock for both processes' recalls: with the wall clock, the second recall ran a few ms later and a
# score could round differently in its sixth decimal (seen once under load)
NOW = time.time() + 3600


def _turns(vault: Vault, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        vault.remember(f"Note {i}: the {TOPICS[i % len(TOPICS)]} number {i} is ready", tags=["bench"])
        vault.recall(TOPICS[i % len(TOPICS)], limit=5)


def _ranked(vault: Vault, query: str, **options) -> list[tuple[str, float]]:
    return [(h.id, round(h.final, 6)) for h in vault.recall(query, limit=20, record_access=False, now=NOW, **options)]


def test_a_recall_after_a_write_reads_only_the_rows_written_since(vault, monkeypatch):
    rows_read: list[int] = []
    load = snapshot_module._load_delta

    def counting(rows, *args):
        rows_read.append(len(rows))
        return load(rows, *args)

    monkeypatch.setattr(snapshot_module, "_load_delta", counting)
    _turns(vault, 30)
    # the new memory and the day note's new record (before: every delta row, 30 memories and more)
    assert rows_read[-1] <= 2, rows_read[-5:]


def test_a_remember_does_not_tokenise_the_whole_day_note_again(vault, monkeypatch):
    _turns(vault, 3)
    tokenised: list[str] = []
    terms = records_module.index_terms

    def counting(rec):
        tokenised.append(rec.kind)
        return terms(rec)

    monkeypatch.setattr(records_module, "index_terms", counting)
    _turns(vault, 10, start=3)
    assert "episode" not in tokenised


def test_what_a_long_lived_process_sees_is_what_a_fresh_one_sees(vault):
    _turns(vault, 40)
    fresh = Vault(vault.root)
    for query in TOPICS + ["ready 17", "note 3"]:
        assert _ranked(vault, query) == _ranked(fresh, query), query
        assert _ranked(vault, query, kinds=("episode",)) == _ranked(fresh, query, kinds=("episode",))
    kept, loaded = vault.index.snapshot(), fresh.index.snapshot()
    for column in ("live", "score", "ts", "doclen", "uses", "last_use"):
        assert np.array_equal(getattr(kept, column), getattr(loaded, column)), column
    day_link = LINK_PREFIX + " ".join(link_key(vault.recall("number 12", limit=1)[0].title).split())
    for term in ("invoic", day_link, "#bench"):
        assert len(loaded.postings(term)[0])
        assert [a.tolist() for a in kept.postings(term)] == [a.tolist() for a in loaded.postings(term)], term


def test_use_counts_carried_across_writes_are_the_ones_a_fresh_process_reads(vault):
    """After a write, a snapshot re-reads the uses of the new documents only (while no access event
    was folded): a merged note keeps its uses under its new document, a dropped one has none."""
    _turns(vault, 12)
    vault.refresh()  # folds the recalls' access events into use counts
    used = vault.recall("invoice", limit=5, record_access=False)
    assert any(vault.index.snapshot().uses > 0)
    # a new tag makes it a merge (a new doc); the same words and tags again would be unchanged
    assert vault.remember("Note 0: the invoice number 0 is ready.", tags=["bench", "paid"]).action == "merged"
    _turns(vault, 6, start=12)
    kept, loaded = vault.index.snapshot(), Vault(vault.root).index.snapshot()
    assert kept.access_version == loaded.access_version != ""
    assert np.array_equal(kept.uses, loaded.uses) and np.array_equal(kept.last_use, loaded.last_use)
    assert used and _ranked(vault, "invoice") == _ranked(Vault(vault.root), "invoice")


def test_the_day_notes_record_is_the_one_parsing_it_gives(vault):
    _turns(vault, 12)
    day = next(vault.folders["episodes"].glob("*.md"))
    parsed = vault.record_for(day)
    row = vault.index.select_notes("kind = 'episode'")[0]
    delta = dict(vault.index._conn().execute("SELECT n.path, d.terms FROM delta d JOIN notes n USING (doc)"))
    assert row["sha"] == parsed.sha and row["links"] == parsed.links and row["body"] == parsed.body
    assert decode_terms(delta[row["path"]]) == parsed.terms


def test_an_appended_record_equals_a_parsed_one_and_gives_way_to_tags_and_code():
    titles = ["Invoice INV-2024-1533 for $566,700", "张三的合同编号是 CT2024-0001", "What port does staging use?"]
    note = new_day_note(dt.date(2026, 12, 2), ["- 10:00 [[Start]] (source: user)"])
    like = build_record(note.encode(), "episodes/2026-12-02.md", "episode", "episodes", (1, 1), DEFAULTS, max_chars=None)
    for i, title in enumerate(titles * 2):
        content = with_lines(note, [f"- 11:0{i} [[{title}]] (source: agent)"])
        data = content.encode()
        got = appended_record(like, data, content[len(note):], (2, len(data)))
        assert got is not None
        assert asdict(got) == asdict(build_record(data, like.path, "episode", "episodes", (2, len(data)), DEFAULTS,
                                                   max_chars=None))
        note, like = content, got
    assert appended_record(like, b"", "- 12:00 [[X]] #tagged\n", (3, 3)) is None
    assert appended_record(like, b"", "- 12:00 `[[X]]`\n", (3, 3)) is None


def test_another_process_writes_compactions_and_rebuilds_are_seen(vault):
    _turns(vault, 5)
    other = Vault(vault.root)
    other.remember("The zebra crossing on Elm street is repainted", tags=["city"])
    assert [h.title for h in vault.recall("zebra")] == [h.title for h in other.recall("zebra")] != []
    other.index.compact()
    gone = next(vault.folders["memories"].glob("Note 2*.md"))
    gone.unlink()
    other.refresh()
    assert _ranked(vault, "invoice") == _ranked(other, "invoice")
    other.refresh(force=True)  # a rebuild may write a generation of the same number
    other.remember("A heron nests by the river", tags=["city"])
    assert _ranked(vault, "heron") == _ranked(Vault(vault.root), "heron") != []
    assert _ranked(vault, "number") == _ranked(Vault(vault.root), "number")
