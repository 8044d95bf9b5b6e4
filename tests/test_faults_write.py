"""Fault injection on the write path: a person's save in place, a slowed fsync, a correction, a kill.

Each test is a reproduction from an adversarial run (issue 11) that lost a person's text or wrote a
memory twice before the fix.
"""

from __future__ import annotations

import os
import shutil

import pytest

import vaultmem.store.store as store_module
from vaultmem import Vault
from vaultmem.errors import VaultmemError, WriteConflict
from vaultmem.notes.note import parse_note

PERSON = "客户 [[张三]] 的合同编号是 CT2024-0876。\n\nA line the person added by hand.\nAnd another one.\n"


def _person_note(vault: Vault) -> tuple[str, bytes]:
    """A memory the index knows, then edited by a person: (its vault path, its bytes)."""
    result = vault.remember("客户张三的合同编号是 CT2024-0876", tags=["contract"], source="finance-bot")
    path = vault.root / result.path
    note = parse_note(path.read_bytes())
    edited = note.text[: len(note.text) - len(note.body)] + PERSON
    path.write_text(edited, encoding="utf-8")
    vault.refresh()
    return result.path, edited.encode("utf-8")


def _assert_person_text_kept(vault: Vault, rel: str) -> None:
    data = (vault.root / rel).read_bytes()
    note = parse_note(data)
    for line in PERSON.splitlines():
        assert line in note.body
    for key in ("id", "type", "value", "source", "tags"):
        assert note.meta.get(key), key
    assert note.meta["value"] == "CT2024-0876"


def _merge_over_the_save(vault: Vault, rel: str, landed: list, saved_line: str) -> None:
    """A merge while the injected save lands: it is made over the saved text, which keeps its line."""
    result = vault.remember("客户张三的合同编号是 CT2024-0876 again confirmed", tags=["billing"],
                            source="finance-bot", type="contract_id", value="CT2024-0876")
    assert landed, "the injected save never ran"
    assert result.action == "merged" and result.path == rel
    text = (vault.root / rel).read_text(encoding="utf-8")
    assert saved_line in text
    _assert_person_text_kept(vault, rel)
    assert "billing" in parse_note(text).meta["tags"]


def test_a_merge_waits_out_an_editor_saving_in_place(vault, monkeypatch):
    """The editor has truncated the note and writes it a moment later: the merge sees the whole note."""
    rel, saved = _person_note(vault)
    path = vault.root / rel
    path.write_bytes(b"")  # an in-place save: truncate, then write
    pauses = []

    def save_lands(seconds):
        pauses.append(seconds)
        if len(pauses) == 2:
            path.write_bytes(saved)

    monkeypatch.setattr(store_module, "_pause", save_lands, raising=False)
    result = vault.remember("客户张三的合同编号是 CT2024-0876", source="finance-bot")
    assert result.path == rel and result.action in ("merged", "unchanged")
    _assert_person_text_kept(vault, rel)


def test_a_note_read_empty_is_never_merged_into(vault, monkeypatch):
    """Still empty after the wait: not a note to merge into. Its bytes are left alone, the memory is kept."""
    rel, _ = _person_note(vault)
    path = vault.root / rel
    path.write_bytes(b"")
    monkeypatch.setattr(store_module, "_pause", lambda seconds: None, raising=False)
    result = vault.remember("客户张三的合同编号是 CT2024-0876", source="finance-bot")
    assert path.read_bytes() == b""  # never "merged" into a file of score, tags and version alone
    assert result.action == "created" and result.path != rel
    assert "CT2024-0876" in (vault.root / result.path).read_text(encoding="utf-8")


def test_a_note_without_its_frontmatter_is_never_merged_into(vault, monkeypatch):
    rel, _ = _person_note(vault)
    path = vault.root / rel
    half = "客户 [[张三]] 的合同编号是 CT2024-0876。\n"  # the body arrived, the properties not (yet)
    path.write_text(half, encoding="utf-8")
    monkeypatch.setattr(store_module, "_pause", lambda seconds: None, raising=False)
    result = vault.remember("客户张三的合同编号是 CT2024-0876", source="finance-bot")
    assert path.read_text(encoding="utf-8") == half
    assert result.path != rel


def test_a_note_saved_since_it_was_indexed_is_read_again_and_decided_on_anew(vault):
    """The index still has the old text; the person changed the number: no merge into the new text."""
    rel, _ = _person_note(vault)
    path = vault.root / rel
    text = path.read_text(encoding="utf-8").replace("CT2024-0876", "CT2024-0999")
    path.write_text(text, encoding="utf-8")  # no refresh: the index still knows CT2024-0876
    result = vault.remember("客户张三的合同编号是 CT2024-0876", source="finance-bot")
    # decided on the person's text: their number is the one replaced, their lines all kept
    assert result.action == "created" and result.path != rel
    after = parse_note((vault.root / rel).read_bytes())
    assert after.meta["value"] == "CT2024-0999" and after.meta["status"] == "superseded"
    assert after.body == parse_note(text).body


def test_a_save_landing_during_the_fsync_is_not_overwritten(vault, monkeypatch):
    """The conflict check runs again just before the rename: a save during a slow fsync wins, and the
    merge is made again over it."""
    rel, saved = _person_note(vault)
    path = vault.root / rel
    later = saved.decode("utf-8").replace("And another one.", "And another one.\nSaved during the fsync.")
    real_fsync = os.fsync
    landed = []

    def slow_fsync(fd):
        real_fsync(fd)
        if not landed and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(f".{path.name}."):
            landed.append(True)
            path.write_text(later, encoding="utf-8")  # Obsidian saves while our temp file is being synced

    monkeypatch.setattr(os, "fsync", slow_fsync)
    _merge_over_the_save(vault, rel, landed, "Saved during the fsync.")


def test_a_save_into_the_file_being_replaced_is_put_back_and_merged_over(vault, monkeypatch):
    """An editor opened the note before our rename and writes into it after our last check: its save
    lands in the file we replace. It is read back from that file, put back, and the merge made over it."""
    rel, saved = _person_note(vault)
    path = vault.root / rel
    later = saved.decode("utf-8").replace("And another one.", "And another one.\nSaved into the old file.")
    real_write = store_module.atomic_write
    landed = []

    def late_save(target, data, **kw):
        if landed or os.fspath(target) != os.fspath(path):
            return real_write(target, data, **kw)
        handle = open(path, "r+b")  # the editor holds the note open from before our rename
        try:
            st = real_write(target, data, **kw)
            handle.truncate(0)
            handle.write(later.encode("utf-8"))
            handle.flush()
            landed.append(True)
            return st
        finally:
            handle.close()

    monkeypatch.setattr(store_module, "atomic_write", late_save)
    _merge_over_the_save(vault, rel, landed, "Saved into the old file.")


@pytest.mark.parametrize("first, second", [
    ("Move the standup from 9 to 10 on Monday", "Move the standup from 10 to 9 on Monday"),
    ("Transfer 500 from account 6222 0001 to account 6222 0002",
     "Transfer 500 from account 6222 0002 to account 6222 0001"),
    ("The quarterly report goes from the Berlin office to the Paris office every Monday morning",
     "The quarterly report goes from the Paris office to the Berlin office every Monday morning"),
])
def test_a_correction_is_never_merged_away_as_a_restatement(vault, first, second):
    vault.remember(first)
    result = vault.remember(second)
    assert result.action == "created"
    bodies = [p.read_text(encoding="utf-8") for p in vault.folders["memories"].glob("*.md")]
    assert any(second in body for body in bodies)


def test_a_restatement_in_the_same_order_still_merges(vault):
    vault.remember("Move the standup from 9 to 10 on Monday")
    assert vault.remember("move the standup from 9 to 10 on monday!").action in ("merged", "unchanged")


def _notes(vault: Vault) -> list[str]:
    return sorted(p.name for p in vault.folders["memories"].glob("*.md"))


def test_a_remember_killed_before_its_index_update_is_not_written_twice(vault):
    """The note reached the disk, the index never heard of it (a kill): the retry finds it."""
    vault.remember("Deploy window is Tuesday 22:00", tags=["ops"])
    cache = vault.state / "cache"
    saved = vault.root.parent / "cache-before"
    vault.close()
    shutil.copytree(cache, saved)
    Vault(vault.root).remember("The staging database is db-staging-02", tags=["ops"])
    shutil.rmtree(cache)
    shutil.copytree(saved, cache)  # as if killed after the note's rename, before the index commit
    again = Vault(vault.root)
    result = again.remember("The staging database is db-staging-02", tags=["ops"])
    assert result.action == "unchanged"
    assert len(_notes(again)) == 2


def test_a_remember_that_fails_after_writing_its_note_says_so_and_the_retry_writes_nothing(vault, monkeypatch):
    """A full disk while the day note is written: the error names the note written; the retry finds it."""
    import vaultmem.write.batch.inflight as write_module

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_module, "append_episodes", disk_full)
    with pytest.raises(VaultmemError, match=r"No space left on device; already written: memories/.*\.md"):
        vault.remember("Invoice INV-2024-0042 is due on 2026-12-20")
    monkeypatch.undo()
    retry = Vault(vault.root).remember("Invoice INV-2024-0042 is due on 2026-12-20")
    assert retry.action == "unchanged"
    assert len(_notes(vault)) == 1


def test_a_cloned_vault_without_its_index_does_not_duplicate_a_known_fact(vault):
    vault.remember("Prefers concise answers", lifecycle="preference")
    vault.close()
    clone = vault.root.parent / "clone"
    shutil.copytree(vault.root, clone, ignore=shutil.ignore_patterns("cache"))
    copy = Vault(clone)
    assert copy.remember("Prefers concise answers", lifecycle="preference").action == "unchanged"
    assert len(_notes(copy)) == 1


def test_a_note_added_by_hand_since_the_last_look_is_seen_by_the_next_remember(vault):
    vault.remember("first memory of the day")
    note = vault.folders["memories"] / "Synced from the laptop.md"
    note.write_text("---\nid: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\ntype: fact\n---\nThe VPN gateway is vpn-eu-3.\n",
                    encoding="utf-8")
    result = vault.remember("The VPN gateway is vpn-eu-3.")
    assert result.action in ("unchanged", "merged") and result.path.endswith("Synced from the laptop.md")



_SYNCED = "---\nid: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\ntype: fact\n---\nThe VPN gateway is vpn-eu-3.\n"


def test_a_note_synced_into_another_folder_during_a_remember_is_seen_by_the_next(vault, monkeypatch):
    """A single remember stores the new times of the folders it wrote into only: a note git brings
    into inbox/ while it writes into memories/ keeps inbox/ stale, so the next remember rescans."""
    import vaultmem.write.pipeline as write_module

    vault.remember("first memory of the day")
    real = write_module.Writer.finish

    def finish_while_synced(self):
        (vault.folders["inbox"] / "Synced from the laptop.md").write_text(_SYNCED, encoding="utf-8")
        real(self)

    monkeypatch.setattr(write_module.Writer, "finish", finish_while_synced)
    vault.remember("second memory of the day")
    monkeypatch.undo()
    result = vault.remember("The VPN gateway is vpn-eu-3.")
    assert result.action in ("unchanged", "merged") and result.path.endswith("Synced from the laptop.md")


def test_a_note_synced_into_memories_during_a_batch_is_seen_by_the_next_remember(vault, monkeypatch):
    """A batch writes for seconds to minutes: it stores a folder's time only if the folder holds exactly
    what the index knows, so a note that arrived meanwhile beside the batch's own is not absorbed."""
    import vaultmem.write.pipeline as write_module

    real = write_module.Writer.finish

    def finish_while_synced(self):
        real(self)
        (vault.folders["memories"] / "Synced from the laptop.md").write_text(_SYNCED, encoding="utf-8")

    monkeypatch.setattr(write_module.Writer, "finish", finish_while_synced)
    vault.remember_many([{"text": "batch memory one"}, {"text": "batch memory two"}])
    monkeypatch.undo()
    result = vault.remember("The VPN gateway is vpn-eu-3.")
    assert result.action in ("unchanged", "merged") and result.path.endswith("Synced from the laptop.md")

_EDITOR = r"""
import os, sys, time
path, stop, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for n in range(rounds):
    if os.path.exists(stop):
        break
    with open(path, "rb") as handle:
        text = handle.read()
    if not text.startswith(b"---"):
        time.sleep(0.002)
        continue
    text = text.rstrip(b"\n") + b"\nperson line %d\n" % n
    with open(path, "r+b") as handle:  # a save in place: truncate, a moment, then the text
        handle.truncate(0)
        handle.flush()
        os.fsync(handle.fileno())
        time.sleep(0.001)
        handle.write(text)
    print(n, flush=True)
    time.sleep(0.02)  # Obsidian saves ~2 s after a keystroke: this is a fast typist's worst case
"""


def test_an_editor_saving_in_place_while_an_agent_merges_loses_no_line(vault, tmp_path):
    """Adversarial run: 59 of 60 merges destroyed the note, 436 of 584 person lines were lost."""
    import subprocess
    import sys

    rel, _ = _person_note(vault)
    path = vault.root / rel
    stop = tmp_path / "stop"
    editor = subprocess.Popen([sys.executable, "-c", _EDITOR, str(path), str(stop), "400"],
                              stdout=subprocess.PIPE, text=True)
    conflicts = 0
    try:
        import time

        started = time.monotonic()  # under load the editor's interpreter may start after 40 quick writes
        while b"person line" not in path.read_bytes() and time.monotonic() - started < 20:
            time.sleep(0.01)
        for n in range(40):
            try:
                vault.remember("客户张三的合同编号是 CT2024-0876", source="finance-bot", tags=[f"round{n % 3}"])
            except WriteConflict:  # it kept changing while decided on: an error that writes nothing is fine
                conflicts += 1
    finally:
        stop.write_text("")
        saved = [int(line) for line in editor.communicate(timeout=30)[0].split()]
    text = path.read_text(encoding="utf-8")
    lost = [n for n in saved if f"person line {n}\n" not in text]
    assert saved and not lost, f"{len(lost)} of {len(saved)} person lines lost"
    _assert_person_text_kept(vault, rel)
    assert conflicts < 10


def test_a_merge_into_a_note_whose_score_no_float_holds_still_merges(vault):
    """A hand-edited `score:` of 400 digits (OverflowError in float()) is the note's problem, not the merge's."""
    result = vault.remember("Invoice INV-2024-0042 is due on 2026-12-20")
    path = vault.root / result.path
    path.write_text(path.read_text(encoding="utf-8").replace("score: ", "score: " + "9" * 400 + "  # was "),
                    encoding="utf-8")
    vault.refresh()
    merged = vault.remember("The finance team pays invoice INV-2024-0042 by bank transfer")
    assert merged.action == "merged" and merged.path == result.path and 0 <= merged.score <= 10


def test_a_write_the_disk_refuses_names_the_note_not_its_hidden_temp_file(vault, monkeypatch):
    import errno

    real_open = os.open

    def read_only(path, flags, *args):
        if flags & os.O_CREAT and os.path.basename(os.fspath(path)).startswith("."):
            raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(OSError) as caught:
        vault.remember("The VPN gateway is vpn-eu-3")
    assert caught.value.errno == errno.EROFS
    assert caught.value.filename.endswith(".md") and ".tmp" not in caught.value.filename
