"""The watcher: scripted changes fed to its handling function (no observer, no sleeps), the heartbeat
that lets one-off reads skip their rescan, the inotify limit, and one run with the real observer."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from vaultmem.errors import WatchLimit
from vaultmem.store import heartbeat
from vaultmem.store.index import folderstate
from vaultmem.surfaces import console
from vaultmem.surfaces.cli import app
from vaultmem.sync import watch as watch_module
from vaultmem.sync.watch import Batch, Change, Watcher

from .conftest import write_note


def note(ident: str, body: str) -> str:
    return f"---\nid: {ident}\ntype: fact\n---\n{body}\n"


def ids_for(vault, query: str) -> list[str]:
    return [hit.id for hit in vault.recall(query, record_access=False)]


@pytest.fixture
def watched(vault):
    """A vault indexed once, and a watcher on it that is fed changes by hand."""
    vault.remember("The staging server is called kestrel-7")
    vault.refresh()
    return vault, Watcher(vault)


def test_an_atomic_save_temp_file_then_rename_is_one_update_of_the_note(watched):
    vault, watcher = watched
    temp = vault.root / "memories" / ".Zebra.md.tmp-editor"
    temp.write_text(note("01ZEBRA0000000000000000001", "The zebra crossing code is ZX-4411"), encoding="utf-8")
    final = vault.root / "memories" / "Zebra.md"
    os.replace(temp, final)
    update = watcher.handle([Change("created", str(temp)), Change("modified", str(temp)),
                             Change("moved", str(temp), str(final))])
    assert update.paths == ["memories/Zebra.md"] and update.stats.added == 1
    assert ids_for(vault, "ZX-4411") == ["01ZEBRA0000000000000000001"]


def test_an_in_place_save_written_in_pieces_updates_the_note(watched):
    vault, watcher = watched
    path = write_note(vault, "memories/Plan.md", note("01PLAN00000000000000000001", "The plan is alpha"))
    watcher.handle([Change("created", str(path))])
    path.write_text(note("01PLAN00000000000000000001", "The plan is now bravo-unique"), encoding="utf-8")
    update = watcher.handle([Change("modified", str(path))] * 5 + [Change("closed", str(path))])
    assert update.paths == ["memories/Plan.md"] and update.stats.updated == 1
    assert ids_for(vault, "bravo-unique") == ["01PLAN00000000000000000001"]
    assert ids_for(vault, "alpha") == []


def test_a_rename_moves_the_row_and_keeps_the_id(watched):
    vault, watcher = watched
    old = write_note(vault, "memories/Old name.md", note("01RENAME000000000000000001", "Renamed note quokka"))
    watcher.handle([Change("created", str(old))])
    new = vault.root / "memories" / "New name.md"
    os.rename(old, new)
    update = watcher.handle([Change("moved", str(old), str(new))])
    assert (update.stats.added, update.stats.removed) == (1, 1)
    assert [row["path"] for row in vault.index.select_notes("id = ?", ("01RENAME000000000000000001",))] == \
        ["memories/New name.md"]


def test_a_delete_drops_the_note_from_recall(watched):
    vault, watcher = watched
    path = write_note(vault, "memories/Gone.md", note("01GONE00000000000000000001", "Ephemeral wombat"))
    watcher.handle([Change("created", str(path))])
    assert ids_for(vault, "wombat")
    path.unlink()
    update = watcher.handle([Change("deleted", str(path))])
    assert update.stats.removed == 1 and ids_for(vault, "wombat") == []


def test_a_folder_moved_inside_the_notes_moves_every_note_under_it(watched):
    vault, watcher = watched
    first = write_note(vault, "memories/trip/Day one.md", note("01TRIP00000000000000000001", "Lisbon tram 28"))
    write_note(vault, "memories/trip/Day two.md", note("01TRIP00000000000000000002", "Sintra palace"))
    watcher.handle([Change("created", str(first.parent), is_dir=True)])
    os.rename(vault.root / "memories" / "trip", vault.root / "memories" / "lisbon")
    update = watcher.handle([Change("moved", str(vault.root / "memories" / "trip"),
                                    str(vault.root / "memories" / "lisbon"), is_dir=True)])
    assert (update.stats.added, update.stats.removed) == (2, 2)
    paths = sorted(row["path"] for row in vault.index.select_notes("id LIKE '01TRIP%'"))
    assert paths == ["memories/lisbon/Day one.md", "memories/lisbon/Day two.md"]


def test_a_burst_of_saves_to_ten_notes_is_one_batch_of_ten_paths(watched):
    vault, watcher = watched
    changes = []
    for round_ in range(5):
        for i in range(10):
            path = write_note(vault, f"memories/Burst {i}.md", note(f"01BURST{i:019d}", f"burst {i} version {round_}"))
            changes += [Change("modified", str(path)), Change("closed", str(path))]
    update = watcher.handle(changes)
    assert len(update.paths) == 10 and update.stats.added == 10
    assert ids_for(vault, "version 4") and not vault.index.count("body LIKE '%version 3%'")


def test_the_batch_waits_for_a_pause_but_not_longer_than_longest(watched):
    vault, watcher = watched  # quiet 0.1 s, longest 0.5 s; the clock is given, nothing sleeps
    batch = Batch()
    path = str(vault.root / "memories" / "A.md")
    watcher.add(Change("modified", path), batch, now=10.0)
    assert not watcher.due(batch, 10.05) and watcher.due(batch, 10.11)
    for step in range(1, 10):  # a change every 60 ms: never a pause of 100 ms
        watcher.add(Change("modified", path), batch, now=10.0 + step * 0.06)
        assert watcher.due(batch, 10.0 + step * 0.06 + 0.01) == (step * 0.06 + 0.01 >= 0.5)
    assert watcher.wait(Batch(), 3.0, next_beat=3.7) == pytest.approx(0.7)


def test_a_pull_of_a_thousand_notes_is_one_refresh_of_its_paths(watched, monkeypatch):
    vault, watcher = watched
    git = vault.root / ".git" / "objects" / "ab"
    git.mkdir(parents=True)
    changes = [Change("created", str(vault.root / "memories" / "pulled"), is_dir=True)]
    for i in range(1000):
        path = write_note(vault, f"memories/pulled/Note {i:04d}.md",
                          note(f"01PULL{i:020d}", f"pulled memory number {i} about topic{i % 37}"))
        changes += [Change("created", str(path)), Change("modified", str(path)), Change("closed", str(path)),
                    Change("created", str(git / f"obj{i}"))]
    calls = []
    real = vault.index.refresh_paths
    monkeypatch.setattr(vault.index, "refresh_paths", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(vault.index, "refresh", lambda *a, **k: pytest.fail("a full rescan for a pull"))
    update = watcher.handle(changes)
    assert len(calls) == 1 and update.stats.added == 1000
    assert vault.index.count("path LIKE 'memories/pulled/%'") == 1000
    assert ids_for(vault, "pulled memory number 777")[0] == f"01PULL{777:020d}"


@pytest.mark.parametrize("rel", [".git/index", ".git/refs/heads/main.md", ".obsidian/workspace.json",
                                 ".vaultmem/cache/index.sqlite", ".vaultmem/devices/x/events.jsonl",
                                 "Person's own note.md", "projects/Plan.md", "templates/Memory.md",
                                 "memories/.obsidian/x.md", "memories/picture.png"])
def test_paths_outside_the_memory_folders_or_hidden_are_no_note(watched, rel):
    vault, watcher = watched
    path = write_note(vault, rel, note("01IGNORED00000000000000001", "should never be indexed"))
    before = vault.index.count()
    update = watcher.handle([Change("created", str(path)), Change("modified", str(path))])
    assert update is None or update.paths == []
    assert vault.index.count() == before and not vault.index.exists("id = '01IGNORED00000000000000001'")


def test_a_binary_or_broken_note_is_indexed_by_its_text_and_the_watcher_goes_on(watched):
    vault, watcher = watched
    binary = vault.root / "memories" / "Binary.md"
    binary.write_bytes(b"\x00\xff\xfe garbage \x89PNG\r\n\x1a\n" * 50)
    broken = write_note(vault, "memories/Broken.md", "---\nid: [unclosed\ntags: {\n---\nbroken frontmatter pangolin\n")
    update = watcher.handle([Change("created", str(binary)), Change("created", str(broken))])
    assert update.stats.added == 2
    assert vault.index.select_notes("path = 'memories/Broken.md'")[0]["error"]
    later = write_note(vault, "memories/Later.md", note("01LATER0000000000000000001", "after the garbage, an okapi"))
    assert watcher.handle([Change("created", str(later))]).stats.added == 1
    assert ids_for(vault, "okapi") == ["01LATER0000000000000000001"]


def test_a_failed_batch_is_reported_and_the_next_one_still_applies(watched, monkeypatch):
    vault, watcher = watched
    errors = []
    watcher.on_error = errors.append
    real = vault.index.refresh_paths

    def fails_once(*args, **kwargs):
        monkeypatch.setattr(vault.index, "refresh_paths", real)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(vault.index, "refresh_paths", fails_once)
    path = write_note(vault, "memories/Io.md", note("01IO000000000000000000001", "input output ibis"))
    assert watcher.handle([Change("created", str(path))]) is None and len(errors) == 1
    assert watcher.handle([Change("modified", str(path))]).stats.added == 1


def test_after_a_batch_a_writer_finds_no_folder_stale_and_does_not_rescan(watched):
    vault, watcher = watched
    temp = vault.root / "memories" / ".swap.tmp"
    temp.write_text("x")
    path = write_note(vault, "memories/Hand.md", note("01HAND00000000000000000001", "hand edit heron"))
    temp.unlink()
    assert not folderstate.unchanged(vault.index)
    watcher.handle([Change("created", str(temp)), Change("created", str(path)), Change("deleted", str(temp))])
    assert folderstate.unchanged(vault.index)
    assert vault.index.catch_up() is None  # a remember's catch-up: nothing to rescan


def test_a_one_off_remember_after_the_watchers_batch_does_not_rescan(watched, monkeypatch, capsys):
    from vaultmem.store.index.index import Index

    vault, watcher = watched
    path = write_note(vault, "memories/By hand.md", note("01BYHAND000000000000000001", "typed in Obsidian: ibex"))
    watcher.handle([Change("created", str(path))])
    monkeypatch.setattr(Index, "refresh", lambda *a, **k: pytest.fail("a rescan after the watcher's batch"))
    assert console.fast_remember(["The ibex note was typed by hand", "--vault", str(vault.root)]) == 0
    assert capsys.readouterr().out.startswith("created: ")


# -- the heartbeat -------------------------------------------------------------------------------
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_beat(cache, **fields) -> None:
    record = {"pid": os.getpid(), "host": os.uname().nodename, "beat": time.time(), "applied": None, **fields}
    (cache / heartbeat.FILE).write_text(json.dumps(record))


@pytest.mark.parametrize("fields, alive", [
    ({}, True),
    ({"beat": time.time() - 3600}, False),  # an old stamp
    ({"beat": time.time() + 3600}, False),  # from the future: a clock set back
    ({"host": "another-machine"}, False),  # a synced cache folder
    ({"pid": "123"}, False),
])
def test_a_heartbeat_is_live_only_when_fresh_from_a_live_process_on_this_host(vault, fields, alive):
    write_beat(vault.index.cache_dir, **fields)
    assert heartbeat.live(vault.index.cache_dir) is alive


def test_a_dead_pid_or_a_torn_file_is_no_heartbeat(vault):
    cache = vault.index.cache_dir
    write_beat(cache, pid=dead_pid())
    assert not heartbeat.live(cache)
    (cache / heartbeat.FILE).write_text('{"pid": 12')
    assert not heartbeat.live(cache)
    heartbeat.beat(cache)
    assert heartbeat.live(cache)
    heartbeat.clear(cache)
    assert not (cache / heartbeat.FILE).exists()


def test_a_one_off_recall_skips_its_rescan_while_a_watcher_is_live_and_scans_when_it_is_not(vault, capsys):
    vault.remember("An indexed memory about marmots")
    write_note(vault, "memories/Unseen.md", note("01UNSEEN000000000000000001", "hand written capybara"))
    argv = ["capybara", "--vault", str(vault.root), "--ids"]
    write_beat(vault.index.cache_dir)
    assert vault.refresh(wait=False).watched
    assert console.fast_recall(argv) == 0
    assert capsys.readouterr().out == ""  # the scan was skipped: only a watcher could have seen it
    write_beat(vault.index.cache_dir, pid=dead_pid())
    assert console.fast_recall(argv) == 0
    assert capsys.readouterr().out.split() == ["01UNSEEN000000000000000001"]


def test_a_live_heartbeat_never_skips_an_explicit_or_forced_refresh(vault):
    write_beat(vault.index.cache_dir)
    write_note(vault, "memories/Seen.md", note("01SEEN00000000000000000001", "seen by reindex"))
    assert vault.refresh().added == 1


# -- the inotify limit ---------------------------------------------------------------------------
class _FullObserver:
    """An observer as on a system out of inotify watches."""

    def schedule(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "inotify watch limit reached")


def test_the_inotify_limit_is_one_sentence_with_the_fix(vault, monkeypatch):
    import watchdog.observers

    monkeypatch.setattr(watchdog.observers, "Observer", _FullObserver)
    with pytest.raises(WatchLimit) as caught:
        vault.watch()
    assert "sudo sysctl fs.inotify.max_user_watches=524288" in str(caught.value)
    assert caught.value.setting == "fs.inotify.max_user_watches"
    result = CliRunner().invoke(app, ["watch", "--vault", str(vault.root)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "max_user_watches=524288" in result.output


# -- the real observer ---------------------------------------------------------------------------
def until(condition, timeout: float = 10.0):
    """Poll a condition until it holds; fail after the timeout (no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    pytest.fail(f"not within {timeout} s")


def test_with_the_real_observer_a_save_becomes_recallable_and_the_heartbeat_comes_and_goes(vault):
    updates = []
    with vault.watch(on_update=updates.append) as watcher:
        until(lambda: updates)  # the first full refresh
        assert watcher.running
        until(lambda: heartbeat.live(vault.index.cache_dir))
        temp = vault.root / "memories" / ".Real.md.tmp"
        temp.write_text(note("01REAL00000000000000000001", "observed narwhal"), encoding="utf-8")
        os.replace(temp, vault.root / "memories" / "Real.md")
        until(lambda: ids_for(vault, "narwhal"))
    assert not watcher.running and not (vault.index.cache_dir / heartbeat.FILE).exists()
    assert any(u.paths == ["memories/Real.md"] for u in updates)


def test_with_the_real_observer_a_note_folder_deleted_and_made_again_is_watched_again(vault):
    import shutil

    vault.remember("A memory that goes with its folder: axolotl")
    with vault.watch() as watcher:
        until(lambda: heartbeat.live(vault.index.cache_dir))
        shutil.rmtree(vault.root / "memories")
        until(lambda: not vault.index.count("path LIKE 'memories/%'"))
        (vault.root / "memories").mkdir()
        write_note(vault, "memories/Back.md", note("01BACK00000000000000000001", "the folder is back, with a tapir"))
        until(lambda: ids_for(vault, "tapir"))
        write_note(vault, "memories/Later.md", note("01BACK00000000000000000002", "saved into the new folder: a quail"))
        until(lambda: ids_for(vault, "quail"))  # only a watch on the new folder sees this one
        assert watcher.running


def test_a_watcher_stopped_from_its_own_callback_ends(vault):
    watcher = Watcher(vault, on_update=lambda update: watcher.stop())
    watcher.start()
    until(lambda: not watcher.running)
    assert not (vault.index.cache_dir / heartbeat.FILE).exists()


def test_when_the_kernel_drops_events_the_next_batch_is_a_full_refresh(vault):
    import logging

    updates = []
    with vault.watch(on_update=updates.append):
        until(lambda: updates)
        write_note(vault, "memories/Missed.md", note("01MISSED000000000000000001", "an event the queue lost: ocelot"))
        logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; filesystem events were lost")
        until(lambda: len([u for u in updates if u.full]) == 2)
        until(lambda: ids_for(vault, "ocelot"))


def test_vaultmem_watch_json_prints_one_line_per_update(vault):
    result = CliRunner().invoke(app, ["watch", "--vault", str(vault.root), "--json", "--stop-after", "0"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and lines[0]["full"] is True and set(lines[0]) == {"at", "paths", "full", "added", "updated",
                                                                      "removed", "ms"}


def test_the_watch_module_names_its_public_parts():
    assert set(watch_module.__all__) >= {"Watcher", "Change", "Batch", "Update", "sort_change", "apply_batch"}
