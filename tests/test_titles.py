"""Titles read like the text (issue 13 item 6): what a file name cannot hold becomes a look-alike, not
a space, and framing cue words stay out of titles; links to such titles keep resolving."""

from __future__ import annotations

import pytest

from vaultmem.write.drafts import make_title
from vaultmem.notes.note import parse_note


def test_a_time_keeps_its_colon_as_a_look_alike_and_every_link_to_it_resolves(vault):
    first = vault.remember("Deploy window is Tuesday 22:00")
    assert first.title == "Deploy window is Tuesday 22\u223600" and first.path.endswith("22\u223600.md")
    later = vault.remember("Deploy window moved to Wednesday 21:00", supersedes=first.id)
    assert parse_note((vault.root / later.path).read_bytes()).meta["supersedes"] == f"[[{first.title}]]"
    assert vault.doctor().broken_links == []  # the day note's and the supersede's links name the files
    assert vault.get("Deploy window is Tuesday 22:00").id == first.id  # the title as typed finds it
    assert [h.id for h in vault.recall("deploy window 22:00", include=["superseded"])][:1] == [first.id]


@pytest.mark.parametrize(("text", "title"), [
    ("记住：客户张三的合同编号是 CT2024-0876", "客户张三的合同编号是 CT2024-0876"),
    ("Remember: the wifi code rotates monthly", "The wifi code rotates monthly"),
    ("From now on, answer in English", "Answer in English"),
    ("note to self: renew the TLS certificate", "Renew the TLS certificate"),
    ("Always use UTC in logs", "Always use UTC in logs"),  # what the memory says, not a frame
    ("Remembering names is hard", "Remembering names is hard"),
])
def test_framing_cues_stay_out_of_titles(text, title):
    assert make_title(text) == title


def test_the_body_keeps_the_cue_the_title_leaves_out(vault):
    result = vault.remember("记住：客户张三的合同编号是 CT2024-0876")
    assert result.title == "客户张三的合同编号是 CT2024-0876"
    assert "记住" in (vault.root / result.path).read_text(encoding="utf-8")
