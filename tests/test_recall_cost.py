"""What keeps a recall's cost to the posting lists it reads (issue 27): candidates placed in a reused
scratch array, filter masks kept per snapshot, the access line put together once, a reader's folder
check at most once a second, and no array as large as the vault allocated per query."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc

import numpy as np
import pytest

from vaultmem import Vault
from vaultmem.recall import candidates
from vaultmem.recall.candidates import Candidates, union
from vaultmem.store.events import append_accesses, append_events
from vaultmem.store.index import freshness as index_module

from .conftest import write_note


def _reference(docs: np.ndarray, postings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inside = np.flatnonzero(np.isin(postings, docs))
    return np.searchsorted(docs, postings[inside]), inside


@pytest.mark.parametrize("seed", range(6))
def test_candidates_place_posting_lists_as_a_set_lookup_would(seed):
    rng = np.random.default_rng(seed)
    size = 5000
    docs = np.unique(rng.integers(0, size, int(rng.integers(1, 400)))).astype(np.int64)
    lists = [np.unique(rng.integers(0, size, int(n))).astype(np.uint32) for n in (0, 1, 50, 3000, 4900)]
    with Candidates(docs, size) as found:
        for postings in lists:  # short lists go through the scratch array, long ones by binary search
            at, inside = found.within(postings)
            want_at, want_inside = _reference(docs, postings)
            assert at.tolist() == want_at.tolist() and inside.tolist() == want_inside.tolist()
        counts = found.count(lists)
    assert counts.tolist() == [sum(int(d in set(p.tolist())) for p in lists) for d in docs.tolist()]
    assert union(lists).tolist() == sorted(set().union(*(p.tolist() for p in lists)))


def test_the_scratch_array_is_left_empty_and_a_nested_placement_keeps_the_outer_one():
    outer, inner = np.array([1, 5, 9], dtype=np.int64), np.array([2, 5], dtype=np.int64)
    postings = np.arange(12, dtype=np.uint32)
    with Candidates(outer, 12) as a:
        with Candidates(inner, 12) as b:
            assert b.within(postings)[1].tolist() == [2, 5]
        assert a.within(postings)[1].tolist() == [1, 5, 9]
    assert (candidates._SCRATCH.places == -1).all()
    with pytest.raises(ZeroDivisionError), Candidates(outer, 12):
        raise ZeroDivisionError  # an error inside still empties it
    assert (candidates._SCRATCH.places == -1).all() and not candidates._SCRATCH.busy


def test_threads_place_their_candidates_apart():
    errors = []

    def work(offset: int) -> None:
        docs = np.arange(offset, 20000, 7, dtype=np.int64)
        postings = np.arange(0, 20000, dtype=np.uint32)
        for _ in range(200):
            with Candidates(docs, 20000) as found:
                if found.within(postings)[1].tolist() != docs.tolist():
                    errors.append(offset)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_access_lines_are_the_bytes_every_event_gets(tmp_path):
    ids = ["01JABC", 'a "quoted" id', "中文", "back\\slash"]
    for stamp in (1.8e9, 1765000000.123456, 1765000000, 0.5):
        append_events(tmp_path / "a", "events", ({"event": "access", "id": i, "ts": stamp} for i in ids), stamp)
        append_accesses(tmp_path / "b", ids, stamp)
    left, right = sorted((tmp_path / "a").iterdir()), sorted((tmp_path / "b").iterdir())
    assert [p.name for p in left] == [p.name for p in right]
    assert all(p.read_bytes() == q.read_bytes() for p, q in zip(left, right))


def test_a_reader_looks_at_the_folders_at_most_once_a_second(vault, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(index_module.time, "monotonic", lambda: clock[0])
    vault.remember("the first memory about the harbour", tags=["port"])
    assert [h.title for h in vault.recall("harbour")]
    write_note(vault, "memories/copied in.md", "---\nid: 01JCOPYCOPYCOPYCOPYCOPYCOPY\n---\nthe harbour crane copied in\n")
    clock[0] += index_module.READ_CHECK_S / 2
    assert "copied in" not in [h.title for h in vault.recall("crane")]  # within the bound: not looked again
    clock[0] += index_module.READ_CHECK_S
    assert "copied in" in [h.title for h in vault.recall("crane")]
    write_note(vault, "memories/second copy.md", "---\nid: 01JSECONDSECONDSECONDSECOND\n---\nanother crane note\n")
    vault.remember("a memory written right after the copy")  # a writer always looks, under the lock
    assert "second copy" in [h.title for h in vault.recall("crane")]


def test_a_filter_mask_is_made_once_per_snapshot(vault):
    for n in range(6):
        vault.remember(f"deploy note {n}", namespace="alice" if n % 2 else "bob")
    first = vault.recall("deploy", namespace="alice")
    snap = vault.index.snapshot()
    masks = dict(snap.memo["passing"])
    assert {h.namespace for h in first} == {"alice"} and len(first) == 3
    vault.recall("note", namespace="alice")
    assert snap.memo["passing"] == masks  # the same mask object served the second query


def _note(n: int, rare: bool) -> str:
    words = "common words every memory shares" + (" zanzibar" if rare else "")
    return f"---\nid: 01J{n:023d}\ntags: [bulk]\n---\n{words} number {n}\n"


def test_a_recall_allocates_no_array_as_large_as_the_vault(tmp_path):
    """With 20,000 notes and a word in three of them, a recall's peak of new memory stays far below one
    float32 per note (80 KB): the old code made several such arrays per query."""
    vault = Vault.init(tmp_path / "big")
    folder = vault.root / "memories" / "bulk"
    folder.mkdir(parents=True)
    for n in range(20000):
        (folder / f"n{n}.md").write_text(_note(n, rare=n % 7000 == 0), encoding="utf-8")
    vault.refresh()
    for _ in range(3):  # warm: snapshot, masks and memos made, modules imported
        vault.recall("zanzibar", record_access=False)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        hits = vault.recall("zanzibar", record_access=False)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(hits) == 3
    assert peak < 20000 * 4 // 2, f"a recall of 3 candidates peaked at {peak} bytes"


def test_tuning_the_allocator_can_be_turned_off(monkeypatch):
    calls = []
    monkeypatch.setattr(candidates, "_RECALLS", iter([1]))
    monkeypatch.setenv("VAULTMEM_TUNE_MALLOC", "0")
    monkeypatch.setattr("ctypes.CDLL", lambda *_: calls.append("loaded"))
    candidates.keep_heap()
    assert calls == []


def _edit_in_place(path, old: str, new: str) -> None:
    """Rewrite a note as an editor that saves in place does: same file, its folder's time unchanged."""
    folder_time = path.parent.stat().st_mtime_ns
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    assert path.parent.stat().st_mtime_ns == folder_time


def test_a_shown_note_saved_in_place_is_read_again_by_a_long_lived_process(vault):
    vault.remember("the deploy window is friday evening", tags=["ops"])
    first = vault.recall("deploy window")
    assert "friday" in first[0].content
    _edit_in_place(vault.root / first[0].path, "friday evening", "monday at dawn after the holiday")
    again = vault.recall("deploy window")  # no refresh: the hit's file is not as indexed
    assert [h.id for h in again] == [first[0].id]
    assert "monday at dawn" in again[0].content and "friday" not in again[0].content
    assert vault.recall("holiday")[0].id == first[0].id  # and it is indexed anew


def test_freshen_sweeps_while_cheap_and_else_at_most_every_sweep_every(vault):
    vault.remember("the harbour crane needs new cables")
    target = vault.remember("a note about the budget meeting")
    path = vault.root / target.path
    vault.refresh()  # a first sweep, whose cost freshen compares with the budget
    assert not vault.freshen().skipped  # cheap: this small vault is swept every time
    _edit_in_place(path, "budget meeting", "budget meeting and the zanzibar trip")
    vault.freshen()
    assert [h.id for h in vault.recall("zanzibar")] == [target.id]

    vault.configure("index", sweep_budget=0.0, sweep_every=3600.0)  # as on a vault too large to sweep
    _edit_in_place(path, "zanzibar trip", "kilimanjaro climb")
    vault.freshen()
    assert vault.recall("kilimanjaro") == []  # rewritten in place, not among the hits: waits for a sweep
    write_note(vault, "memories/copied.md", "---\nid: 01JCOPIEDCOPIEDCOPIEDCOPIED\n---\nkilimanjaro packing list\n")
    vault.freshen()  # created: its folder's time says so, and the refresh that follows reads both
    assert {h.title for h in vault.recall("kilimanjaro")} == {"copied", path.stem}
    _edit_in_place(path, "kilimanjaro climb", "serengeti safari")
    vault.freshen()
    assert vault.recall("serengeti") == []
    vault.configure("index", sweep_budget=0.0, sweep_every=0.0)  # the last sweep is old enough
    vault.freshen()
    assert [h.title for h in vault.recall("serengeti")] == [path.stem]


def test_a_snapshot_load_reads_the_delta_and_the_uses_without_a_pass_over_every_note(vault):
    from vaultmem.store.index.index import _ACCESS, _FEEDBACK, delta_since
    from vaultmem.store.index.snapshot import COLUMNS

    for n in range(5):
        vault.remember(f"memory number {n} about the quarry")
    vault.recall("quarry")
    conn = vault.index._conn()
    for sql, params in ((delta_since(COLUMNS), (0,)), (_ACCESS, ()), (_FEEDBACK, ())):
        plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        assert not plan[0].split()[1] in ("n", "notes"), plan  # the outer loop is the small table


def test_threads_sharing_one_vault_get_the_answers_one_thread_gets(vault):
    words = ["harbour", "crane", "budget", "meeting", "deploy", "window", "invoice", "travel"]
    for n in range(120):
        vault.remember(f"{words[n % 8]} {words[(n * 3) % 8]} note {n} " + " ".join(words[: n % 5]),
                       namespace="team" if n % 3 else None)
    queries = [f"{a} {b}" for a in words for b in words[:3]]
    expected = {q: [h.id for h in vault.recall(q, record_access=False)] for q in queries}
    wrong: list[str] = []

    def work(offset: int) -> None:
        for q in queries[offset:] + queries[:offset]:
            if [h.id for h in vault.recall(q, record_access=False)] != expected[q]:
                wrong.append(q)

    threads = [threading.Thread(target=work, args=(k * 5,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
