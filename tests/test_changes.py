"""The change feed (Vault.changes, issue 29): what changed since a cursor, a person's edits on disk as
well as vaultmem's writes, as far as the caller may see, never a change twice or one left out."""

from __future__ import annotations

import pytest

from vaultmem import Caller, Vault
from vaultmem.errors import InvalidValue
from vaultmem.store.index import feed

from .conftest import write_note


def _from_start(vault: Vault) -> str:
    """A cursor before every change of this vault's feed."""
    return vault.changes().cursor.rpartition(".")[0] + ".0"


def _memories(found) -> list[tuple[str, str, str]]:
    return [(c.action, c.origin, c.path) for c in found.changes if c.kind == "memory"]


def test_without_a_cursor_the_feed_starts_now_and_a_write_is_the_next_change(vault):
    start = vault.changes()
    assert (start.changes, start.more, start.reset) == ([], False, False)
    made = vault.remember("The deploy window is Tuesday 22:00", tags=["ops"])
    found = vault.changes(start.cursor)
    assert _memories(found) == [("created", "vaultmem", made.path)]
    assert found.changes[-1].cursor == found.cursor and not found.more
    assert [c.id for c in found.changes if c.kind == "memory"] == [made.id]
    assert vault.changes(found.cursor).changes == []  # asked again from where it ended: nothing twice


def test_a_persons_edit_delete_and_rename_on_disk_are_changes_from_the_disk(vault):
    made = vault.remember("The VPN gateway is vpn.example.com")
    other = vault.remember("Standups are at 10:00")
    start = vault.changes().cursor
    path = vault.root / made.path
    path.write_text(path.read_text(encoding="utf-8").replace("vpn.example", "vpn2.example"), encoding="utf-8")
    (vault.root / other.path).rename(vault.root / "memories" / "Standups by hand.md")
    write_note(vault, "memories/Typed in Obsidian.md", "---\ntype: fact\n---\nThe printer is on floor 3\n")
    vault.refresh()
    found = vault.changes(start)
    assert sorted(_memories(found)) == sorted([("changed", "disk", made.path), ("moved", "disk", "memories/Standups by hand.md"),
                                               ("created", "disk", "memories/Typed in Obsidian.md")])
    moved = next(c for c in found.changes if c.action == "moved")
    assert (moved.id, moved.moved_from) == (other.id, other.path)
    path.unlink()
    vault.refresh()
    assert _memories(vault.changes(found.cursor)) == [("removed", "disk", made.path)]


def test_forget_and_restore_are_moves_with_the_status_they_leave(vault):
    made = vault.remember("The old office was on Elm Street")
    start = vault.changes().cursor
    vault.forget(made.id, "moved out")
    archived = [c for c in vault.changes(start).changes if c.kind == "memory"]
    assert [(c.action, c.status, c.moved_from) for c in archived] == [("moved", "archived", made.path)]
    vault.restore(made.id)
    back = [c for c in vault.changes(archived[-1].cursor).changes if c.kind == "memory"]
    assert [(c.action, c.status, c.path) for c in back] == [("moved", "active", made.path)]


def test_a_long_feed_comes_in_pages_that_follow_each_other(vault):
    start = vault.changes().cursor
    vault.remember_many([{"text": f"Server {i} runs in rack {i * 7}"} for i in range(12)])
    seen, cursor = [], start
    while True:
        page = vault.changes(cursor, limit=5)
        assert len(page.changes) <= 5
        seen += [c.cursor for c in page.changes]
        cursor = page.cursor
        if not page.more:
            break
    assert seen == [c.cursor for c in vault.changes(start, limit=1000).changes]
    assert len(set(seen)) == len(seen) >= 12


def test_a_cursor_the_feed_cannot_follow_on_from_is_a_reset_with_a_cursor_to_follow(vault, monkeypatch):
    vault.remember("The lab's door code changes monthly")
    first = vault.changes(_from_start(vault))
    assert not first.reset and first.changes
    for stale in ("0badc0ffee00.3", first.cursor.rpartition(".")[0] + ".999999"):
        found = vault.changes(stale)
        assert found.reset and found.changes == [] and found.cursor == first.cursor
    vault.refresh(force=True)  # a full rebuild records nothing: every cursor before it is a reset
    after = vault.changes(first.cursor)
    assert after.reset
    assert vault.changes(after.cursor).reset is False
    monkeypatch.setattr(feed, "FEED_KEEP", 3)
    vault.remember_many([{"text": f"Printer {i} is on floor {i}"} for i in range(5)])
    assert vault.changes(after.cursor).reset  # older than the changes kept


@pytest.mark.parametrize("cursor", ["", "7", "abc.", "abc.x", "abc.-1", ".5"])
def test_a_malformed_cursor_or_limit_is_an_error(vault, cursor):
    with pytest.raises(InvalidValue, match="cursor"):
        vault.changes(cursor)


@pytest.mark.parametrize("limit", [0, 1001, True, 2.5])
def test_a_limit_out_of_range_is_an_error(vault, limit):
    with pytest.raises(InvalidValue, match="limit"):
        vault.changes(limit=limit)


def test_another_process_writes_are_in_the_feed(vault):
    start = vault.changes().cursor
    made = Vault(vault.root).remember("The build cache lives on the NAS")
    assert ("created", "vaultmem", made.path) in _memories(vault.changes(start))


def test_a_confined_caller_sees_only_its_namespaces_and_a_note_leaving_them_as_removed(vault):
    alice = vault.as_caller(Caller(namespace="alice"))
    start = vault.changes().cursor
    bobs = vault.remember("Bob's locker combination is 7731", namespace="bob")
    shared = vault.remember("The release train leaves on Thursdays")
    found = alice.changes(start)
    assert [c.id for c in found.changes if c.kind == "memory"] == [shared.id]
    assert found.cursor == vault.changes(start).cursor  # the same position: nothing of Bob's hidden in it
    path = vault.root / shared.path
    path.write_text(path.read_text(encoding="utf-8").replace("namespace: shared", "namespace: bob"), encoding="utf-8")
    bob_path = vault.root / bobs.path
    bob_path.write_text(bob_path.read_text(encoding="utf-8").replace("namespace: bob", "namespace: shared"),
                        encoding="utf-8")
    vault.refresh()
    later = {c.id: c for c in alice.changes(found.cursor).changes if c.kind == "memory"}
    assert (later[shared.id].action, later[shared.id].namespace, later[shared.id].status) == ("removed", "shared", "")
    assert (later[bobs.id].action, later[bobs.id].namespace) == ("created", "shared")
