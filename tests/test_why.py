"""`vaultmem why ID` (issue 30 item 1): one memory's story from the audit log, the events logs, the supersede
chain and git; without git the audit log alone, said so; bad input a clear error."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from vaultmem import NoteNotFound, UnsafePath
from vaultmem.surfaces.cli import app

OLD = "01M4VZM6H0TGH81P9ENBTTGEQN"  # 客户张三合同编号 CT2024-0876 in the sample vault


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), "-c", "user.name=Ann Person", "-c", "user.email=ann@example.com", *args],
                   check=True, capture_output=True)


@pytest.fixture
def told(sample):
    """The sample vault in git: a merge and a supersede through vaultmem, then a hand edit committed."""
    _git(sample.root, "init", "-q", "-b", "main")
    _git(sample.root, "add", "-A")
    _git(sample.root, "commit", "-qm", "the sample vault")
    first = sample.remember("Deploy freeze starts Nov 10 for the Atlas release", tags=["ops"], lifecycle="fact")
    sample.remember("Deploy freeze starts Nov 10 for the Atlas release", tags=["ops", "freeze"])  # a merge
    newer = sample.correct(first.id, "Deploy freeze starts Nov 12 for the Atlas release")
    sample.feedback(newer.id, "useful", "checked with ops")
    _git(sample.root, "add", "-A")
    _git(sample.root, "commit", "-qm", "vaultmem writes")
    path = sample.root / newer.path
    path.write_text(path.read_text(encoding="utf-8").replace("Nov 12", "Nov 14"), encoding="utf-8")
    _git(sample.root, "commit", "-qam", "freeze moved again")
    sample.refresh()
    return sample, first, newer


def test_why_tells_a_merge_a_supersede_chain_a_hand_edit_and_the_strength(told):
    vault, first, newer = told
    story = vault.why(newer.path)
    kinds = [e["kind"] for e in story.events]
    assert kinds[:2] == ["supersedes", "created"] or kinds[0] == "created"
    assert {"created", "supersedes", "feedback", "commit"} <= set(kinds)
    edit = [e for e in story.events if e["kind"] == "commit" and "moved again" in e["what"]][0]
    assert edit["by"] == "Ann Person" and any("Nov 14" in line for line in edit["diff"]) \
        and any("Nov 12" in line for line in edit["diff"])
    assert [c["id"] for c in story.chain] == [first.id, newer.id] and story.chain[1]["this"]
    written = [e for e in story.events if e["kind"] == "created"][0]
    assert "Nov 12" in written["text"] and "Nov 14" in story.text  # as written, then as edited by hand since
    assert story.strength["effective"] > 0 and story.strength["half_life_hours"] == 2400
    assert story.git.startswith("git: ")
    old = vault.why(first.id)
    assert [e["kind"] for e in old.events if e["kind"] != "commit"][:3] == ["created", "merged", "superseded"]
    assert old.events[0]["text"].startswith("Deploy freeze starts Nov 10")


def test_why_on_a_sample_note_with_a_supersede_chain(sample):
    story = sample.why(OLD)
    assert len(story.chain) == 2 and story.events[0]["kind"] == "created"
    assert "not in a git repository" in story.git or story.git.startswith("git")


def test_without_git_the_story_is_the_audit_logs_and_says_so(vault, tmp_path):
    made = vault.remember("Standups are at 10:00", tags=["team"])
    vault.forget(made.id, "moved to 09:30")
    vault.restore(made.id)
    story = vault.why(made.id)
    assert [e["kind"] for e in story.events] == ["created", "forget", "restore"]
    assert "moved to 09:30" in story.events[1]["what"]
    assert "audit log" in story.git


@pytest.mark.parametrize("ref, error", [("no such note at all", NoteNotFound), ("../../etc/passwd", UnsafePath)])
def test_bad_ids_are_a_clear_error(vault, ref, error):
    with pytest.raises(error):
        vault.why(ref)
    result = CliRunner().invoke(app, ["why", ref, "--vault", str(vault.root), "--json"])
    assert result.exit_code == 1 and json.loads(result.stderr)["error"]


def test_the_command_prints_the_story_in_words(told):
    vault, _, newer = told
    result = CliRunner().invoke(app, ["why", newer.id, "--vault", str(vault.root)], env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "supersede chain" in result.output and "freeze moved again" in result.output
    assert "effective" in result.output and "Ann Person" in result.output
