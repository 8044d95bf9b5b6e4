"""The git history cache (store/githistory.py, issue 30): built once, read incrementally when HEAD moves,
rebuilt whole when it is gone, corrupt or the history was rewritten; why follows a note vaultmem moved;
sync brings it up to date."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from vaultmem.store import githistory
from vaultmem.store.githistory import HISTORY_FILE, git_history


def _git(root, *args, when: float | None = None) -> str:
    dated = {} if when is None else {"GIT_AUTHOR_DATE": f"@{int(when)}", "GIT_COMMITTER_DATE": f"@{int(when)}"}
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=Ann Person", "-c", "user.email=ann@example.com",
                           *args], check=True, capture_output=True, text=True, env={**os.environ, **dated}).stdout


def _edit(vault, rel: str, line: str, message: str, when: float | None = None) -> None:
    path = vault.root / rel
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    _git(vault.root, "commit", "-qam", message, when=when)


@pytest.fixture
def committed(vault):
    """A vault in git with two memories, each committed, one of them edited by hand since."""
    _git(vault.root, "init", "-q", "-b", "main")
    one = vault.remember("The staging database is db-stage-2", tags=["ops"])
    two = vault.remember("Deploys go out on Tuesdays at 22:00", tags=["ops"])
    _git(vault.root, "add", "-A")
    _git(vault.root, "commit", "-qm", "two memories")
    _edit(vault, one.path, "Checked by hand.", "checked the staging database")
    vault.refresh()
    return vault, one, two


def _cache(vault):
    return vault.index.cache_dir / HISTORY_FILE


def _stored(vault) -> dict:
    """The file's first line: the HEAD it was built to and the commits."""
    return json.loads(_cache(vault).read_bytes().partition(b"\n")[0])


def _entries(history) -> dict[str, list[tuple]]:
    """Each path's changes by commit sha, so histories built in different steps compare equal."""
    return {path: [(c.sha, c.status, c.old, c.new) for c in history.changes([path])]
            for path in history.changed_after(-1)}


def _spy(monkeypatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []
    real = githistory.run_git

    def run(repo, *args, **kw):
        calls.append(args)
        return real(repo, *args, **kw)

    monkeypatch.setattr(githistory, "run_git", run)
    return calls


def _logs(calls) -> list[str]:
    return [args[-1] for args in calls if args[0] == "log"]


def test_built_once_then_only_the_new_commits_are_read(committed, monkeypatch):
    vault, one, two = committed
    calls = _spy(monkeypatch)
    story = vault.why(one.id)
    assert [e["what"].split(":")[0] for e in story.events if e["kind"] == "commit"] == ["first committed",
                                                                                       "changed in git"]
    old_head = _git(vault.root, "rev-parse", "HEAD").strip()
    assert _stored(vault)["head"] == old_head and _logs(calls) == [old_head]
    calls.clear()
    vault.why(one.id)
    assert _logs(calls) == []  # HEAD did not move: nothing read
    _edit(vault, two.path, "Moved to Wednesdays.", "deploys moved")
    new_head = _git(vault.root, "rev-parse", "HEAD").strip()
    told = vault.why(two.id)
    assert _logs(calls) == [f"{old_head}..{new_head}"]
    assert [e["what"] for e in told.events if e["kind"] == "commit"][-1] == "changed in git: deploys moved"
    assert _stored(vault)["head"] == new_head
    incremental = _entries(git_history(vault.root, vault.index.cache_dir))
    _cache(vault).unlink()
    assert _entries(git_history(vault.root, vault.index.cache_dir)) == incremental


@pytest.mark.parametrize("damage", [b"", b"{\"version\": 2, \"head\": ", b"[1, 2]", b"\xff\xfe not json", None])
def test_a_deleted_or_corrupt_cache_is_rebuilt(committed, monkeypatch, damage):
    vault, one, _ = committed
    whole = _entries(git_history(vault.root, vault.index.cache_dir))
    held = _cache(vault).read_bytes()
    _cache(vault).write_bytes(held[:-30] if damage is None else damage)  # None: cut short
    calls = _spy(monkeypatch)
    assert len([e for e in vault.why(one.id).events if e["kind"] == "commit"]) == 2
    assert _logs(calls) == [_git(vault.root, "rev-parse", "HEAD").strip()]  # the whole history, again
    assert _entries(git_history(vault.root, vault.index.cache_dir)) == whole
    _cache(vault).unlink()
    assert _entries(git_history(vault.root, vault.index.cache_dir)) == whole


def test_a_rewritten_history_is_read_whole(committed, monkeypatch):
    vault, one, _ = committed
    git_history(vault.root, vault.index.cache_dir)
    _git(vault.root, "commit", "-q", "--amend", "-m", "the staging database, checked")  # the old HEAD is gone
    calls = _spy(monkeypatch)
    story = vault.why(one.id)
    head = _git(vault.root, "rev-parse", "HEAD").strip()
    assert _logs(calls) == [head]
    assert [e["what"] for e in story.events if e["kind"] == "commit"][-1] == \
        "changed in git: the staging database, checked"
    _git(vault.root, "reset", "-q", "--hard", "HEAD~1")
    assert len([e for e in vault.why(one.id).events if e["kind"] == "commit"]) == 1


def test_a_note_vaultmem_moved_keeps_its_commits_from_before_the_move(committed):
    vault, one, _ = committed
    vault.forget(one.id, "the staging database was retired")
    _git(vault.root, "add", "-A")
    _git(vault.root, "commit", "-qm", "forgot the staging database")
    story = vault.why(one.id)
    whats = [e["what"] for e in story.events if e["kind"] == "commit"]
    assert whats == ["first committed: two memories", "changed in git: checked the staging database",
                     "moved in git: forgot the staging database"]
    assert story.path.startswith("archive/")


def test_as_of_takes_the_files_changed_after_the_moment_from_the_cache(committed):
    vault, one, two = committed
    later = time.time() + 3600
    _edit(vault, two.path, "Moved to Wednesdays.", "deploys moved", when=later)
    history = git_history(vault.root, vault.index.cache_dir)
    assert history.changed_after(later - 1) == {two.path} and history.changed_after(later) == set()
    assert {one.path, two.path} <= history.changed_after(0)
    hits = {h.id: h for h in vault.recall("deploys Tuesdays", limit=5, as_of=later - 1)}
    assert "Tuesdays" in hits[two.id].content and "Wednesdays" not in hits[two.id].content


def test_sync_brings_the_cache_up_to_date(committed, tmp_path):
    vault, _, two = committed
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    _git(vault.root, "remote", "add", "origin", str(origin))
    git_history(vault.root, vault.index.cache_dir)
    vault.remember("Releases are tagged on Fridays", tags=["ops"])
    vault.sync()
    head = _git(vault.root, "rev-parse", "HEAD").strip()
    kept = _stored(vault)
    assert kept["head"] == head and kept["commits"][-1][0] == head


def test_a_vault_in_a_folder_of_its_repository_keys_paths_from_the_vault_root(vault):
    _git(vault.root.parent, "init", "-q", "-b", "main")
    (vault.root.parent / "elsewhere.md").write_text("not the vault's\n", encoding="utf-8")
    made = vault.remember("The staging database is db-stage-2", tags=["ops"])
    _git(vault.root.parent, "add", "-A")
    _git(vault.root.parent, "commit", "-qm", "the vault in a folder")
    story = vault.why(made.id)
    assert [e["what"] for e in story.events if e["kind"] == "commit"] == ["first committed: the vault in a folder"]
    assert "elsewhere.md" not in git_history(vault.root, vault.index.cache_dir).changed_after(0)


def test_paths_that_hold_json_punctuation_keep_their_own_lines(vault):
    _git(vault.root, "init", "-q", "-b", "main")
    odd = ['memories/a",[[x.md', 'memories/b",[[x.md', 'memories/quote " and \\ slash.md']
    for rel in odd:
        (vault.root / rel).write_text("---\ntags: [x]\n---\nfirst\n", encoding="utf-8")
    _git(vault.root, "add", "-A")
    _git(vault.root, "commit", "-qm", "odd names")
    cache = vault.index.cache_dir
    git_history(vault.root, cache)
    for rel in odd:  # an incremental update rewrites each line by its own path
        _edit(vault, rel, "more", f"edit {rel}")
    history = git_history(vault.root, cache)
    assert {rel: len(history.entries(rel)) for rel in odd} == {rel: 2 for rel in odd}
