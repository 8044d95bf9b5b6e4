"""Layout, path safety, atomic writes and id <-> path."""

import os
import re

import pytest
import yaml

from vaultmem import UnsafePath, Vault, VaultNotFound, WriteConflict
from vaultmem.config import defaults
from vaultmem.store.files import atomic_write
from vaultmem.notes.names import MAX_NAME_BYTES, new_ulid, safe_filename

from .conftest import write_note


def test_init_lays_out_the_vault(tmp_path):
    v = Vault.init(tmp_path / "v")
    for name in ("memories", "entities", "episodes", "inbox", "archive", "templates"):
        assert (v.root / name).is_dir()
    config = yaml.safe_load((v.root / ".vaultmem/config.yaml").read_text(encoding="utf-8"))
    assert config == defaults()  # every tunable is written with its default
    assert "cache/" in (v.root / ".vaultmem/.gitignore").read_text()
    assert {p.name for p in (v.root / "templates").iterdir()} >= {"memory.md", "entity.md", "episode.md"}


def test_init_twice_keeps_a_users_config(tmp_path):
    v = Vault.init(tmp_path / "v")
    cfg = v.root / ".vaultmem/config.yaml"
    cfg.write_text("defaults:\n  score: 7.0\n", encoding="utf-8")
    again = Vault.init(tmp_path / "v")
    assert again.settings.defaults.score == 7.0
    assert again.settings.defaults.lifecycle == "note"


def test_opening_a_folder_that_is_not_a_vault_says_how_to_fix_it(tmp_path):
    with pytest.raises(VaultNotFound, match="vaultmem init"):
        Vault(tmp_path)
    with pytest.raises(VaultNotFound, match="does not exist"):
        Vault(tmp_path / "nope")


def test_memory_root_cannot_escape_the_vault(tmp_path):
    v = Vault.init(tmp_path / "v")
    (v.root / ".vaultmem/config.yaml").write_text("memory_root: ../../elsewhere\n", encoding="utf-8")
    with pytest.raises(UnsafePath):
        Vault(v.root)


@pytest.mark.parametrize("title, expected", [
    ("../../etc/passwd", ".. .. etc passwd"),
    # look-alikes for what a file name cannot hold (issue 13 item 6); the path separators become spaces
    ('a*b"c<d>e:f|g?h#i^j[k]l\\m/n', "a\u2217b\u201dc\u2039d\u203ae\u2236f\u2223g\uff1fh\uff03i\u02c4j\u27e6k\u27e7l m n"),
    ("Deploy window is Tuesday 22:00", "Deploy window is Tuesday 22\u223600"),
    ("CON", "CON_"),
    ("nul.txt", "nul.txt_"),
    ("   ...   ", "memory"),
    (".hidden", "hidden"),
])
def test_safe_filename_sanitises(title, expected):
    assert safe_filename(title) == expected.strip(" .") or safe_filename(title) == expected


def test_safe_filename_never_leaves_path_separators_or_long_names():
    for title in ("../../etc/passwd", "a/b\\c", "客户" * 200, "x" * 1000):
        name = safe_filename(title)
        assert "/" not in name and "\\" not in name and not name.startswith(".")
        assert len(name.encode("utf-8")) <= MAX_NAME_BYTES


@pytest.mark.parametrize("ref", ["../../etc/passwd", "/etc/passwd", "memories/../../outside.md"])
def test_paths_outside_the_vault_are_refused(vault, ref):
    with pytest.raises(UnsafePath):
        vault.safe_path(ref)


def test_a_symlink_out_of_the_vault_is_refused(vault, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    os.symlink(outside, vault.root / "memories" / "link.md")
    with pytest.raises(UnsafePath):
        vault.safe_path("memories/link.md")


def test_atomic_write_leaves_no_temp_files_and_exclusive_never_clobbers(tmp_path):
    target = tmp_path / "note.md"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    with pytest.raises(FileExistsError):
        atomic_write(target, b"three", exclusive=True)
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]


def test_a_batch_write_never_clobbers_a_name_taken_meanwhile(tmp_path):
    target = tmp_path / "note.md"
    st = atomic_write(target, b"first", durable=False, exclusive=True)
    assert (st.st_size, st.st_mtime_ns) == (target.stat().st_size, target.stat().st_mtime_ns)
    with pytest.raises(FileExistsError):
        atomic_write(target, b"second", durable=False, exclusive=True)
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(FileExistsError):  # a link in the way is never followed
        atomic_write(tmp_path / "dangling.md", b"third", durable=False, exclusive=True)
    assert target.read_bytes() == b"first" and not (tmp_path / "nowhere.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.md", "note.md"]


@pytest.mark.parametrize("by_descriptor", [True, False])
def test_a_written_file_can_be_given_its_modification_time(tmp_path, monkeypatch, by_descriptor):
    """A batch gives its new notes the time their index rows were written with; where the OS cannot
    set times through an open descriptor (Windows), the temp file's path is used."""
    import os

    if not by_descriptor:
        monkeypatch.setattr(os, "supports_fd", set())
    when = 1_700_000_000_123_456_789
    st = atomic_write(tmp_path / "note.md", b"text", durable=False, exclusive=True, mtime_ns=when)
    assert st.st_mtime_ns == (tmp_path / "note.md").stat().st_mtime_ns
    assert abs(st.st_mtime_ns - when) < 1_000_000  # to the file system's resolution
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]


def test_write_refuses_a_note_changed_since_it_was_read(vault):
    result = vault.remember("The staging server is staging-02.")
    path = vault.root / result.path
    seen = vault.resolve(result.id)["sha"]
    edited = path.read_text(encoding="utf-8") + "\nA person added this line in Obsidian.\n"
    path.write_text(edited, encoding="utf-8")
    with pytest.raises(WriteConflict):
        vault.write_text(path, "overwrite", expected_sha=seen)
    assert path.read_text(encoding="utf-8") == edited


def test_ulids_are_26_crockford_chars_and_sort_by_time():
    a, b = new_ulid(1_700_000_000.0), new_ulid(1_800_000_000.0)
    assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", a)
    assert a < b
    assert len({new_ulid() for _ in range(1000)}) == 1000


def test_id_resolves_after_a_rename_and_a_move_in_obsidian(vault):
    result = vault.remember("Deploy window is Tuesday 22:00.")
    old = vault.root / result.path
    moved = vault.root / "memories" / "ops" / "Deploy window.md"
    moved.parent.mkdir()
    old.rename(moved)
    row = vault.resolve(result.id)
    assert row["path"] == "memories/ops/Deploy window.md"
    assert vault.get(result.id).content.strip() == "Deploy window is Tuesday 22:00."


def test_show_by_title_and_path(vault):
    write_note(vault, "memories/Coffee order.md", "---\nid: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\n---\nFlat white, no sugar.\n")
    assert vault.get("Coffee order").id == "01JDX3K8Q4W2M9ZC6T7B5N0H1A"
    assert vault.get("memories/Coffee order.md").title == "Coffee order"


def test_a_config_edit_is_seen_by_the_next_open(vault):
    assert Vault(vault.root).settings.ranking.limit == 10  # parsed, then cached
    cfg = vault.root / ".vaultmem/config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("  limit: 10", "  limit: 3"), encoding="utf-8")
    assert Vault(vault.root).settings.ranking.limit == 3
    cfg.write_text("ranking:\n  colour: blue\n", encoding="utf-8")
    from vaultmem import ConfigError

    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        Vault(vault.root)
