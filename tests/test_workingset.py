"""The working set of long-lived processes: a hot LRU that answers first (issue 17 item 8)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from vaultmem import Vault
from vaultmem.errors import NoteNotFound
from vaultmem.recall.workingset import Entry, WorkingSet

from .conftest import write_note


def _entries(*ids: str) -> list[Entry]:
    return [Entry(i, f"memories/{i}.md", f"Title {i}") for i in ids]


# -- the LRU ----------------------------------------------------------------------------------------
def test_order_is_most_recent_first_and_promotion_moves_to_front():
    ws = WorkingSet(4)
    ws.promote(_entries("a", "b", "c"))
    assert ws.ids() == ["c", "b", "a"]
    ws.promote(_entries("a"))
    assert ws.ids() == ["a", "c", "b"]


def test_size_is_bounded_and_the_least_recent_leave():
    ws = WorkingSet(3)
    ws.promote(_entries("a", "b", "c"))
    ws.promote(_entries("a"))  # a is used again: b is now the least recent
    ws.promote(_entries("d", "e"))
    assert ws.ids() == ["e", "d", "a"] and len(ws) == 3 and ws.evicted == 2
    assert "b" not in ws and "c" not in ws


def test_demote_and_an_evicted_title_no_longer_answers(tmp_path):
    ws = WorkingSet(1)
    path = tmp_path / "memories" / "a.md"
    path.parent.mkdir()
    path.write_text("x", encoding="utf-8")
    st = path.stat()
    row = {"id": "a", "path": "memories/a.md", "title": "A", "mtime_ns": st.st_mtime_ns, "size": st.st_size}
    ws.remember_row(row)
    assert ws.lookup("a", str(tmp_path))["id"] == "a" and ws.lookup("a", str(tmp_path))["title"] == "A"
    ws.promote(_entries("b"))  # evicts a
    assert ws.lookup("A", str(tmp_path)) is None and ws.lookup("a", str(tmp_path)) is None
    ws.demote(["b"])
    assert len(ws) == 0
    with pytest.raises(ValueError):
        WorkingSet(0)


def test_docs_are_looked_up_once_and_dead_ones_demoted():
    ws = WorkingSet(8)
    ws.promote(_entries("a", "b", "gone"))
    asked: list[list[str]] = []

    def find(ids):
        asked.append(sorted(ids))
        return {"a": 2, "b": 5}

    live = np.ones(8, dtype=bool)
    assert ws.docs(live, find).tolist() == [2, 5]
    assert asked == [["a", "b", "gone"]] and "gone" not in ws
    assert ws.docs(live, find).tolist() == [2, 5] and len(asked) == 1  # known and live: no lookup
    live[5] = False  # b indexed again under another document
    assert ws.docs(live, lambda ids: {"b": 6}).tolist() == [2, 6]


def test_docs_stay_those_of_the_entries_through_promotions_evictions_and_demotions():
    """The known documents are kept as entries come and go (a recall no longer walks the set): after any
    sequence of promotions, evictions, demotions and re-indexing, docs() is what a walk over the
    entries would find."""
    import random

    rng = random.Random(7)
    ws = WorkingSet(16)
    doc_of = {f"n{i}": i for i in range(60)}  # the index: id -> document
    live = np.ones(200, dtype=bool)
    fresh = 59  # the last document given
    for step in range(400):
        action = rng.random()
        if action < 0.6:
            ws.promote(_entries(*rng.sample(sorted(doc_of), rng.randint(1, 4))))
        elif action < 0.75:
            ws.demote(rng.sample(sorted(doc_of), 2))
        elif action < 0.85:  # a note indexed again under a new document
            moved = rng.choice(sorted(doc_of))
            live[doc_of[moved]] = False
            doc_of[moved] = fresh = fresh + 1
        got = ws.docs(live, lambda ids: {i: doc_of[i] for i in ids if i in doc_of}).tolist()
        expected = sorted(doc_of[i] for i in ws.ids())
        assert got == expected, step
        assert len(ws) <= 16


def test_threads_writing_and_recalling_at_once(vault):
    ws = vault.use_working_set(64)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(15):
                vault.remember(f"thread {n} wrote oat milk order number {i} for lunch", source="hermes")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(30):
                for hit in vault.recall("oat milk order", record_access=False):
                    assert (vault.root / hit.path).exists()
                for note_id in ws.ids()[:5]:
                    vault.get(note_id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)] + \
              [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ws) <= 64 and len(set(ws.ids())) == len(ws)


# -- in the vault -----------------------------------------------------------------------------------
def test_a_cli_process_has_no_working_set_and_no_working_channel(vault):
    vault.remember("Ordered an oat milk latte", source="hermes")
    assert vault.working_set is None
    assert "working" not in vault.recall("oat milk", explain=True)[0].channels


def test_writes_and_recalls_promote(vault):
    ws = vault.use_working_set(8)
    first = vault.remember("Ordered an oat milk latte", source="hermes")
    second = vault.remember("Booked the tennis court", source="hermes")
    assert ws.ids() == [second.id, first.id]
    hits = vault.recall("oat milk")
    assert hits[0].id == first.id and ws.ids()[0] == first.id
    assert hits[0].channels["working"] == 1.0


def test_the_working_channel_lifts_a_hot_note_among_close_matches(tmp_path):
    root = tmp_path / "v"
    Vault.init(root)
    cold = Vault(root)
    a = cold.remember("Ordered an oat milk latte at the corner cafe", source="hermes", timestamp="2026-05-01T10:00:00+00:00")
    b = cold.remember("Ordered an oat milk cappuccino at the corner cafe", source="hermes",
                      timestamp="2026-05-01T10:00:00+00:00")
    first = cold.recall("oat milk corner cafe", record_access=False)[0].id
    other = a.id if first == b.id else b.id
    hot = Vault(root)
    hot.use_working_set()
    hot.get(other)  # this session used it
    assert hot.recall("oat milk corner cafe", record_access=False)[0].id == other
    assert cold.recall("oat milk corner cafe", record_access=False)[0].id == first  # ranking without it unchanged


def test_lookups_answer_from_the_set_but_never_a_dead_or_changed_note(vault):
    ws = vault.use_working_set()
    made = vault.remember("Ordered an oat milk latte", source="hermes")
    assert vault.get(made.id).title == made.title  # read once from the index: the row is kept
    assert ws.lookup(made.id, str(vault.root)) is not None
    path = vault.root / made.path
    text = path.read_text(encoding="utf-8")
    write_note(vault, made.path, text.replace("oat milk latte", "oat milk flat white"))
    assert ws.lookup(made.id, str(vault.root)) is None and made.id not in ws  # changed: not answered
    assert "flat white" in vault.get(made.id).content or "flat white" in vault.markdown(made.id)
    path.unlink()
    assert ws.lookup(made.id, str(vault.root)) is None and made.id not in ws
    with pytest.raises(NoteNotFound):
        vault.get(made.id)
    assert all(h.id != made.id for h in vault.recall("oat milk"))


def test_the_mcp_server_and_hermes_provider_keep_a_working_set(vault, tmp_path, monkeypatch):
    pytest.importorskip("mcp")
    from vaultmem.surfaces import mcp as surface

    surface.build_server(vault)
    assert vault.working_set is not None and vault.working_set.capacity == 2048
    from vaultmem.hermes import VaultmemProvider

    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    provider = VaultmemProvider()
    provider.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary")
    assert provider._vault.working_set is not None


def test_a_peek_promotes_nothing(vault):
    ws = vault.use_working_set(8)
    made = vault.remember("Ordered an oat milk latte", source="hermes")
    ws.demote([made.id])
    vault.recall("oat milk", record_access=False)
    assert made.id not in ws
    vault.recall("oat milk")
    assert ws.ids() == [made.id]
