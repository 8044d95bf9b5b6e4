"""What bypasses vaultmem's merge (issue 16 item 4, the doctor half): a text merge that left git's
conflict markers in a note (GitHub's web editor, Obsidian Git on mobile) and a sync tool's conflict
copies (Syncthing, Dropbox, Obsidian Sync) are named by `doctor`, which exits 3."""

from __future__ import annotations

import json
import subprocess
import sys

from vaultmem.recall.catalog import conflict_marker_line, is_sync_conflict_copy

CONFLICTED = """---
id: 01J0000000000000000000000A
type: fact
score: 5
tags: [ops]
---
Deploy window is Tuesday.
<<<<<<< HEAD
It moved to 22:00.
=======
It moved to 23:00.
>>>>>>> laptop
"""


def test_doctor_names_a_note_a_text_merge_left_conflict_markers_in(vault):
    (vault.root / "memories" / "Deploy window.md").write_text(CONFLICTED, encoding="utf-8")
    broken_yaml = CONFLICTED.replace("score: 5\n", "<<<<<<< HEAD\nscore: 5\n=======\nscore: 6\n>>>>>>> b\n", 1)
    (vault.root / "memories" / "Score fight.md").write_text(broken_yaml, encoding="utf-8")
    report = vault.doctor()
    assert {(c["path"], c["line"]) for c in report.conflict_markers} >= {("memories/Deploy window.md", 2)}
    assert any(c["path"] == "memories/Score fight.md" for c in report.conflict_markers + report.unparsable)
    assert not report.ok


def test_doctor_names_sync_conflict_copies_and_the_cli_exits_3(vault):
    note = vault.remember("The staging database is db-stage-2")
    original = (vault.root / note.path).read_text(encoding="utf-8")
    copies = ["memories/The staging database is db-stage-2.sync-conflict-20261201-101500-ABCDEF1.md",
              "memories/The staging database is db-stage-2 (Jon's conflicted copy 2026-12-01).md"]
    for copy in copies:
        (vault.root / copy).write_text(original, encoding="utf-8")
    report = vault.doctor()
    assert report.sync_conflicts == sorted(copies) and not report.ok
    done = subprocess.run([sys.executable, "-m", "vaultmem", "doctor", "--vault", str(vault.root), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and sorted(json.loads(done.stdout)["sync_conflicts"]) == sorted(copies)
    text = subprocess.run([sys.executable, "-m", "vaultmem", "doctor", "--vault", str(vault.root)],
                          capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "NO_COLOR": "1"})
    assert "sync conflict copy: " + copies[0] in text.stdout


def test_markers_must_come_as_a_block_and_names_must_be_a_tools_own():
    assert conflict_marker_line("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> x\n") == 2
    assert conflict_marker_line("=======\nunderline, not a conflict\n") is None
    assert conflict_marker_line("<<<<<<< only an opening line\n") is None
    assert conflict_marker_line("a >>>>>>> b <<<<<<< c ======= d") is None  # not at line starts
    assert is_sync_conflict_copy("memories/x.sync-conflict-20240101-120000-ABC1234.md")
    assert is_sync_conflict_copy("memories/x (Conflicted copy 2024-01-01 120000).md")
    assert not is_sync_conflict_copy("memories/Deploy window (2).md")  # vaultmem's own numbered name
    assert not is_sync_conflict_copy("memories/How we resolved the conflict.md")


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_device_reset_gives_a_copied_home_its_own_device_log(vault, monkeypatch, isolated_machine):
    """A cloned VM or copied home shares its origin's device id: `device reset` ends that, and the
    next write goes to a log of the new id while the old log stays (issue 16 item 5)."""
    monkeypatch.delenv("VAULTMEM_DEVICE_ID")
    first = json.loads(_cli("device", "show", "--json").stdout)
    assert first["source"] == "file" and (isolated_machine / "device-id").read_text().strip() == first["device"]
    assert json.loads(_cli("device", "show", "--json").stdout)["device"] == first["device"]  # stable
    _cli("remember", "The copied home wrote this", "--vault", str(vault.root))
    changed = json.loads(_cli("device", "reset", "--json").stdout)
    assert changed["old"] == first["device"] and changed["device"] != first["device"]
    _cli("remember", "The new machine wrote this", "--vault", str(vault.root))
    logs = {p.name for p in (vault.root / ".vaultmem" / "devices").iterdir()}
    assert {first["device"], changed["device"]} <= logs
    hits = json.loads(_cli("recall", "machine wrote", "--vault", str(vault.root), "--json").stdout)
    assert len(hits) == 2


def test_device_reset_is_refused_while_the_environment_sets_the_id():
    done = _cli("device", "reset", env={"VAULTMEM_DEVICE_ID": "ci-box"})
    assert done.returncode == 1 and "VAULTMEM_DEVICE_ID" in done.stderr
    assert _cli("device", "show").stdout.strip().startswith("testbox-0001")


def test_doctor_strict_finds_a_secret_a_person_pasted_into_a_note_and_never_prints_it(vault):
    """Writes are cleaned, but a note typed in Obsidian is not: --strict (CI, pre-commit) reads them all."""
    clean = vault.remember("The staging database is db-stage-2")
    pasted = "The staging password: Hunter2-Secret-Value!"
    (vault.root / "memories" / "Staging login.md").write_text(
        f"---\nid: 01J0000000000000000000000B\ntags: [ops]\n---\n{pasted}\n", encoding="utf-8")
    assert vault.doctor().secrets == []  # the plain doctor stays fast
    report = vault.doctor(strict=True)
    assert [s["path"] for s in report.secrets] == ["memories/Staging login.md"] and not report.ok
    assert clean.path not in {s["path"] for s in report.secrets}
    done = _cli("doctor", "--strict", "--vault", str(vault.root), env={"NO_COLOR": "1"})
    assert done.returncode == 3 and "memories/Staging login.md" in done.stdout
    assert "Hunter2" not in done.stdout + done.stderr
