"""Encrypted notes (issue 30 item 5): a note or a namespace sealed by a passphrase (AES-256-GCM, scrypt), a
valid Markdown note on disk whose text is ciphertext; found by recall only with the passphrase; merged by
the git driver with it (and kept whole without it); rekeyed crash-safely. The planted-phrase grep checks
that no plaintext reaches the sidecar, the logs, the day notes, the change feed or git's objects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem import Vault
from vaultmem.errors import Locked, MissingExtra, SealBroken, VaultmemError, WrongPassphrase

from .conftest import snapshot_files

PHRASE = "zebra-mango-4471"  # planted in encrypted notes only
PASS, OTHER = "correct horse battery", "another passphrase"


@pytest.fixture
def private(vault) -> Vault:
    """A vault whose `private` namespace is encrypted, unlocked with PASS."""
    vault.unlock(PASS)
    vault.encrypt_namespace("private")  # config.yaml's encryption.namespaces: every Vault opened on it sees it
    return vault


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts)


def test_a_memory_written_into_an_encrypted_namespace_is_ciphertext_on_disk_and_opens_with_the_passphrase(private):
    made = private.remember(f"My locker code is {PHRASE}", namespace="private", tags=["locker"], entity=["Gym"])
    path = private.root / made.path
    text = path.read_text(encoding="utf-8")
    assert made.path == f"memories/Encrypted {made.id}.md" and PHRASE not in text and "locker" not in text
    assert text.startswith("---\nid: ") and "encrypted: aes-256-gcm/scrypt\n---\n> [!note] Encrypted memory" in text
    assert "```vaultmem-sealed\nkey: scrypt n=32768 r=8 p=1 salt=" in text and f"vaultmem show {made.id}" in text
    assert not (private.root / "entities" / "Gym.md").exists()  # an entity note's title would tell who it is about
    shown = private.get(made.id)
    assert shown.content.strip() == f"My locker code is {PHRASE}" and shown.tags == ["locker"]
    assert shown.title.startswith("My locker code") and shown.meta["namespace"] == "private"
    private.unlock(None)
    hidden = Vault(private.root).get(made.id)
    assert hidden.content == "" and hidden.type == "encrypted" and PHRASE not in json.dumps(hidden.to_dict(), default=str)


def test_encrypt_then_decrypt_gives_the_note_back_byte_for_byte_with_the_clear_changes_made_meanwhile(vault):
    made = vault.remember("The garage door code is 4477 and the gate opens at seven", tags=["home"])
    before = (vault.root / made.path).read_bytes()
    vault.unlock(PASS)
    sealed = vault.encrypt(made.id)
    assert sealed.notes == [{"id": made.id, "path": f"memories/Encrypted {made.id}.md"}]
    assert not (vault.root / made.path).exists() and b"garage" not in (vault.root / sealed.notes[0]["path"]).read_bytes()
    assert vault.encrypt(made.id).unchanged  # twice is once
    vault.pin(made.id)  # a clear property, changed without opening the note
    vault.unpin(made.id)
    back = vault.decrypt(made.id)
    assert back.notes[0]["path"] == made.path and (vault.root / made.path).read_bytes() == before


def test_without_the_passphrase_a_write_into_an_encrypted_namespace_is_refused_and_recall_does_not_find_it(private):
    made = private.remember(f"The vault door code is {PHRASE}", namespace="private")
    private.unlock(None)
    files = snapshot_files(private.root)
    with pytest.raises(Locked, match="VAULTMEM_PASSPHRASE"):
        private.remember("Another secret", namespace="private")
    with pytest.raises(Locked):
        private.remember_many([{"text": "shared one"}, {"text": "secret two", "namespace": "private"}])
    assert snapshot_files(private.root) == files  # nothing written, not even the shared item
    assert private.recall("vault door code", namespace="*") == []
    assert private.recall("", namespace="*") == []  # not even by strength alone
    private.unlock(PASS)
    hits = private.recall("vault door code", namespace="*", explain=True)
    assert [h.id for h in hits] == [made.id] and hits[0].content == f"The vault door code is {PHRASE}"
    assert hits[0].channels["encrypted"] == 1.0 and hits[0].channels["lexical"] == 1.0
    assert private.context("vault door code", namespace="*").text.count(PHRASE) == 1


def test_a_wrong_passphrase_is_a_clear_error_and_writes_nothing(private):
    made = private.remember(f"Locker {PHRASE}", namespace="private")
    other = Vault(private.root)
    other.unlock(OTHER)
    files = snapshot_files(private.root)
    with pytest.raises(WrongPassphrase, match="opens none of the vault's encrypted notes.*nothing was written"):
        other.remember("a second secret", namespace="private")
    with pytest.raises(WrongPassphrase, match="nothing was written"):
        other.decrypt(made.id)
    with pytest.raises(WrongPassphrase):
        other.get(made.id)
    with pytest.raises(WrongPassphrase):
        other.rekey("new one")
    assert snapshot_files(private.root) == files
    assert other.recall("Locker", namespace="*") == []  # a wrong passphrase finds nothing, and says nothing


def test_tampered_ciphertext_fails_authentication_naming_the_note(private):
    made = private.remember(f"Locker {PHRASE}", namespace="private")
    second = private.remember("Bike lock is 0042", namespace="private")
    path = private.root / made.path
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("seal: ")) + 1
    lines[at] = ("B" if lines[at][0] != "B" else "C") + lines[at][1:]
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(SealBroken, match=f"{made.path}.*fails authentication"):
        private.get(made.id)
    # a whole ciphertext moved into another note does not open there (the note id is authenticated)
    other = private.root / second.path
    block = text[text.index("```vaultmem-sealed"):]
    mine = other.read_text(encoding="utf-8")
    other.write_text(mine[:mine.index("```vaultmem-sealed")] + block, encoding="utf-8")
    with pytest.raises(SealBroken, match=second.path):
        private.decrypt(second.id)
    assert "```vaultmem-sealed" in other.read_text(encoding="utf-8")  # left as it is
    assert private.recall("Locker", namespace="*") == []  # passed over, not a crash


def test_doctor_lint_consolidate_dedup_export_and_stats_take_encrypted_notes_without_a_leak(private):
    for _ in range(3):
        private.remember(f"Had the {PHRASE} latte at the corner cafe", namespace="private")
    outputs = [private.doctor().to_dict(), private.doctor(strict=True).to_dict(), private.consolidate().to_dict(),
               list(private.export_records()), private.stats(), [m.to_dict() for m in private.list()],
               private.tag_counts()]
    shown = json.dumps(outputs, default=str)
    assert PHRASE not in shown and "latte" not in shown
    report = private.doctor(strict=True)
    assert not report.duplicate_memories and not report.secrets and not report.unparsable
    assert len(private.recall(f"{PHRASE} latte", namespace="*")) == 3  # three notes of their own: no merge


def test_the_core_never_imports_cryptography_and_a_missing_extra_says_which(private, monkeypatch):
    made = private.remember(f"Locker {PHRASE}", namespace="private")
    code = (f"import sys\nfrom vaultmem import Vault\nv = Vault({str(private.root)!r})\nv.recall('locker')\n"
            f"v.get({made.id!r})\nprint('cryptography' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "VAULTMEM_PASSPHRASE"})
    assert done.stdout.strip() == "False", done.stderr
    for name in [m for m in sys.modules if m == "cryptography" or m.startswith("cryptography.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cryptography", None)
    private.keyring.forget_writing_key()
    with pytest.raises(MissingExtra, match=r"vaultmem-md\[encrypt\]"):
        private.remember("another one", namespace="private")


def test_a_rekey_killed_half_way_leaves_every_note_readable_and_says_which_passphrase(private, monkeypatch):
    made = [private.remember(f"Secret {i} {PHRASE}", namespace="private") for i in range(3)]
    writes = []
    real = private.write_text

    def dies_after_one(path, content, **kwargs):
        if writes:
            raise KeyboardInterrupt  # the process killed between two notes
        writes.append(path)
        return real(path, content, **kwargs)

    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(private, "write_text", dies_after_one)
        private.rekey(OTHER)
    warning = "\n".join(Vault(private.root).doctor().warnings)
    assert "a rekey to key" in warning and "1 under key" in warning and "2 under key" in warning
    opened = 0
    for note in made:
        for passphrase in (PASS, OTHER):
            reader = Vault(private.root)
            reader.unlock(passphrase)
            try:
                opened += PHRASE in reader.get(note.id).content
            except WrongPassphrase:
                continue
    assert opened == 3  # each note opens with exactly one of the two
    again = Vault(private.root)
    again.unlock(PASS)
    done = again.rekey(OTHER)
    assert len(done.notes) == 2 and len(done.unchanged) == 1 and not Vault(private.root).doctor().warnings
    reader = Vault(private.root)
    reader.unlock(OTHER)
    assert {h.id for h in reader.recall("Secret", namespace="*")} == {n.id for n in made}


def test_encrypt_and_decrypt_a_namespace_set_its_new_memories_too(vault):
    vault.remember("Alpha plan is tuesday", namespace="ops")
    vault.unlock(PASS)
    done = vault.encrypt_namespace("ops")
    assert len(done.notes) == 1 and "namespaces: [ops]" in (vault.root / ".vaultmem" / "config.yaml").read_text()
    assert Vault(vault.root).settings.encryption.namespaces == ("ops",)
    later = vault.remember("Beta plan is friday", namespace="ops")
    assert later.path.startswith("memories/Encrypted ")
    back = vault.decrypt_namespace("ops")
    assert len(back.notes) == 2 and Vault(vault.root).settings.encryption.namespaces == ()
    assert {p.name for p in (vault.root / "memories").glob("*.md")} == {"Alpha plan is tuesday.md",
                                                                         "Beta plan is friday.md"}


# -- git: two machines, one encrypted note -----------------------------------------------------------------

def _git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True).stdout


def _vm(*args: str, device: str, passphrase: str | None = PASS) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_PASSPHRASE"}
    env.update({"VAULTMEM_DEVICE_ID": device, "NO_COLOR": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"})
    if passphrase is not None:
        env["VAULTMEM_PASSPHRASE"] = passphrase
    done = subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done


def _edit_sealed(root: Path, note_id: str, edit, device: str) -> None:
    """A person's edit of an encrypted note's text: decrypt, change the file, encrypt again."""
    path = json.loads(_vm("decrypt", note_id, "--vault", str(root), "--json", device=device).stdout)["notes"][0]["path"]
    target = root / path
    target.write_text(edit(target.read_text(encoding="utf-8")), encoding="utf-8")
    _vm("reindex", "--vault", str(root), device=device)
    _vm("encrypt", note_id, "--vault", str(root), device=device)


@pytest.fixture
def machines(tmp_path):
    """Two clones of one vault (laptop, desk) through a bare repository, sharing one encrypted note."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    _git(laptop, "init", "-q", "-b", "main")
    _git(laptop, "remote", "add", "origin", str(origin))
    (laptop / ".vaultmem" / "config.yaml").write_text("encryption:\n  namespaces: [private]\n", encoding="utf-8")
    made = json.loads(_vm("remember", f"The safe combination is {PHRASE}", "--namespace", "private", "--tag", "safe",
                          "--vault", str(laptop), "--json", device="laptop-1").stdout)
    _vm("sync", "--vault", str(laptop), device="laptop-1")
    desk = tmp_path / "desk"
    subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)
    _vm("sync", "--vault", str(desk), device="desk-1")  # sets up the merge driver in this clone
    return laptop, desk, made["id"]


def _open(root: Path, note_id: str, passphrase: str = PASS):
    reader = Vault(root)
    reader.unlock(passphrase)
    return reader.get(note_id)


def test_two_machines_editing_one_encrypted_note_merge_through_the_driver_with_the_passphrase(machines):
    laptop, desk, note_id = machines
    _edit_sealed(laptop, note_id, lambda t: t.replace(PHRASE, f"{PHRASE}, turn left twice"), "laptop-1")
    _vm("sync", "--vault", str(laptop), device="laptop-1")
    _edit_sealed(desk, note_id, lambda t: t.replace("tags: [safe]", "tags: [safe, office]"), "desk-1")
    _vm("sync", "--vault", str(desk), device="desk-1")  # pulls laptop's edit: the driver opens, merges, seals
    merged = _open(desk, note_id)
    assert merged.content.strip() == f"The safe combination is {PHRASE}, turn left twice"
    assert merged.tags == ["safe", "office"] and merged.status == "active"  # each side's edit, no conflict
    on_disk = (desk / f"memories/Encrypted {note_id}.md").read_text(encoding="utf-8")
    assert PHRASE not in on_disk and on_disk.count("```vaultmem-sealed") == 1 and "<<<<<<<" not in on_disk
    _vm("sync", "--vault", str(laptop), device="laptop-1")
    assert _open(laptop, note_id).content == merged.content


def test_without_the_passphrase_the_driver_keeps_both_versions_and_loses_nothing(machines):
    laptop, desk, note_id = machines
    _edit_sealed(laptop, note_id, lambda t: t.replace(PHRASE, f"{PHRASE}, turn left twice"), "laptop-1")
    _vm("sync", "--vault", str(laptop), device="laptop-1")
    _edit_sealed(desk, note_id, lambda t: t + "Kept in room 4.\n", "desk-1")
    _vm("sync", "--vault", str(desk), device="desk-1", passphrase=None)
    on_disk = (desk / f"memories/Encrypted {note_id}.md").read_text(encoding="utf-8")
    assert on_disk.count("```vaultmem-sealed") == 2 and "status: needs-verification" in on_disk
    both = _open(desk, note_id)
    assert f"{PHRASE}, turn left twice" in both.content and "Kept in room 4." in both.content
    assert "both machines changed this encrypted note" in both.content


def test_the_planted_phrase_is_nowhere_but_in_ciphertext(machines):
    laptop, desk, note_id = machines
    _edit_sealed(laptop, note_id, lambda t: t.replace(PHRASE, f"{PHRASE} and {PHRASE}"), "laptop-1")
    _vm("recall", PHRASE, "--vault", str(laptop), "--namespace", "*", device="laptop-1")  # access events
    _vm("feedback", note_id, "useful", "--vault", str(laptop), device="laptop-1")
    _vm("sync", "--vault", str(laptop), device="laptop-1")
    _vm("sync", "--vault", str(desk), device="desk-1")
    _vm("recall", PHRASE, "--vault", str(desk), "--namespace", "*", device="desk-1")
    hits = json.loads(_vm("recall", PHRASE, "--vault", str(desk), "--namespace", "*", "--json", device="desk-1").stdout)
    assert [h["id"] for h in hits] == [note_id]  # the phrase is there to find, with the passphrase
    planted = PHRASE.encode()
    for root in (laptop, desk):
        assert (root / ".vaultmem" / "cache" / "index.sqlite").exists()
        assert planted not in _all_bytes(root / ".vaultmem")  # sidecar (SQLite, WAL, generations), config, logs
        assert planted not in _all_bytes(root / "episodes") and planted not in _all_bytes(root / "memories")
        objects = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch"],
                                 capture_output=True, check=True).stdout  # every object, decompressed
        assert b"safe combination" not in objects and planted not in objects
        feed = Vault(root).changes(Vault(root).changes().cursor.rpartition(".")[0] + ".0", limit=1000)
        assert planted not in json.dumps([c.to_dict() for c in feed.changes], ensure_ascii=False).encode()


def test_an_index_whose_last_notes_are_encrypted_compacts_and_recalls(private):
    private.remember("The deploy window is Tuesday")
    sealed = [private.remember(f"Secret {i} {PHRASE}", namespace="private") for i in range(2)]
    private.index.compact()  # a generation whose last documents have no term at all
    private.remember("The staging host is st-04")
    private.index.compact()  # carried over: they must keep their place
    assert [h.content for h in private.recall("staging host")] == ["The staging host is st-04"]
    assert {h.id for h in private.recall(PHRASE, namespace="*")} == {n.id for n in sealed}


def test_the_driver_keeps_the_encrypted_note_when_the_other_side_emptied_the_file(private, monkeypatch):
    """One machine encrypted a note while another truncated it to nothing: the merge is the encrypted note, whole
    (this reached an `assert` before, which `python -O` drops and which crashed the driver otherwise)."""
    from vaultmem.sync.mergedriver import merge_notes
    from vaultmem.sync.sealedmerge import merge_sealed
    monkeypatch.delenv("VAULTMEM_PASSPHRASE", raising=False)
    note = private.remember(f"The safe combination is {PHRASE}", namespace="private")
    sealed = private.root.joinpath(note.path).read_bytes()
    base = sealed.replace(b"```vaultmem-sealed", b"```vaultmem-sealed ")  # any earlier version
    for ours, theirs in ((sealed, b""), (b"", sealed)):
        merged, clean = merge_sealed(base, ours, theirs, note.path, merge_notes)
        assert clean and merged == sealed


def test_an_export_carries_the_ciphertext_and_an_import_elsewhere_opens_with_the_passphrase(private, tmp_path):
    """export/import move an encrypted note as it is: no plaintext in the export file, found after import."""
    note = private.remember(f"The safe combination is {PHRASE}", namespace="private")
    dump = tmp_path / "export.jsonl"
    dump.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in private.export_records()),
                    encoding="utf-8")
    assert PHRASE.encode() not in dump.read_bytes() and b"safe combination" not in dump.read_bytes()
    elsewhere = Vault.init(tmp_path / "elsewhere")
    assert elsewhere.import_source(dump)["restored"] == 1
    assert elsewhere.root.joinpath(note.path).read_bytes() == private.root.joinpath(note.path).read_bytes()
    assert elsewhere.recall(PHRASE, namespace="*") == []  # locked: not found, nothing opened
    elsewhere.unlock(PASS)
    assert [h.id for h in elsewhere.recall(PHRASE, namespace="*")] == [note.id]


def test_a_hook_is_told_of_an_encrypted_note_by_its_id_and_file_name_only(private, tmp_path):
    from .test_hooks import events, recorder
    hook, out = recorder(private, tmp_path)
    with (private.state / "config.yaml").open("a", encoding="utf-8") as config:  # beside encryption.namespaces
        config.write(f"hooks:\n  timeout: 10\n  run:\n    - {hook}\n")
    opened = Vault(private.root)
    opened.unlock(PASS)
    opened.enable_hook("rec")
    note = opened.remember(f"The safe combination is {PHRASE}", namespace="private")
    assert opened.wait_for_hooks(20)
    assert note.path == f"memories/Encrypted {note.id}.md"  # sealed, as the namespace's config says
    told = events(out)
    assert [(ev["id"], ev["action"], ev["namespace"]) for ev in told] == [(note.id, "create", "private")]
    assert PHRASE not in out.read_text(encoding="utf-8") and "safe combination" not in out.read_text(encoding="utf-8")


def test_why_of_an_encrypted_note_without_the_passphrase_tells_its_story_but_never_its_text(private):
    made = private.remember(f"My locker code is {PHRASE}", namespace="private", tags=["locker"])
    git = ["git", "-C", str(private.root), "-c", "user.name=Ann", "-c", "user.email=ann@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "vault"], check=True)
    private.feedback(made.id, "useful")
    locked = Vault(private.root)
    story = locked.why(made.id)
    told = json.dumps(story.to_dict(), ensure_ascii=False, default=str)
    assert PHRASE not in told and "locker" not in told
    assert {"created", "feedback", "commit"} <= {e["kind"] for e in story.events}
    assert all("diff" not in e for e in story.events)  # a commit's body diff would be the text
    assert story.text.startswith("(encrypted")
    private.unlock(PASS)
    assert PHRASE in private.why(made.id).text
