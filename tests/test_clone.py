"""A vault cloned or pulled through git, or with its cache deleted, behaves like the original (issue 13
item 2): the index is git-ignored, so the first remember, recall, confirm or entity add on the other side
must see every note the vault holds and write nothing twice."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vaultmem import Vault
from vaultmem.notes.note import parse_note

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd.parent)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def commit_all(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "sync")


def notes(vault: Vault) -> list[str]:
    return sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*.md")
                  if ".vaultmem" not in p.parts and "templates" not in p.parts and "episodes" not in p.parts)


@pytest.fixture
def origin(vault) -> Vault:
    """A vault in a git repository, with a preference, a contract on an entity known by an alias,
    and a candidate in the inbox."""
    vault.add_entity("张三", aliases=["老张"])
    vault.remember("Prefers concise answers", lifecycle="preference")
    vault.remember("张三的合同编号是 CT2024-0771")
    vault.remember("The office wifi password might change in May", candidate=True)
    git(vault.root, "init", "-q", "-b", "main")
    commit_all(vault.root)
    vault.close()
    return vault


def cloned(origin: Vault) -> Path:
    target = origin.root.parent / "clone"
    git(origin.root.parent, "clone", "-q", str(origin.root), str(target))
    return target


def clone_of(origin: Vault) -> Vault:
    return Vault(cloned(origin))


def test_the_index_is_not_committed_and_a_clone_starts_without_it(origin):
    tracked = git(origin.root, "ls-files").splitlines()
    assert not [p for p in tracked if p.startswith(".vaultmem/cache")]
    assert ".vaultmem/config.yaml" in tracked
    assert not (cloned(origin) / ".vaultmem" / "cache").exists()


def test_a_fresh_clone_writes_nothing_twice_and_merges_and_supersedes_the_original_notes(origin):
    clone = clone_of(origin)
    before = notes(clone)
    again = clone.remember("Prefers concise answers", lifecycle="preference")
    assert again.action == "unchanged" and again.path == "memories/Prefers concise answers.md"
    newer = clone.remember("张三的合同编号改为 CT2024-0876")
    old = parse_note((clone.root / "memories/张三的合同编号是 CT2024-0771.md").read_bytes())
    assert newer.action == "created" and newer.supersedes == old.meta["id"]
    assert old.meta["status"] == "superseded"
    assert clone.add_entity("老张") == ("unchanged", "entities/张三.md")
    assert notes(clone) == sorted([*before, newer.path])


def test_a_fresh_clone_confirms_and_recalls_the_notes_it_brought(origin):
    wifi = next(iter(origin.recall("wifi password", include=["candidate"])))  # ids are the same in a clone
    clone = clone_of(origin)
    assert [h.title for h in clone.recall("concise answers")] == ["Prefers concise answers"]
    confirmed = clone.confirm(wifi.id)
    assert confirmed.action == "confirmed" and confirmed.path.startswith("memories/")
    assert not list(clone.folders["inbox"].glob("*.md"))


def test_a_pull_that_brought_notes_is_seen_by_each_operation(origin, monkeypatch):
    # both sides would add lines to one day note: merging those is the sync merge driver's job, not this test's
    config = origin.state / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  episodes: true", "  episodes: false"),
                      encoding="utf-8")
    commit_all(origin.root)
    origin = Vault(origin.root)
    monkeypatch.setenv("VAULTMEM_DEVICE_ID", "laptop-0002")  # each device logs into its own folder
    clone = clone_of(origin)
    clone.remember("first memory on the second machine")  # the clone's index now exists
    commit_all(clone.root)

    def pulled(write) -> None:
        write(origin)
        commit_all(origin.root)
        git(clone.root, "pull", "-q", "--no-rebase", "origin", "main")

    pulled(lambda v: v.remember("The staging database is db-staging-02", tags=["ops"]))
    assert [h.title for h in clone.recall("staging database")] == ["The staging database is db-staging-02"]
    pulled(lambda v: v.add_entity("Acme Corporation", aliases=["ACME"]))
    assert clone.add_entity("ACME") == ("unchanged", "entities/Acme Corporation.md")
    pulled(lambda v: v.remember("The VPN gateway is vpn-eu-3"))
    assert clone.remember("The VPN gateway is vpn-eu-3").path == "memories/The VPN gateway is vpn-eu-3.md"
    box: dict[str, str] = {}
    pulled(lambda v: box.setdefault("id", v.remember("Maybe the release moves to June", candidate=True).id))
    assert clone.confirm(box["id"]).action == "confirmed"
    assert not [p for p in notes(clone) if " 2.md" in p]


def test_a_deleted_cache_is_rebuilt_by_the_first_write_or_read(origin):
    for operation in ("remember", "entity", "confirm", "recall"):
        shutil.rmtree(origin.state / "cache", ignore_errors=True)
        vault = Vault(origin.root)
        if operation == "remember":
            assert vault.remember("Prefers concise answers", lifecycle="preference").action == "unchanged"
        elif operation == "entity":
            assert vault.add_entity("老张") == ("unchanged", "entities/张三.md")
        elif operation == "confirm":
            row = next(p for p in notes(vault) if p.startswith("inbox/"))
            assert vault.confirm(parse_note((vault.root / row).read_bytes()).meta["id"]).action == "confirmed"
        else:
            assert [h.title for h in vault.recall("concise answers")] == ["Prefers concise answers"]
        vault.close()


def test_doctor_reports_memories_that_already_repeat_each_other(origin):
    memories = origin.folders["memories"]
    shutil.copy(memories / "Prefers concise answers.md", memories / "Prefers concise answers (laptop).md")
    (memories / "Concise please.md").write_text("---\nid: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\ntype: preference\n---\n"
                                                "Prefers concise answers.\n", encoding="utf-8")
    report = Vault(origin.root).doctor()
    assert not report.ok
    assert [sorted(group["paths"]) for group in report.duplicate_memories] == [sorted([
        "memories/Prefers concise answers.md", "memories/Prefers concise answers (laptop).md",
        "memories/Concise please.md"])]
    assert "duplicate_memories" in report.to_dict()


def test_doctor_is_ok_with_memories_that_only_look_alike(origin):
    Vault(origin.root).remember("Backup runs nightly at 02:00 on the main cluster")
    Vault(origin.root).remember("Backup runs nightly at 03:00 on the main cluster")
    report = Vault(origin.root).doctor()
    assert report.duplicate_memories == [] and report.ok
