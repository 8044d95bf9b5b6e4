"""The git merge driver: two machines' edits of one memory note merge by property and by paragraph, a true
conflict stays readable in the note (never a conflict marker, never lost text), and git really uses it."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vaultmem.surfaces.cli import app
from vaultmem.notes.note import parse_note
from vaultmem.sync.gitsync import driver_command
from vaultmem.sync.mergedriver import CALLOUT, merge_notes

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"

NOTE = """---
id: 01JDX3K8Q4W2M9ZC6T7B5N0H1A
type: contract_id
value: CT2024-0876
score: 7.0
timestamp: 2026-11-29T14:02:11+08:00
tags: [contract, client_zhangsan]
source: finance-bot
lifecycle: fact
trust: user
status: active
namespace: shared
version: [laptop-3f2a:3]
---
客户 [[张三]] 的合同编号是 CT2024-0876。

The contract was signed in Hangzhou.

Renewal is due in March.
"""


def merge(base: str, ours: str, theirs: str, path: str = "memories/note.md") -> tuple[str, bool]:
    merged, clean = merge_notes(base.encode(), ours.encode(), theirs.encode(), path)
    return merged.decode(), clean


def meta(text: str) -> dict:
    return parse_note(text).meta


def git_merge_file(tmp_path: Path, base: str, ours: str, theirs: str) -> int:
    """What git's own line merge makes of the same three texts: its number of conflicts."""
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return subprocess.run(["git", "merge-file", "-p", "ours", "base", "theirs"], cwd=tmp_path,
                          capture_output=True).returncode


# --- properties ------------------------------------------------------------------------------


def test_adjacent_key_edits_both_survive_where_git_alone_conflicts(tmp_path):
    base = NOTE.replace("timestamp: 2026-11-29T14:02:11+08:00\ntags", "tags").replace(
        "source: finance-bot", "timestamp: 2026-11-29T14:02:11+08:00\nsource: finance-bot")
    ours = base.replace("score: 7.0", "score: 8.5")  # score and tags are adjacent lines
    theirs = base.replace("tags: [contract, client_zhangsan]", "tags: [contract, client_zhangsan, renewal]")
    assert git_merge_file(tmp_path, base, ours, theirs) == 1
    merged, clean = merge(base, ours, theirs)
    assert clean
    assert merged == base.replace("score: 7.0", "score: 8.5").replace("client_zhangsan]", "client_zhangsan, renewal]")


def test_two_vaultmem_writes_merge_their_version_vectors_score_and_tags(tmp_path):
    # each machine's write bumps its counter in `version`: that line changes on both sides
    ours = NOTE.replace("score: 7.0", "score: 7.5").replace("laptop-3f2a:3", "laptop-3f2a:4")
    theirs = NOTE.replace("client_zhangsan]", "client_zhangsan, renewal]").replace(
        "[laptop-3f2a:3]", "[laptop-3f2a:3, desk-9b1c:1]")
    assert git_merge_file(tmp_path, NOTE, ours, theirs) >= 1
    merged, clean = merge(NOTE, ours, theirs)
    assert clean and CALLOUT not in merged
    props = meta(merged)
    assert props["score"] == 7.5
    assert props["tags"] == ["contract", "client_zhangsan", "renewal"]
    assert props["version"] == ["laptop-3f2a:4", "desk-9b1c:1"]
    assert props["status"] == "active"


def test_version_vectors_join_by_the_higher_counter_per_device():
    base = NOTE.replace("[laptop-3f2a:3]", "[laptop-3f2a:3, desk-9b1c:1]")
    ours = base.replace("[laptop-3f2a:3, desk-9b1c:1]", "[laptop-3f2a:5, desk-9b1c:1]")
    theirs = base.replace("[laptop-3f2a:3, desk-9b1c:1]", "[laptop-3f2a:4, desk-9b1c:2, phone-77aa:1]")
    merged, _ = merge(base, ours, theirs)
    assert meta(merged)["version"] == ["laptop-3f2a:5", "desk-9b1c:2", "phone-77aa:1"]


def test_a_tag_one_side_removed_stays_removed_while_the_other_adds_one():
    ours = NOTE.replace("tags: [contract, client_zhangsan]", "tags: [client_zhangsan]")
    theirs = NOTE.replace("tags: [contract, client_zhangsan]", "tags: [contract, client_zhangsan, renewal]")
    merged, _ = merge(NOTE, ours, theirs)
    assert meta(merged)["tags"] == ["client_zhangsan", "renewal"]


def test_aliases_union_in_ours_order_then_theirs_new_ones():
    base = NOTE.replace("namespace: shared", "namespace: shared\naliases: [合同]")
    ours = base.replace("aliases: [合同]", "aliases: [合同, contract no]")
    theirs = base.replace("aliases: [合同]", "aliases: [CT number, 合同]")
    assert meta(merge(base, ours, theirs)[0])["aliases"] == ["合同", "contract no", "CT number"]


def test_both_sides_raising_the_score_keep_the_higher():
    ours = NOTE.replace("score: 7.0", "score: 8.0")
    theirs = NOTE.replace("score: 7.0", "score: 9.0")
    merged, _ = merge(NOTE, ours, theirs)
    assert meta(merged)["score"] == 9.0 and CALLOUT not in merged
    lowered = NOTE.replace("score: 7.0", "score: 2.0")  # a change on one side only is that side's value
    assert meta(merge(NOTE, lowered, NOTE)[0])["score"] == 2.0
    assert meta(merge(NOTE, NOTE, lowered)[0])["score"] == 2.0


@pytest.mark.parametrize("base, ours, theirs, expected", [
    ("active", "archived", "needs-verification", "needs-verification"),
    ("active", "needs-verification", "superseded", "superseded"),
    ("active", "superseded", "archived", "superseded"),
    ("candidate", "active", "archived", "archived"),
    ("candidate", "active", "candidate", "active"),  # theirs unchanged: ours' change stands
    ("needs-verification", "active", "needs-verification", "active"),  # a person verified it on one machine
])
def test_status_by_precedence_when_both_sides_changed_it(base, ours, theirs, expected):
    def note(status):
        return NOTE.replace("status: active", f"status: {status}")

    merged, clean = merge(note(base), note(ours), note(theirs))
    assert clean and meta(merged)["status"] == expected and CALLOUT not in merged


def test_the_later_timestamp_wins_whatever_the_offsets():
    ours = NOTE.replace("2026-11-29T14:02:11+08:00", "2026-11-29T15:00:00+08:00")
    theirs = NOTE.replace("2026-11-29T14:02:11+08:00", "2026-11-29T08:30:00+00:00")  # 16:30 in +08:00
    merged, _ = merge(NOTE, ours, theirs)
    assert meta(merged)["timestamp"] == dt.datetime(2026, 11, 29, 8, 30, tzinfo=dt.timezone.utc)
    reverse, _ = merge(NOTE, theirs, ours)
    assert meta(reverse)["timestamp"] == meta(merged)["timestamp"]


def test_unknown_keys_added_on_both_sides_are_all_kept():
    ours = NOTE.replace("namespace: shared\n", "namespace: shared\nproject: atlas\n")
    theirs = NOTE.replace("trust: user\n", "trust: user\nreviewed: 2026-12-01\nreviewer: 王芳\n")
    merged, clean = merge(NOTE, ours, theirs)
    props = meta(merged)
    assert clean and props["project"] == "atlas" and props["reviewed"] == dt.date(2026, 12, 1)
    assert props["reviewer"] == "王芳" and list(props)[-3:] == ["version", "reviewed", "reviewer"]
    assert all(line in merged for line in ours.splitlines())  # ours' bytes are kept as they were


def test_a_key_deleted_on_one_side_and_untouched_on_the_other_is_deleted():
    ours = NOTE.replace("value: CT2024-0876\n", "")
    theirs = NOTE.replace("score: 7.0", "score: 7.5")
    merged, _ = merge(NOTE, ours, theirs)
    assert "value" not in meta(merged) and meta(merged)["score"] == 7.5
    assert "value" not in meta(merge(NOTE, theirs, ours)[0])


def test_an_unknown_key_both_changed_keeps_ours_and_records_theirs_for_a_person():
    base = NOTE.replace("namespace: shared\n", "namespace: shared\nowner: 李伟\n")
    ours = base.replace("owner: 李伟", "owner: 王芳").replace("laptop-3f2a:3", "laptop-3f2a:4")
    theirs = base.replace("owner: 李伟", "owner: Emily Carter").replace(
        "[laptop-3f2a:3]", "[laptop-3f2a:3, desk-9b1c:1]")
    merged, clean = merge(base, ours, theirs)
    props = meta(merged)
    assert clean and props["owner"] == "王芳" and props["status"] == "needs-verification"
    assert CALLOUT in merged and "Emily Carter" in parse_note(merged).body
    assert "property owner: **ours** (device laptop-3f2a) 王芳 was kept; **theirs** (device desk-9b1c) had " \
           "Emily Carter" in merged


def test_a_nested_property_only_theirs_added_is_kept_by_starting_from_theirs_bytes():
    """vaultmem writes only flat properties; a person's nested map cannot be written into ours line by line."""
    ours = NOTE.replace("score: 7.0", "score: 8.0")
    theirs = NOTE.replace("namespace: shared\n", "namespace: shared\nextra:\n  nested: 1  # by hand\n")
    merged, clean = merge(NOTE, ours, theirs)
    assert clean and merged == theirs.replace("score: 7.0", "score: 8.0")


def test_a_recorded_value_of_several_lines_stays_inside_the_callout():
    base = NOTE.replace("namespace: shared\n", "namespace: shared\nsummary: |\n  one\n")
    ours = base.replace("  one\n", "  one, ours\n  two\n")
    theirs = base.replace("  one\n", "  one, theirs\n  three\n")
    body = parse_note(merge(base, ours, theirs)[0]).body
    callout = body[body.index(CALLOUT):]
    assert all(line.startswith(">") for line in callout.splitlines())
    assert "one, theirs" in callout and "three" in callout


# --- bodies ----------------------------------------------------------------------------------


def test_body_edits_in_different_paragraphs_both_stay():
    ours = NOTE.replace("signed in Hangzhou.", "signed in Hangzhou on 3 May.")
    theirs = NOTE.replace("Renewal is due in March.", "Renewal is due in March; 李伟 owns it.")
    merged, clean = merge(NOTE, ours, theirs)
    assert clean and CALLOUT not in merged
    assert "signed in Hangzhou on 3 May." in merged and "李伟 owns it." in merged
    assert meta(merged)["status"] == "active"


def test_the_same_line_changed_differently_keeps_both_texts_in_a_callout():
    ours = NOTE.replace("signed in Hangzhou.", "signed in Hangzhou by 张三 himself.").replace(
        "laptop-3f2a:3", "laptop-3f2a:4")
    theirs = NOTE.replace("signed in Hangzhou.", "signed in Shanghai, not Hangzhou.").replace(
        "[laptop-3f2a:3]", "[laptop-3f2a:3, desk-9b1c:1]")
    merged, clean = merge(NOTE, ours, theirs)
    assert clean
    assert "<<<<<<<" not in merged and "=======" not in merged and ">>>>>>>" not in merged
    note = parse_note(merged)
    assert note.meta["status"] == "needs-verification"
    assert note.meta["version"] == ["laptop-3f2a:4", "desk-9b1c:1"]
    sentences = {s for text in (ours, theirs) for s in re.split(r"(?<=[.。])\s+", parse_note(text).body) if s.strip()}
    assert all(s.strip() in merged for s in sentences)
    assert note.body == (
        "客户 [[张三]] 的合同编号是 CT2024-0876。\n\n"
        f"{CALLOUT}\n"
        "> **ours** (device laptop-3f2a) wrote:\n"
        "> > The contract was signed in Hangzhou by 张三 himself.\n"
        ">\n"
        "> **theirs** (device desk-9b1c) wrote:\n"
        "> > The contract was signed in Shanghai, not Hangzhou.\n"
        "\n"
        "Renewal is due in March.\n")


def test_a_conflict_inside_a_paragraph_keeps_the_text_after_it_out_of_the_quote():
    base = NOTE.replace("The contract was signed in Hangzhou.\n", "Line one.\nLine two.\nLine three.\n")
    ours = base.replace("Line two.", "Line two, ours.")
    theirs = base.replace("Line two.", "Line two, theirs.")
    body = parse_note(merge(base, ours, theirs)[0]).body
    assert "Line one.\n\n" + CALLOUT in body
    assert "> > Line two, theirs.\n\nLine three.\n" in body


def test_a_line_one_side_deleted_and_the_other_changed_is_kept_with_what_happened():
    ours = NOTE.replace("The contract was signed in Hangzhou.\n\n", "")
    theirs = NOTE.replace("signed in Hangzhou.", "signed in Hangzhou, 2024.")
    merged, _ = merge(NOTE, ours, theirs)
    assert "signed in Hangzhou, 2024." in merged and "**ours** deleted these lines." in merged


def test_two_machines_creating_the_same_note_keep_both_bodies():
    """Git gives an empty ancestor when both sides added the file."""
    ours = NOTE.replace("laptop-3f2a:3", "laptop-3f2a:1")
    theirs = NOTE.replace("CT2024-0876。", "CT2024-0877。").replace("laptop-3f2a:3", "desk-9b1c:1").replace(
        "score: 7.0", "score: 6.0")
    merged, clean = merge("", ours, theirs)
    props = meta(merged)
    assert clean and props["version"] == ["laptop-3f2a:1", "desk-9b1c:1"] and props["score"] == 7.0
    assert "CT2024-0876。" in merged and "CT2024-0877。" in merged and props["status"] == "needs-verification"


def test_text_that_looks_like_conflict_markers_is_never_mistaken_for_them():
    body = "How to read a conflict:\n<<<<<<< HEAD\nmine\n=======\nyours\n>>>>>>> branch\nEnd.\n"
    base = NOTE.split("---\n客户")[0] + "---\n" + body
    ours = base.replace("mine", "mine, edited")
    theirs = base.replace("mine", "mine, changed")
    note = parse_note(merge(base, ours, theirs)[0])
    # only the changed line is quoted; the marker-like lines around it are the note's own text
    assert note.body.startswith("How to read a conflict:\n<<<<<<< HEAD\n\n" + CALLOUT)
    assert "> **ours** wrote:\n> > mine, edited\n>\n> **theirs** wrote:\n> > mine, changed\n\n=======" in note.body
    assert note.body.endswith("\n=======\nyours\n>>>>>>> branch\nEnd.\n")


_EDITS = st.lists(st.tuples(st.sampled_from(["replace", "delete", "insert"]), st.integers(0, 11)), max_size=4)


def _edited(lines: list[str], edits: list[tuple[str, int]], side: str) -> list[str]:
    lines = list(lines)
    for n, (kind, at) in enumerate(edits):
        at = min(at, len(lines))
        new = f"Sentence {n} written by {side} at {at}."
        if kind == "insert" or at == len(lines):
            lines.insert(at, new)
        elif kind == "replace":
            lines[at] = new
        else:
            del lines[at]
    return lines


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), _EDITS, _EDITS, st.booleans(), st.booleans())
def test_random_edits_on_two_machines_lose_no_new_line_and_leave_no_marker(size, mine, other, blank, score):
    lines = [f"Line {i} of the note." if not blank or i % 3 else "" for i in range(size)]
    head = NOTE.split("---\n客户")[0] + "---\n"
    base = head + "".join(f"{line}\n" for line in lines)
    ours_lines, theirs_lines = _edited(lines, mine, "ours"), _edited(lines, other, "theirs")
    ours = head.replace("score: 7.0", "score: 8.0" if score else "score: 7.0") + "".join(f"{x}\n" for x in ours_lines)
    theirs = head.replace("client_zhangsan]", "client_zhangsan, renewal]") + "".join(f"{x}\n" for x in theirs_lines)
    merged, clean = merge(base, ours, theirs)
    note = parse_note(merged)
    assert clean and not re.search(r"(?m)^(<{7}|>{7}|={7})", merged)
    kept = {line.removeprefix("> > ") for line in note.body.splitlines()}
    assert {x for x in ours_lines + theirs_lines if x not in lines} <= kept
    assert note.meta["tags"][-1] == "renewal" and note.meta["score"] == (8.0 if score else 7.0)
    assert (CALLOUT in merged) == (note.meta["status"] == "needs-verification")


# --- byte-exactness --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*.md") if ".edited" not in p.name))
def test_an_untouched_note_merged_with_itself_is_byte_identical(name):
    data = (GOLDEN / name).read_bytes()
    assert merge_notes(data, data, data, name) == (data, True)


def test_crlf_and_comments_on_unchanged_lines_survive_a_merge():
    base = (GOLDEN / "comments-and-unknown-keys.md").read_text(encoding="utf-8").replace("\n", "\r\n")
    ours = base.replace("score: 0.50 ", "score: 0.75 ")
    theirs = base.replace("status: active", "status: archived")
    merged, clean = merge(base, ours, theirs)
    assert clean and merged == ours.replace("status: active", "status: archived")
    assert "score: 0.75            # importance, two decimals on purpose\r\n" in merged
    assert "# this comment belongs to status\r\nstatus: archived\r\n" in merged
    assert "\n" not in merged.replace("\r\n", "")


def test_crlf_bodies_merge_by_paragraph():
    base = NOTE.replace("\n", "\r\n")
    ours = base.replace("Hangzhou.", "Hangzhou!")
    theirs = base.replace("March.", "April.")
    merged, _ = merge(base, ours, theirs)
    assert merged == base.replace("Hangzhou.", "Hangzhou!").replace("March.", "April.")


OBSIDIAN = """---
id: 01JDX3K8Q4W2M9ZC6T7B5N0H1A
type: contract_id
value: CT2024-0876
score: 7
timestamp: 2026-11-29T14:02:11+08:00
tags:
  - contract
  - client_zhangsan
source: finance-bot
lifecycle: fact
trust: user
status: active
namespace: shared
version:
  - laptop-3f2a:3
---
"""


def test_an_obsidian_properties_rewrite_and_a_field_change_merge_to_the_right_values():
    body = NOTE.split("---\n", 2)[2]
    base = NOTE.replace("type: contract_id", "type: 'contract_id'  # what it is")
    rewritten = OBSIDIAN.replace("  - client_zhangsan\n", "  - client_zhangsan\n  - renewal\n") + body
    ours = base.replace("score: 7.0", "score: 8.0").replace("laptop-3f2a:3", "laptop-3f2a:4")
    for mine, other in ((ours, rewritten), (rewritten, ours)):
        merged, clean = merge(base, mine, other)
        props = meta(merged)
        assert clean and CALLOUT not in merged
        assert props["score"] == 8.0 and props["tags"] == ["contract", "client_zhangsan", "renewal"]
        assert props["version"] == ["laptop-3f2a:4"] and props["type"] == "contract_id"
        assert parse_note(merged).body == body
    # starting from ours, ours' own spelling stays: the rewrite's style is not forced on it
    assert merge(base, ours, rewritten)[0].startswith("---\nid: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\n"
                                                      "type: 'contract_id'  # what it is\n")


# --- files that are not notes, and hostile input ---------------------------------------------


def test_a_file_without_frontmatter_gets_gits_text_merge():
    base = "# Runbook\n\nStep one.\n\nStep two.\n"
    clean_merge, clean = merge(base, base.replace("one.", "one!"), base.replace("two.", "two!"), "notes/run.md")
    assert clean and clean_merge == "# Runbook\n\nStep one!\n\nStep two!\n"
    conflicted, clean = merge(base, base.replace("one.", "one?"), base.replace("one.", "one!"), "notes/run.md")
    assert not clean and "<<<<<<< notes/run.md (ours)\nStep one?\n=======\nStep one!\n>>>>>>> notes/run.md (theirs)" \
        in conflicted


def test_broken_yaml_on_one_side_is_a_normal_git_conflict_not_a_crash():
    ours = NOTE.replace("score: 7.0", "score: [7.0")
    theirs = NOTE.replace("score: 7.0", "score: 8.0")
    merged, clean = merge(NOTE, ours, theirs)
    assert not clean and "<<<<<<<" in merged and "score: [7.0" in merged and "score: 8.0" in merged
    # far from each other, git's line merge is clean and keeps the broken line for a person to fix
    theirs = NOTE.replace("Renewal is due in March.", "Renewal is due in April.")
    merged, clean = merge(NOTE, ours, theirs)
    assert clean and "score: [7.0" in merged and "April" in merged


def test_a_binary_file_is_left_as_ours_and_reported_as_a_conflict():
    base, ours, theirs = b"\x89PNG\x00\x01", b"\x89PNG\x00\x02", b"\x89PNG\x00\x03"
    assert merge_notes(base, ours, theirs, "memories/img.png") == (ours, False)
    latin1 = "---\nid: x\n---\ncaf\xe9\n".encode("latin-1")  # not UTF-8
    assert merge_notes(latin1, latin1 + b"a", latin1 + b"b", "memories/x.md")[1] is False


def test_a_ten_megabyte_body_merges():
    paragraph = "A long line of words that repeats to make a large memory body. " * 3
    body = "".join(f"{i}: {paragraph}\n\n" for i in range(52_000))
    assert len(body) > 10_000_000
    base = NOTE.split("---\n客户")[0] + "---\n" + body
    ours = base.replace("0: A long", "0: An edited long", 1).replace("score: 7.0", "score: 8.0")
    theirs = base.replace("51999: A long", "51999: A changed long")
    merged, clean = merge(base, ours, theirs)
    assert clean and CALLOUT not in merged and meta(merged)["score"] == 8.0
    assert merged.startswith(ours[:400]) and merged.endswith(theirs[-400:])


# --- the command and a real git merge --------------------------------------------------------


def test_the_command_writes_the_result_into_ours_and_exits_by_gits_contract(tmp_path):
    paths = [tmp_path / name for name in ("O", "A", "B")]
    ours = NOTE.replace("score: 7.0", "score: 8.0")
    theirs = NOTE.replace("client_zhangsan]", "client_zhangsan, renewal]")
    for path, text in zip(paths, (NOTE, ours, theirs)):
        path.write_text(text, encoding="utf-8")
    done = CliRunner().invoke(app, ["merge-driver", *map(str, paths), "memories/note.md"])
    assert done.exit_code == 0, done.output
    assert meta(paths[1].read_text(encoding="utf-8"))["tags"][-1] == "renewal"
    for path, text in zip(paths, ("a\nb\n", "a\nB\n", "a\nβ\n")):  # not a note, and conflicting
        path.write_text(text, encoding="utf-8")
    fast = subprocess.run([sys.executable, "-m", "vaultmem", "merge-driver", *map(str, paths), "x.md"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert fast.returncode == 1 and "<<<<<<< x.md (ours)" in paths[1].read_text(encoding="utf-8")
    missing = CliRunner().invoke(app, ["merge-driver", str(tmp_path / "nope"), *map(str, paths[1:]), "x.md"])
    assert missing.exit_code == 1 and "No such file" in missing.output


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=check)


def test_a_real_git_merge_of_adjacent_key_edits_succeeds_through_the_driver(tmp_path):
    _merge_adjacent_key_edits(tmp_path, driver_command())


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for the interpreter")
def test_the_driver_runs_from_an_interpreter_whose_path_holds_a_space_a_dollar_and_quotes(tmp_path, monkeypatch):
    """Issue 28 item 6: git hands the driver line to a shell, which expanded `$…` and split at a `"`
    of the plainly double-quoted path; it is quoted as the pre-commit hook's is."""
    odd = tmp_path / 'venv $HOME "it\'s" here'
    odd.mkdir()
    python = odd / "python"
    python.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n", encoding="utf-8")
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    _merge_adjacent_key_edits(tmp_path, driver_command())


def _merge_adjacent_key_edits(tmp_path: Path, driver: str) -> None:
    """Two branches edit adjacent keys of one note; git merges them through the driver configured as `driver`."""
    repo = tmp_path / "vault"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _git(repo, "config", "merge.vaultmem.driver", driver)
    (repo / ".gitattributes").write_text("*.md merge=vaultmem\n", encoding="utf-8")
    note = repo / "memories" / "合同编号.md"
    note.parent.mkdir()
    note.write_text(NOTE, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "desk")
    note.write_text(NOTE.replace("client_zhangsan]", "client_zhangsan, renewal]").replace(
        "[laptop-3f2a:3]", "[laptop-3f2a:3, desk-9b1c:1]"), encoding="utf-8")
    _git(repo, "commit", "-qam", "desk adds a tag")
    _git(repo, "checkout", "-q", "main")
    note.write_text(NOTE.replace("score: 7.0", "score: 8.0").replace("laptop-3f2a:3", "laptop-3f2a:4"),
                    encoding="utf-8")
    _git(repo, "commit", "-qam", "laptop raises the score")
    done = _git(repo, "merge", "--no-edit", "desk", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    props = meta(note.read_text(encoding="utf-8"))
    assert props["score"] == 8.0 and props["tags"][-1] == "renewal"
    assert props["version"] == ["laptop-3f2a:4", "desk-9b1c:1"]
    assert _git(repo, "status", "--porcelain").stdout == ""


def test_the_benchmark_runs_and_writes_its_figures(tmp_path):
    out = tmp_path / "merge.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "merge_driver.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text(encoding="utf-8"))
    for key in ("merge_ms", "merge_p95_ms", "cli_ms", "python_start_ms", "git_merge_file_ms"):
        assert figures[key] > 0, key
    assert set(figures["by_kind"]) == {"properties", "paragraphs", "conflict"}
