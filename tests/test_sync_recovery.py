"""Issue 16: a sync that dies half-way is explained by `git status` and finished by the next sync.

A kill -9 of the whole `vaultmem sync` (and the git and merge driver under it) while git merges; a
merge git could not finish by itself (a note deleted on one machine and changed on the other, or
merged line by line in a clone without the driver); a stale `index.lock` left by a killed git."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vaultmem import Vault


def _git_version() -> tuple[int, ...]:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True)
    digits = done.stdout.split()[2].split(".")[:2] if done.returncode == 0 else ["0"]
    return tuple(int(d) for d in digits if d.isdigit())


# the kill points are git's reference-transaction hook, which git runs from 2.28 on
pytestmark = pytest.mark.skipif(_git_version() < (2, 28), reason="needs git 2.28 or later")
MARKERS = ("<<<<<<<", ">>>>>>>")


def git(where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=check)


def vm(*args: str, device: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VAULTMEM_DEVICE_ID": device, "NO_COLOR": "1"})


def two_clones(tmp_path: Path, notes: int = 1) -> tuple[Path, Path, list[Path]]:
    """A laptop and a desk sharing `notes` memories through a bare repository, both set up for sync."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    laptop, desk = tmp_path / "laptop", tmp_path / "desk"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    for n in range(notes):
        vm("remember", f"Server {n} is backed up nightly", "--tag", "ops", "--vault", str(laptop), device="laptop-1")
    assert vm("sync", "--vault", str(laptop), device="laptop-1").returncode == 0
    subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0
    return laptop, desk, sorted((laptop / "memories").glob("*.md"))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def adjacent_edits(laptop: Path, desk: Path, notes: list[Path]) -> None:
    """Every note: the desk adds a tag and pushes; the laptop adds a body line (both must survive)."""
    for note in notes:
        edit(desk / note.relative_to(laptop), "tags: [ops]", "tags: [ops, backup]")
        with note.open("a", encoding="utf-8") as f:
            f.write("The laptop checked it on Monday.\n")
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0


def arm(laptop: Path, tmp_path: Path, kill_at: int) -> Path:
    """Git's reference-transaction hook, which runs at every ref update of a sync (its commit, the
    fetch, the merge, the push), counting its calls and at call `kill_at` killing the whole sync: the
    power cord pulled while git is at work. Returns the counter file."""
    count = tmp_path / "ref-updates"
    hook = laptop / ".git" / "hooks" / "reference-transaction"
    hook.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import os, signal, sys
        sys.stdin.read()
        calls = {str(count)!r}
        n = (int(open(calls).read()) if os.path.exists(calls) else 0) + 1
        open(calls, "w").write(str(n))
        if n == {kill_at}:
            os.killpg(os.getpgid(0), signal.SIGKILL)
        """), encoding="utf-8")
    hook.chmod(0o755)
    return count


def test_a_full_sync_updates_refs_at_the_points_the_kill_test_covers(tmp_path):
    laptop, desk, notes = two_clones(tmp_path, notes=3)
    adjacent_edits(laptop, desk, notes)
    count = arm(laptop, tmp_path, kill_at=0)
    assert vm("sync", "--vault", str(laptop), device="laptop-1").returncode == 0
    assert int(count.read_text()) == KILL_POINTS  # if git starts calling it more or less, widen the kill test


KILL_POINTS = 10  # commit, fetch, merge, push: prepared and committed each, and ORIG_HEAD


@pytest.mark.parametrize("kill_at", range(1, KILL_POINTS + 1))
def test_a_kill_9_during_sync_leaves_a_repository_git_status_explains_and_the_next_sync_finishes(tmp_path, kill_at):
    laptop, desk, notes = two_clones(tmp_path, notes=3)
    adjacent_edits(laptop, desk, notes)
    count = arm(laptop, tmp_path, kill_at)
    died = subprocess.run([sys.executable, "-m", "vaultmem", "sync", "--vault", str(laptop)], capture_output=True,
                          text=True, timeout=120, start_new_session=True,
                          env={**os.environ, "VAULTMEM_DEVICE_ID": "laptop-1"})
    assert died.returncode == -signal.SIGKILL and int(count.read_text()) == kill_at

    status = git(laptop, "status", check=False)
    assert status.returncode == 0, status.stderr  # git can say where the repository is
    (laptop / ".git" / "hooks" / "reference-transaction").unlink()  # the machine is back up
    done = vm("sync", "--vault", str(laptop), "--json", device="laptop-1")
    assert done.returncode == 0, done.stderr
    for note in notes:
        text = note.read_text(encoding="utf-8")
        assert "tags: [ops, backup]" in text and "The laptop checked it on Monday." in text
        assert not any(m in text for m in MARKERS)
    assert git(laptop, "status", "--porcelain").stdout == ""
    assert not (laptop / ".git" / "MERGE_HEAD").exists() and not (laptop / ".git" / "index.lock").exists()
    assert git(laptop, "rev-parse", "HEAD").stdout == git(laptop, "rev-parse", "@{u}").stdout  # pushed


def test_a_note_deleted_on_one_machine_and_changed_on_the_other_keeps_the_change(tmp_path):
    laptop, desk, [note] = two_clones(tmp_path)
    on_desk = desk / note.relative_to(laptop)
    on_desk.unlink()
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0
    with note.open("a", encoding="utf-8") as f:
        f.write("Restores were tested in November.\n")
    done = vm("sync", "--vault", str(laptop), "--json", device="laptop-1")
    assert done.returncode == 0, done.stderr
    rel = note.relative_to(laptop).as_posix()
    assert {"path": rel, "how": "kept the changed copy"} in json.loads(done.stdout)["settled"]
    assert "Restores were tested in November." in note.read_text(encoding="utf-8")
    assert git(laptop, "status", "--porcelain").stdout == ""
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0
    assert "Restores were tested in November." in on_desk.read_text(encoding="utf-8")  # back on the desk too


def test_a_line_merge_a_person_left_half_done_is_settled_by_the_drivers_rules(tmp_path):
    laptop, desk, [note] = two_clones(tmp_path)
    edit(desk / note.relative_to(laptop), "tags: [ops]", "tags: [ops, backup]")
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0
    edit(note, "tags: [ops]", "tags: [ops, weekly]")  # the same line on both: git alone conflicts
    git(laptop, "config", "--remove-section", "merge.vaultmem")  # a clone without the driver, pulled by hand
    who = ["-c", "user.name=t", "-c", "user.email=t@t"]
    git(laptop, *who, "commit", "-qam", "tag it weekly")
    pulled = git(laptop, *who, "pull", "--no-rebase", "-q", check=False)
    assert pulled.returncode != 0 and "<<<<<<<" in note.read_text(encoding="utf-8")  # git alone conflicts
    assert (laptop / ".git" / "MERGE_HEAD").exists()
    done = vm("sync", "--vault", str(laptop), "--json", device="laptop-1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["settled"] == [{"path": note.relative_to(laptop).as_posix(), "how": "merged"}]
    text = note.read_text(encoding="utf-8")
    tags = next(line for line in text.splitlines() if line.startswith("tags:"))
    assert {"ops", "weekly", "backup"} <= set(tags[6:].strip("[] ").split(", ")) and "<<<<<<<" not in text
    assert git(laptop, "status", "--porcelain").stdout == "" and not (laptop / ".git" / "MERGE_HEAD").exists()


def test_a_stale_index_lock_is_cleared_and_a_live_one_is_not(tmp_path):
    laptop, _desk, [note] = two_clones(tmp_path)
    lock = laptop / ".git" / "index.lock"
    with note.open("a", encoding="utf-8") as f:
        f.write("One more line.\n")
    with lock.open("w") as held:  # a git still at work holds it open: never taken from under it
        refused = vm("sync", "--vault", str(laptop), device="laptop-1")
        assert refused.returncode == 1 and "another git is at work" in refused.stderr and "Traceback" not in refused.stderr
        assert lock.exists() and not held.closed
    done = vm("sync", "--vault", str(laptop), "--json", device="laptop-1")  # now nobody has it: a killed git's
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cleared"] == [str(lock)] and not lock.exists()
    assert git(laptop, "status", "--porcelain").stdout == ""
