"""`vaultmem repair` (issue 16 item 4): what bypassed the merge driver (git's conflict markers, sync tools'
copies, two files with one id) is folded back into its note by the driver's rules, audited, backed up,
and a second run finds nothing to do. Hostile inputs: markers only in the properties, nested blocks,
diff3 blocks, a binary copy, a read-only note, markers that do not pair up."""

from __future__ import annotations

import json
import os
import stat

from typer.testing import CliRunner

from vaultmem.notes.note import parse_note
from vaultmem.store.events import log_files
from vaultmem.surfaces.cli import app
from vaultmem.sync.mergedriver import CALLOUT, merge_copies
from vaultmem.notes.conflicts import copy_original, split_conflict
from vaultmem.sync.repair import repair

from .conftest import write_note

HEAD = """---
id: 01J0000000000000000000000A
type: fact
score: 5
tags: [ops]
---
"""
MARKERS_IN_PROPERTIES = """---
id: 01J0000000000000000000000A
type: fact
<<<<<<< HEAD
score: 5
tags: [ops]
=======
score: 6
tags: [ops, deploy]
>>>>>>> laptop
---
Deploy window is Tuesday.
"""


def audit_events(vault) -> list[dict]:
    events = []
    for path in log_files(vault.state / "devices", "audit"):
        events += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [e for e in events if e.get("event") == "repair"]


def test_markers_only_in_the_properties_merge_by_the_field_rules(vault):
    path = write_note(vault, "memories/Deploy.md", MARKERS_IN_PROPERTIES)
    report = repair(vault)
    assert [r.kind for r in report.repaired] == ["markers"] and report.ok
    text = path.read_text(encoding="utf-8")
    assert "<<<<<<<" not in text and CALLOUT not in text
    meta = parse_note(text).meta
    assert meta["score"] == 6 and meta["tags"] == ["ops", "deploy"] and "status" not in meta
    assert text.endswith("---\nDeploy window is Tuesday.\n")
    backup = vault.root / report.repaired[0].backup[0]
    assert backup.read_text(encoding="utf-8") == MARKERS_IN_PROPERTIES
    assert audit_events(vault)[0]["path"] == "memories/Deploy.md"
    assert repair(vault).repaired == [] and vault.doctor().conflict_markers == []


def test_a_true_body_conflict_goes_into_the_callout_and_no_text_is_lost(vault):
    body = "Deploy window is Tuesday.\n<<<<<<< HEAD\nIt moved to 22:00.\n=======\nIt moved to 23:00.\n>>>>>>> b\n"
    path = write_note(vault, "memories/Deploy.md", HEAD + body)
    report = repair(vault)
    text = path.read_text(encoding="utf-8")
    assert report.repaired[0].callout and CALLOUT in text
    assert "It moved to 22:00." in text and "It moved to 23:00." in text and "<<<<<<<" not in text
    assert parse_note(text).meta["status"] == "needs-verification"
    assert repair(vault).repaired == []


def test_diff3_blocks_use_their_ancestor(vault):
    # the ancestor says one line was deleted on ours and another changed on theirs: no conflict at all
    text = HEAD + ("<<<<<<< ours\nkeep\n||||||| base\nkeep\ngone\n=======\nkeep\ngone\n>>>>>>> theirs\n"
                   "middle\n<<<<<<< ours\nsame\n||||||| base\nsame\n=======\nchanged\n>>>>>>> theirs\n")
    base, ours, theirs = split_conflict(text)
    assert base is not None and "gone" in base and "gone" not in ours
    path = write_note(vault, "memories/Three.md", text)
    repair(vault)
    merged = path.read_text(encoding="utf-8")
    assert parse_note(merged).body == "keep\nmiddle\nchanged\n" and CALLOUT not in merged


def test_nested_blocks_are_resolved_from_the_outside_in(vault):
    nested = HEAD + ("top\n<<<<<<< HEAD\nalpha\n<<<<<<< inner\nbeta one\n=======\nbeta two\n>>>>>>> inner\n"
                     "=======\nalpha\n>>>>>>> other\n")
    path = write_note(vault, "memories/Nested.md", nested)
    report = repair(vault)
    text = path.read_text(encoding="utf-8")
    assert report.ok and "<<<<<<<" not in text and "=======" not in text
    for line in ("top", "alpha", "beta one", "beta two"):
        assert line in text
    assert repair(vault).repaired == []


def test_markers_that_do_not_pair_up_are_left_and_reported(vault):
    broken = HEAD + "<<<<<<< HEAD\nours\n<<<<<<< inner\nmore\n=======\ntheirs\n>>>>>>> b\n"  # the outer never closes
    path = write_note(vault, "memories/Broken.md", broken)
    report = repair(vault)
    assert report.repaired == [] and "do not pair up" in report.skipped[0].reason
    assert path.read_text(encoding="utf-8") == broken
    assert split_conflict("a\n<<<<<<< x\nb\n>>>>>>> y\n") is None  # no ======= line


def test_a_setext_underline_in_theirs_is_text_not_a_marker():
    base, ours, theirs = split_conflict("<<<<<<< a\nTitle\n=======\nHeading\n=======\n>>>>>>> b\n")
    assert (base, ours, theirs) == (None, "Title\n", "Heading\n=======\n")


def test_a_sync_conflict_copy_folds_into_its_note_and_is_removed(vault):
    note = vault.remember("The staging database is db-stage-2", tags=["db"])
    original = (vault.root / note.path).read_text(encoding="utf-8")
    copy = note.path[:-3] + ".sync-conflict-20261201-101500-ABCDEF1.md"
    write_note(vault, copy, original.replace("tags: [db]", "tags: [db, stage]") + "Also db-stage-3 for load tests.\n")
    dropbox = note.path[:-3] + " (Jon's conflicted copy 2026-12-01).md"
    write_note(vault, dropbox, original + "Backups run at 02:00.\n")
    dry = repair(vault, dry_run=True)
    assert dry.repaired[0].copies == sorted([copy, dropbox]) and (vault.root / copy).exists()
    report = repair(vault)
    assert not (vault.root / copy).exists() and not (vault.root / dropbox).exists()
    merged = (vault.root / note.path).read_text(encoding="utf-8")
    assert parse_note(merged).meta["tags"] == ["db", "stage"]
    assert "Also db-stage-3 for load tests." in merged and "Backups run at 02:00." in merged
    assert {b.rsplit("/", 1)[1] for b in report.repaired[0].backup} >= {copy.rsplit("/", 1)[1],
                                                                         dropbox.rsplit("/", 1)[1]}
    event = audit_events(vault)[-1]
    assert event["kind"] == "copy" and sorted(event["copies"]) == sorted([copy, dropbox])
    assert repair(vault).repaired == [] and vault.doctor().ok


def test_a_copy_whose_original_is_gone_takes_its_name(vault):
    note = vault.remember("The VPN gateway is vpn-3")
    src = vault.root / note.path
    copy = src.with_name(src.stem + ".sync-conflict-20261201-101500-ABCDEF1.md")
    src.rename(copy)
    repair(vault)
    assert src.exists() and not copy.exists() and vault.get(note.id).path == note.path


def test_two_files_with_one_id_merge_into_the_one_not_named_like_a_copy(vault):
    note = vault.remember("Standup is at 09:30", tags=["team"])
    original = (vault.root / note.path).read_text(encoding="utf-8")
    icloud = note.path[:-3] + " 2.md"
    write_note(vault, icloud, original.replace("tags: [team]", "tags: [team, daily]"))
    report = repair(vault)
    assert report.repaired[0].kind == "duplicate-id" and report.repaired[0].path == note.path
    assert not (vault.root / icloud).exists()
    assert parse_note((vault.root / note.path).read_text(encoding="utf-8")).meta["tags"] == ["team", "daily"]
    assert vault.doctor().duplicate_ids == {}


def test_a_binary_sync_conflict_copy_is_left_and_reported(vault):
    note = vault.remember("The printer is on floor 3")
    copy = vault.root / (note.path[:-3] + ".sync-conflict-20261201-101500-ABCDEF1.md")
    copy.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary")
    before = (vault.root / note.path).read_bytes()
    report = repair(vault)
    assert report.repaired == [] and "not UTF-8" in report.skipped[0].reason
    assert copy.exists() and (vault.root / note.path).read_bytes() == before


def test_a_read_only_note_is_not_rewritten(vault):
    path = write_note(vault, "memories/Deploy.md", MARKERS_IN_PROPERTIES)
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP)
    try:
        report = repair(vault)
        assert "read-only" in report.skipped[0].reason and path.read_text(encoding="utf-8") == MARKERS_IN_PROPERTIES
    finally:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    assert repair(vault).repaired[0].path == "memories/Deploy.md"


def test_copy_names_and_two_way_merges():
    assert copy_original("x.sync-conflict-20240101-120000-ABC1234.md") == "x.md"
    assert copy_original("Deploy (Jon's conflicted copy 2026-12-01).md") == "Deploy.md"
    assert copy_original("Deploy (conflict 2026-12-01 101500).md") == "Deploy.md"
    assert copy_original("Deploy 2.md") is None and copy_original(".sync-conflict-20240101-120000.md") is None
    ours = (HEAD + "one\ntwo\n").encode()
    theirs = (HEAD.replace("score: 5", "score: 8") + "one\ntwo\nthree\n").encode()
    merged = merge_copies(ours, theirs, "memories/x.md").decode()
    assert parse_note(merged).meta["score"] == 8 and parse_note(merged).body == "one\ntwo\nthree\n"
    assert merge_copies(b"\xff\xfe", theirs, "memories/x.md") is None


def test_the_cli_repairs_says_what_and_doctor_names_the_fix(vault):
    write_note(vault, "memories/Deploy.md", MARKERS_IN_PROPERTIES)
    runner = CliRunner()
    shown = runner.invoke(app, ["doctor", "--vault", str(vault.root)], env={"NO_COLOR": "1"})
    assert shown.exit_code == 3 and "vaultmem repair" in shown.output
    as_json = json.loads(runner.invoke(app, ["doctor", "--vault", str(vault.root), "--json"]).output)
    assert as_json["fixes"]["conflict_markers"] == "vaultmem repair"
    dry = runner.invoke(app, ["repair", "--vault", str(vault.root), "--dry-run", "--json"])
    assert dry.exit_code == 0 and json.loads(dry.output)["repaired"][0]["path"] == "memories/Deploy.md"
    assert "<<<<<<<" in (vault.root / "memories/Deploy.md").read_text(encoding="utf-8")
    done = runner.invoke(app, ["repair", "--vault", str(vault.root)], env={"NO_COLOR": "1"})
    assert done.exit_code == 0 and "memories/Deploy.md" in done.output
    again = runner.invoke(app, ["repair", "--vault", str(vault.root)], env={"NO_COLOR": "1"})
    assert again.exit_code == 0 and "nothing to repair" in again.output
    write_note(vault, "memories/Broken.md", HEAD + "<<<<<<< a\nx\n<<<<<<< b\ny\n=======\nz\n>>>>>>> c\n")
    left = runner.invoke(app, ["repair", "--vault", str(vault.root), "--json"])
    assert left.exit_code == 3 and json.loads(left.output)["skipped"][0]["path"] == "memories/Broken.md"


def test_a_dry_run_says_what_a_run_does_for_a_copy_with_markers_in_it(vault):
    note = vault.remember("The build server is ci-7", tags=["ci"])
    original = (vault.root / note.path).read_text(encoding="utf-8")
    copy = note.path[:-3] + ".sync-conflict-20261201-101500-ABCDEF1.md"
    marked = "<<<<<<< a\ntags: [ci, build]\n=======\ntags: [ci]\n>>>>>>> b"
    write_note(vault, copy, original.replace("tags: [ci]", marked))
    before = {p: p.read_bytes() for p in (vault.root / "memories").iterdir()}
    dry = repair(vault, dry_run=True)
    assert [(r.kind, r.path) for r in dry.repaired] == [("markers", copy), ("copy", note.path)] and dry.ok
    assert {p: p.read_bytes() for p in (vault.root / "memories").iterdir()} == before  # nothing written
    done = repair(vault)
    assert [(r.kind, r.path) for r in done.repaired] == [("markers", copy), ("copy", note.path)]
    assert parse_note((vault.root / note.path).read_text(encoding="utf-8")).meta["tags"] == ["ci", "build"]
    assert not (vault.root / copy).exists()
