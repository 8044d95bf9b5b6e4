"""Behaviour users rely on that a small change of a constant or a code path would break silently
(issue 13 items 8 and 12): each test here fails under such a mutation."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from vaultmem import Vault
from vaultmem.text.dedup import restates
from vaultmem.notes.note import parse_note
from vaultmem.text.terms import plain_text

WHEN = "2026-11-29T14:00:00+00:00"
NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc).timestamp()


def _meta(vault: Vault, result) -> dict:
    return parse_note((vault.root / result.path).read_bytes()).meta


# -- the tags channel ------------------------------------------------------------------------------
def test_a_query_word_finds_the_tag_it_names_as_written_not_only_as_stemmed(vault):
    """`billing` stems to `bill`; the tag is `billing`: the tags channel must match it as `ops` does."""
    billing = vault.remember("Invoices go out on the first of the month", tags=["billing"])
    ops = vault.remember("The pager rotation changes on Mondays", tags=["ops"])
    (hit,) = [h for h in vault.recall("billing", now=NOW) if h.id == billing.id]
    assert hit.channels["tags"] == 1.0
    (hit,) = [h for h in vault.recall("ops", now=NOW) if h.id == ops.id]
    assert hit.channels["tags"] == 1.0
    assert vault.recall("deploying", now=NOW) == []  # (a word no note or tag holds still finds nothing)


def test_the_tags_weight_adds_its_share_to_the_final_score(vault):
    """Two notes alike in all but their tag: the tagged one ranks higher by exactly weight x share
    (one of the query's two words names its tag: share 1/2; the default weight is 0.5)."""
    text = "Invoices go out on the first of the month"
    tagged = vault.remember(text, tags=["billing"], timestamp=WHEN)
    other = vault.remember(text + " without fail", tags=["ops"], timestamp=WHEN)
    hits = {h.id: h for h in vault.recall("billing invoices", now=NOW, record_access=False)}
    assert hits[tagged.id].channels["tags"] == 0.5 and hits[other.id].channels["tags"] == 0.0
    weights = vault.settings.ranking.weights
    assert weights["tags"] == 0.5
    contribution = sum(weights[c] * (hits[tagged.id].channels[c] - hits[other.id].channels[c]) for c in weights
                       if c != "tags")
    assert hits[tagged.id].final - hits[other.id].final == pytest.approx(contribution + 0.5 * 0.5, abs=1e-4)
    assert hits[tagged.id].final > hits[other.id].final


# -- the near-duplicate threshold ---------------------------------------------------------------------
OLD = "The quarterly billing report goes to the finance team every Monday morning"
JUST_ABOVE = "The quarterly billing report goes to the finance team morning"  # likeness 0.904
JUST_BELOW = "billing report goes to the finance team every Monday morning"  # likeness 0.896


def test_the_restatements_on_either_side_of_the_threshold_are_where_the_test_needs_them():
    assert 0.9 < restates(plain_text(JUST_ABOVE), plain_text(OLD)) < 0.91
    assert 0.89 < restates(plain_text(JUST_BELOW), plain_text(OLD)) < 0.9


@pytest.mark.parametrize(("new", "action"), [(JUST_ABOVE, "merged"), (JUST_BELOW, "created")])
def test_a_restatement_merges_at_the_near_duplicate_threshold_and_not_below_it(vault, new, action):
    assert float(vault.settings.write.near_duplicate) == 0.9
    old = vault.remember(OLD, timestamp="2026-11-01T09:00:00+00:00")
    result = vault.remember(new, timestamp="2026-11-03T09:00:00+00:00")  # a day later: it strengthens the note
    assert result.action == action
    assert (result.id == old.id) == (action == "merged")


# -- atomic writes ----------------------------------------------------------------------------------
def test_a_write_that_fails_before_its_rename_leaves_the_old_note_as_it_was(vault, monkeypatch):
    """A full disk while a merge writes the note: the note keeps its old bytes, no temp file stays."""
    old = vault.remember("Invoice INV-2024-0042 is due on 2026-12-20")
    path = vault.root / old.path
    before = path.read_bytes(), path.stat().st_mtime_ns
    real_fsync = os.fsync

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(Exception, match="No space left on device"):
        vault.remember("Invoice INV-2024-0042 is due on 2026-12-20, paid by bank transfer")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


# -- a supersede inside one batch ---------------------------------------------------------------------
def test_a_batch_that_states_a_new_value_supersedes_its_own_earlier_item(vault):
    vault.add_entity("张三", aliases=["老张"])
    first, second = vault.remember_many([{"text": "张三的合同编号是 CT2024-0771"},
                                         {"text": "张三的合同编号改为 CT2024-0876"}])
    assert first.action == "created" and second.action == "created"
    assert second.supersedes == first.id
    old = _meta(vault, first)
    assert old["status"] == "superseded" and old["superseded_by"] == f"[[{second.title}]]"
    assert _meta(vault, second)["supersedes"] == f"[[{first.title}]]"
    assert [h.id for h in vault.recall("张三 合同编号")][:1] == [second.id]
    assert first.id not in [h.id for h in vault.recall("张三 合同编号")]


def test_a_restatement_a_word_shorter_shares_a_near_duplicate_key_with_the_note_it_restates():
    """The candidates of a merge come from min-hash keys: a key missed is a duplicate note written.
    (The keys of index schema 5, one hash XOR-ed with six masks, missed one such pair in nine.)"""
    import random
    import re
    from pathlib import Path

    from vaultmem.text.dedup import sketch_keys

    sample = Path(__file__).resolve().parent.parent / "sample-vault" / "memories"
    vocabulary = sorted({w for p in sample.glob("*.md") for w in re.findall(r"[a-z]{3,}", p.read_text("utf-8"))})
    rng = random.Random(13)
    missed = 0
    for _ in range(600):
        words = rng.sample(vocabulary, rng.randint(8, 16))
        shorter = words[:]
        del shorter[rng.randrange(len(shorter))]
        missed += not set(sketch_keys(" ".join(words))) & set(sketch_keys(" ".join(shorter)))
    assert len(vocabulary) > 200 and missed == 0
