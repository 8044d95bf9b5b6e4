"""`vaultmem sync` (issue 16 item 1): two clones of one vault with their own device ids share their
memories through a bare repository on this machine; the first sync sets the vault up; a dry run
changes nothing; git missing or no repository is one sentence; doctor notices a clone without the driver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem import Vault


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True).stdout


def vm(*args: str, device: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VAULTMEM_DEVICE_ID": device, "NO_COLOR": "1", **(env or {})})


@pytest.fixture
def origin(tmp_path) -> Path:
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    return bare


def test_two_clones_share_their_memories_through_a_bare_repository(tmp_path, origin):
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    assert vm("remember", "The staging database is db-stage-2", "--vault", str(laptop), device="laptop-1").returncode == 0
    first = json.loads(vm("sync", "--vault", str(laptop), "--json", device="laptop-1").stdout)
    assert set(first["set_up"]) == {".gitattributes", ".gitignore", "merge.vaultmem.driver"}
    assert first["commit"].startswith("vaultmem sync from laptop-1: ") and first["pushed"]
    attributes = (laptop / ".gitattributes").read_text()
    assert "memories/**/*.md merge=vaultmem" in attributes and "*.md text eol=lf" in attributes
    assert "merge-driver %O %A %B %P" in git(laptop, "config", "merge.vaultmem.driver")
    assert "cache/" in (laptop / ".vaultmem" / ".gitignore").read_text()
    assert ".vaultmem/cache" not in git(laptop, "ls-files")

    desk = tmp_path / "desk"
    subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)
    doctor = json.loads(vm("doctor", "--vault", str(desk), "--json", device="desk-1").stdout)
    assert any("no vaultmem merge driver" in w for w in doctor["warnings"])  # git keeps drivers per clone
    hits = json.loads(vm("recall", "staging database", "--vault", str(desk), "--json", device="desk-1").stdout)
    assert [h["content"] for h in hits] == ["The staging database is db-stage-2"]
    vm("remember", "Deploys go out on Tuesdays at 22:00", "--vault", str(desk), device="desk-1")
    second = json.loads(vm("sync", "--vault", str(desk), "--json", device="desk-1").stdout)
    assert second["set_up"] == ["merge.vaultmem.driver"] and second["pulled"] and second["pushed"]
    assert not any("merge driver" in w for w in json.loads(
        vm("doctor", "--vault", str(desk), "--json", device="desk-1").stdout)["warnings"])

    back = json.loads(vm("sync", "--vault", str(laptop), "--json", device="laptop-1").stdout)
    assert back["pulled"]
    hits = json.loads(vm("recall", "deploys Tuesdays", "--vault", str(laptop), "--json", device="laptop-1").stdout)
    assert hits and hits[0]["content"] == "Deploys go out on Tuesdays at 22:00"
    devices = {p.name for p in (laptop / ".vaultmem" / "devices").iterdir()}
    assert {"laptop-1", "desk-1"} <= devices  # each device's own log, never one file written by two
    assert git(laptop, "status", "--porcelain")  # the recall's access events, until the next sync commits them
    vm("sync", "--vault", str(laptop), device="laptop-1")
    assert git(laptop, "status", "--porcelain") == ""


def test_sync_follows_an_upstream_named_unlike_the_local_branch_and_says_where_it_pushed(tmp_path, origin):
    """Issue 30 item 7: a clone on `master` whose upstream is the remote's `main` pulls from and pushes to
    main (git's own `push` refuses the mismatch), and says so; same names say the branch too."""
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    vm("remember", "The staging database is db-stage-2", "--vault", str(laptop), device="laptop-1")
    first = vm("sync", "--vault", str(laptop), device="laptop-1")
    assert first.returncode == 0 and first.stdout.splitlines()[-1] == "pushed to origin/main", first.stdout
    assert git(laptop, "rev-parse", "--abbrev-ref", "@{u}").strip() == "origin/main"  # the first push set it
    desk = tmp_path / "desk"
    subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)
    git(desk, "branch", "-m", "main", "master")  # the upstream stays the remote's main
    vm("remember", "Deploys go out on Tuesdays at 22:00", "--vault", str(desk), device="desk-1")
    done = vm("sync", "--vault", str(desk), device="desk-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "pulled from and pushed to origin/main (this clone's branch master)"
    assert git(origin, "for-each-ref", "--format=%(refname)") == "refs/heads/main\n"  # no second branch
    assert git(origin, "rev-parse", "main") == git(desk, "rev-parse", "HEAD")
    report = json.loads(vm("sync", "--vault", str(desk), "--json", device="desk-1").stdout)
    assert (report["branch"], report["pushed_to"], report["remote_branch"]) == ("master", "origin/main", "main")
    again = vm("sync", "--vault", str(laptop), device="laptop-1")
    assert again.stdout.splitlines()[-1] == "pulled from and pushed to origin/main"
    hits = json.loads(vm("recall", "deploys Tuesdays", "--vault", str(laptop), "--json", device="laptop-1").stdout)
    assert hits and hits[0]["content"] == "Deploys go out on Tuesdays at 22:00"


def test_sync_without_an_upstream_beside_a_remote_on_another_branch_stops_and_pushes_nothing(tmp_path, origin):
    """The case that used to push a new `master` beside the vault's `main` and print "pushed": it names
    both branches and the two ways out, and the remote keeps exactly the refs it had."""
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    vm("sync", "--vault", str(laptop), device="laptop-1")
    desk = tmp_path / "desk"
    Vault.init(desk)
    git(desk, "init", "-q", "-b", "master")
    git(desk, "remote", "add", "origin", str(origin))
    vm("remember", "The VPN gateway is vpn-eu-3", "--vault", str(desk), device="desk-1")
    refs = git(origin, "for-each-ref", "--format=%(refname) %(objectname)")
    stopped = vm("sync", "--vault", str(desk), device="desk-1")
    assert stopped.returncode == 1 and "Traceback" not in stopped.stderr and len(stopped.stderr.splitlines()) == 1
    said = stopped.stderr
    assert "branch master has no upstream" in said and "its default branch is main" in said, said
    assert "`git fetch origin && git branch -u origin/main`" in said and "`git push -u origin master`" in said
    assert git(origin, "for-each-ref", "--format=%(refname) %(objectname)") == refs
    as_json = vm("sync", "--vault", str(desk), "--json", device="desk-1")
    assert as_json.returncode == 1 and "origin/main" in json.loads(as_json.stderr)["error"]


def test_a_dry_run_changes_nothing_and_no_repository_is_one_sentence(tmp_path):
    vault = tmp_path / "v"
    Vault.init(vault)
    missing = vm("sync", "--vault", str(vault), device="d-1")
    assert missing.returncode == 1 and "not in a git repository" in missing.stderr and "Traceback" not in missing.stderr
    git(vault, "init", "-q")
    before = sorted(p.name for p in vault.iterdir())
    dry = json.loads(vm("sync", "--dry-run", "--vault", str(vault), "--json", device="d-1").stdout)
    assert dry["dry_run"] and ".gitattributes" in dry["set_up"] and dry["changes"]["other"] > 0
    assert sorted(p.name for p in vault.iterdir()) == before
    assert subprocess.run(["git", "-C", str(vault), "config", "--get", "merge.vaultmem.driver"]).returncode == 1
    local = json.loads(vm("sync", "--vault", str(vault), "--json", device="d-1").stdout)
    assert local["commit"] and not local["remote"] and "pushed" not in local
    assert (local["set_up"], local["changes"]) == (dry["set_up"], dry["changes"])


@pytest.mark.parametrize("inside", ["", "notes/agent-memory"])
def test_a_dry_run_counts_the_files_the_sync_then_commits(tmp_path, inside):
    """Issue 28 item 7: the dry run said 8 other files and the sync 10. It counted before the set-up it
    only named (.gitattributes, .gitignore), and the untracked files the new ignore lines then hide."""
    import shutil

    from .conftest import SAMPLE

    repo = tmp_path / "repo"
    vault = repo / inside
    shutil.copytree(SAMPLE, vault, ignore=shutil.ignore_patterns("cache", "devices"))
    git(repo, "init", "-q")
    for junk in (".obsidian/workspace.json", ".obsidian/cache/x", ".trash/old note.md", "projects/.trash/x.md"):
        (vault / junk).parent.mkdir(parents=True, exist_ok=True)
        (vault / junk).write_text("{}\n", encoding="utf-8")
    (vault / ".obsidian" / "app.json").write_text("{}\n", encoding="utf-8")  # kept: not per machine
    for server in ("jenkins-2", "buildkite-1"):  # the first sync sets the vault up, the second finds it so
        vm("remember", f"The build server is {server}", "--vault", str(vault), device="d-1")
        dry = json.loads(vm("sync", "--dry-run", "--vault", str(vault), "--json", device="d-1").stdout)
        done = json.loads(vm("sync", "--vault", str(vault), "--json", device="d-1").stdout)
        assert (dry["set_up"], dry["changes"]) == (done["set_up"], done["changes"])
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert ".obsidian/app.json" in git(repo, "ls-files") and ".trash" not in git(repo, "ls-files")


def test_without_git_sync_says_how_to_get_it(tmp_path):
    vault = tmp_path / "v"
    Vault.init(vault)
    done = vm("sync", "--vault", str(vault), device="d-1", env={"PATH": str(tmp_path / "empty")})
    assert done.returncode == 1 and "needs git" in done.stderr


def test_adjacent_property_edits_on_two_machines_merge_through_the_driver_without_markers(tmp_path, origin):
    """The everyday case git's line merge conflicts on: one machine raises `score`, the other adds a tag."""
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    vm("remember", "The staging database is db-stage-2", "--tag", "ops", "--vault", str(laptop), device="laptop-1")
    vm("sync", "--vault", str(laptop), device="laptop-1")
    desk = tmp_path / "desk"
    subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)
    vm("sync", "--vault", str(desk), device="desk-1")  # sets this clone's driver up
    [note] = [p for p in (laptop / "memories").glob("*.md")]
    rel = note.relative_to(laptop)
    text = note.read_text(encoding="utf-8")
    score_line = next(line for line in text.splitlines() if line.startswith("score:"))
    note.write_text(text.replace(score_line, "score: 9"), encoding="utf-8")
    theirs = desk / rel
    theirs.write_text(theirs.read_text(encoding="utf-8").replace("tags: [ops]", "tags: [ops, database]"),
                      encoding="utf-8")
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0
    done = vm("sync", "--vault", str(laptop), device="laptop-1")
    assert done.returncode == 0, done.stderr
    merged = note.read_text(encoding="utf-8")
    assert "score: 9" in merged and "tags: [ops, database]" in merged and "<<<<<<<" not in merged
    assert git(laptop, "status", "--porcelain") == ""


def test_feedback_given_on_one_machine_ranks_on_the_other_after_both_sync(tmp_path, origin):
    """Device logs travel with the vault and never conflict; ranking folds every device's events."""
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    vm("remember", "The build server runs the nightly jobs at two", "--vault", str(laptop),
       device="laptop-1")
    vm("remember", "The build server runs the nightly jobs at three", "--vault", str(laptop),
       device="laptop-1")
    vm("sync", "--vault", str(laptop), device="laptop-1")
    desk = tmp_path / "desk"
    subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)

    def order(where: Path, device: str) -> list[str]:
        hits = vm("recall", "build server nightly jobs", "--vault", str(where), "--json", device=device)
        return [h["title"] for h in json.loads(hits.stdout)]

    before = order(laptop, "laptop-1")
    assert order(desk, "desk-1") == before
    lower = before[1]
    for _ in range(3):
        assert vm("feedback", lower, "useful", "--vault", str(desk), device="desk-1").returncode == 0
    assert order(desk, "desk-1")[0] == lower
    vm("feedback", before[0], "useful", "--vault", str(laptop), device="laptop-1")  # both logs change at once
    assert vm("sync", "--vault", str(desk), device="desk-1").returncode == 0
    done = vm("sync", "--vault", str(laptop), "--json", device="laptop-1")
    assert done.returncode == 0 and "settled" not in json.loads(done.stdout)  # own logs: nothing to merge
    assert order(laptop, "laptop-1")[0] == lower  # three votes from the desk outweigh one here
    assert (laptop / ".vaultmem" / "devices" / "desk-1").is_dir()


def test_the_commit_message_counts_notes_created_merged_superseded_and_edited(tmp_path, origin):
    laptop = tmp_path / "laptop"
    Vault.init(laptop)
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    for text in ("The staging database is db-stage-2", "Deploys go out on Tuesdays", "Backups run at 03:00 UTC"):
        vm("remember", text, "--vault", str(laptop), device="laptop-1")
    first = json.loads(vm("sync", "--vault", str(laptop), "--json", device="laptop-1").stdout)
    assert first["committed"]["created"] == 3 and first["committed"]["edited"] == 0
    vm("remember", "The staging database is db-stage-2", "--tag", "ops", "--vault", str(laptop), device="laptop-1")
    vm("remember", "Backups run at 03:00 UTC", "--tag", "ops", "--vault", str(laptop), device="laptop-1")
    staging = next(p for p in (laptop / "memories").glob("*.md") if "staging" in p.name)
    vm("correct", staging.stem, "The staging database is db-stage-3", "--vault", str(laptop), device="laptop-1")
    deploys = next(p for p in (laptop / "memories").glob("*.md") if "Deploys" in p.name)
    deploys.write_text(deploys.read_text(encoding="utf-8") + "\nNot on holidays.\n", encoding="utf-8")
    second = json.loads(vm("sync", "--vault", str(laptop), "--json", device="laptop-1").stdout)
    assert second["committed"] == {"created": 1, "merged": 1, "superseded": 1, "edited": 1, "removed": 0}, second
    assert second["commit"] == ("vaultmem sync from laptop-1: 1 created, 1 merged, 1 superseded, 1 edited, "
                                "0 removed notes")
