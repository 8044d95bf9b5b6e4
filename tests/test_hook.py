"""The pre-commit hook (issue 16 item 4): `vaultmem hook install` makes git refuse a commit whose STAGED
notes hold conflict markers or a secret, or that deletes more notes than sync.max_deletions; another
tool's hook is kept (chained with --force), and vaultmem sync's own commit passes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem import Vault
from vaultmem.sync.hook import HOOK_MARK

from .conftest import write_note

IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]
NOTE = "---\nid: 01J00000000000000000000{n:03d}\ntype: fact\n---\nNote number {n}.\n"


def git(where: Path, *args: str, check: bool = True, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", **({"PATH": path} if path else {})}
    return subprocess.run([shutil.which("git"), "-C", str(where), *IDENTITY, *args], capture_output=True, text=True,
                          check=check, env=env)


def vm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture
def repo(vault) -> Vault:
    """A vault in a git repository with one commit of three notes and the hook installed."""
    git(vault.root, "init", "-q", "-b", "main")
    for n in range(3):
        write_note(vault, f"memories/Note {n}.md", NOTE.format(n=n))
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-q", "-m", "start")
    done = vm("hook", "install", "--vault", str(vault.root), "--json")
    assert done.returncode == 0, done.stderr
    return vault


def test_the_hook_names_this_interpreter_and_lets_a_clean_commit_through(repo):
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    text = hook.read_text(encoding="utf-8")
    assert HOOK_MARK in text and sys.executable in text and os.access(hook, os.X_OK)
    write_note(repo, "memories/Clean.md", NOTE.format(n=7))
    git(repo.root, "add", "-A")
    gui = os.path.dirname(shutil.which("git"))  # a GUI client's PATH: git's folder only, no vaultmem, no venv
    assert git(repo.root, "commit", "-q", "-m", "clean", path=gui).returncode == 0
    write_note(repo, "memories/Marked.md", NOTE.format(n=8) + "<<<<<<< a\nx\n=======\ny\n>>>>>>> b\n")
    git(repo.root, "add", "-A")
    assert git(repo.root, "commit", "-q", "-m", "m", check=False, path=gui).returncode == 1


def test_conflict_markers_in_a_staged_note_refuse_the_commit(repo):
    write_note(repo, "memories/Note 1.md", NOTE.format(n=1) + "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n")
    git(repo.root, "add", "-A")
    refused = git(repo.root, "commit", "-q", "-m", "markers", check=False)
    assert refused.returncode == 1 and "conflict markers in memories/Note 1.md" in refused.stdout + refused.stderr
    assert "vaultmem repair" in refused.stdout + refused.stderr
    # only what is staged counts: the clean text staged, the markers left in the work tree
    (repo.root / "memories/Note 1.md").write_text(NOTE.format(n=1) + "fixed\n", encoding="utf-8")
    git(repo.root, "add", "-A")
    (repo.root / "memories/Note 1.md").write_text(NOTE.format(n=1) + "<<<<<<< a\nx\n=======\ny\n>>>>>>> b\n")
    assert git(repo.root, "commit", "-q", "-m", "fixed").returncode == 0


def test_a_secret_in_a_staged_note_refuses_the_commit(repo):
    write_note(repo, "memories/Keys.md", NOTE.format(n=9) + "the deploy key is sk-" + "Zy9Qx7" * 7 + "\n")
    git(repo.root, "add", "-A")
    refused = git(repo.root, "commit", "-q", "-m", "secret", check=False)
    # git shows a hook's output on stderr
    assert refused.returncode == 1 and "secret (api_key) in memories/Keys.md" in refused.stderr
    report = json.loads(vm("hook", "run", "--vault", str(repo.root), "--json").stdout)
    assert report["secrets"] == [{"path": "memories/Keys.md", "kinds": ["api_key"]}] and not report["ok"]


def test_mass_deletions_are_refused_past_the_configured_limit_and_renames_are_none(repo):
    config = repo.state / "config.yaml"
    text = config.read_text(encoding="utf-8").replace("max_deletions: 50", "max_deletions: 2")
    config.write_text(text, encoding="utf-8")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "limit 2")
    for n in range(3):
        git(repo.root, "mv", f"memories/Note {n}.md", f"memories/Renamed {n}.md")
    assert git(repo.root, "commit", "-q", "-m", "renames").returncode == 0
    git(repo.root, "rm", "-q", "memories/Renamed 0.md", "memories/Renamed 1.md", "memories/Renamed 2.md")
    refused = git(repo.root, "commit", "-q", "-m", "wipe", check=False)
    assert refused.returncode == 1 and "3 notes deleted, more than sync.max_deletions (2)" in refused.stderr
    git(repo.root, "reset", "-q", "HEAD", "memories/Renamed 2.md")
    assert git(repo.root, "commit", "-q", "-m", "two").returncode == 0


def test_another_tools_hook_is_kept_chained_and_restored(vault):
    git(vault.root, "init", "-q", "-b", "main")
    hooks = vault.root / ".git" / "hooks"
    theirs = "#!/bin/sh\necho their-hook-ran\nexit 0\n"
    (hooks / "pre-commit").write_text(theirs)
    (hooks / "pre-commit").chmod(0o755)
    refused = vm("hook", "install", "--vault", str(vault.root))
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert (hooks / "pre-commit").read_text() == theirs
    assert vm("hook", "install", "--vault", str(vault.root), "--force").returncode == 0
    assert (hooks / "pre-commit.before-vaultmem").read_text() == theirs
    write_note(vault, "memories/A.md", NOTE.format(n=1))
    git(vault.root, "add", "-A")
    done = git(vault.root, "commit", "-q", "-m", "a")
    assert done.returncode == 0 and "their-hook-ran" in done.stderr
    (hooks / "pre-commit.before-vaultmem").write_text("#!/bin/sh\nexit 7\n")  # theirs refuses: so does git
    write_note(vault, "memories/B.md", NOTE.format(n=2))
    git(vault.root, "add", "-A")
    assert git(vault.root, "commit", "-q", "-m", "b", check=False).returncode == 1
    assert git(vault.root, "log", "--format=%s").stdout.split() == ["a"]
    assert json.loads(vm("hook", "install", "--vault", str(vault.root), "--json").stdout)["action"] == "updated"
    gone = json.loads(vm("hook", "uninstall", "--vault", str(vault.root), "--json").stdout)
    assert gone["action"] == "removed" and (hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 7\n"
    assert vm("hook", "uninstall", "--vault", str(vault.root)).returncode == 1  # not ours: left alone


def test_vaultmem_sync_commits_through_the_hook(repo):
    repo.remember("The staging database is db-stage-2")
    done = vm("sync", "--vault", str(repo.root), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commit"].startswith("vaultmem sync from ")
    assert git(repo.root, "status", "--porcelain").stdout == ""


def test_no_repository_is_one_sentence(vault):
    done = vm("hook", "install", "--vault", str(vault.root))
    assert done.returncode == 1 and "not in a git repository" in done.stderr
