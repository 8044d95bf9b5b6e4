"""Hindsight feedback, corrections, pins, per-note decay policy, adaptive λ and what decay hid (issue 17)."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.errors import VaultmemError
from vaultmem.store.events import append_events
from vaultmem.surfaces.cli import app
from vaultmem.text import decay as rules

from .conftest import write_note

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc).timestamp()
HOUR = 3600.0


def _at(hours_ago: float) -> str:
    return dt.datetime.fromtimestamp(NOW - hours_ago * HOUR, dt.timezone.utc).isoformat()


def _note(vault: Vault, name: str, body: str, hours_ago: float = 0.0, score: float = 5, **props) -> str:
    """A memory written by hand (as in Obsidian) with these extra properties; returns its id."""
    ident = f"01JDX3K8Q4W2M9ZC6T7B5N{len(list(vault.folders['memories'].glob('*.md'))):04d}"
    extra = "".join(f"{k}: {v}\n" for k, v in props.items())
    write_note(vault, f"memories/{name}.md", f"---\nid: {ident}\ntimestamp: {_at(hours_ago)}\nscore: {score:g}\n"
                                              f"lifecycle: note\n{extra}---\n{body}\n")
    return ident


def _titles(vault: Vault, query: str = "", **options) -> list[str]:
    vault.refresh()
    return [h.title for h in vault.recall(query, now=NOW, record_access=False, **options)]


# -- the rules, with plain numbers ----------------------------------------------------------------
@pytest.mark.parametrize("text, hours", [("30d", 720.0), ("12h", 12.0), ("2w", 336.0), ("1.5d", 36.0), ("1y", 8766.0),
                                         (" 3 D ", 72.0)])
def test_durations_read_as_hours(text, hours):
    assert rules.duration_hours(text) == hours


@pytest.mark.parametrize("text", ["30", "0d", "d", "3 days", "-2h", True, 30, None, "1e400d"])
def test_what_is_no_duration_is_none(text):
    assert rules.duration_hours(text) is None


def test_a_policy_keeps_the_good_values_and_names_the_bad_ones():
    good = rules.read_policy({"half_life": "2w", "decay_floor": 0.25, "pinned": True})
    assert good.to_dict() == {"half_life_hours": 336.0, "decay_floor": 0.25, "pinned": True} and not good.problems
    bad = rules.read_policy({"half_life": "soon", "decay_floor": 1.5, "pinned": "yes please"})
    assert bad.to_dict() == {} and len(bad.problems) == 3
    assert rules.read_policy({"pinned": None}).to_dict() == {}


def test_feedback_weight_saturates_both_ways():
    assert rules.feedback_weight(0, 3, 2.0) == 1.0
    assert 1.0 < rules.feedback_weight(1, 3, 2.0) < rules.feedback_weight(2, 3, 2.0) < 2.0
    assert rules.feedback_weight(100, 3, 2.0) == pytest.approx(2.0)
    assert rules.feedback_weight(10_000, 3, 2.0) <= 2.0
    assert rules.feedback_weight(-1, 3, 2.0) == pytest.approx(1 / rules.feedback_weight(1, 3, 2.0))
    assert rules.feedback_weight(-100, 3, 2.0) == pytest.approx(0.5)
    assert rules.feedback_weight(5, 3, 1.0) == 1.0  # max weight 1: feedback off
    assert rules.net_feedback({"useful": 3, "confirm": 1, "wrong": 1, "outdated": 1}) == 2


def test_lambda_from_pins_is_the_mean_bounded():
    assert rules.pin_lambda(0.5, 30.0) == pytest.approx(math.log(2) / 30)
    assert rules.pin_lambda(0.5, 0.0) is None and rules.pin_lambda(0.0, 10.0) is None
    both = rules.estimate_lambda([(0.5, 30.0), (0.25, 30.0)], (6.0, 8766.0))
    assert both == pytest.approx((math.log(2) / 30 + math.log(4) / 30) / 2)
    assert rules.estimate_lambda([(2.0, 10.0)], (6.0, 8766.0)) == pytest.approx(math.log(2) / 8766)  # gained: slowest
    assert rules.estimate_lambda([(1e-9, 1.0)], (6.0, 8766.0)) == pytest.approx(math.log(2) / 6)  # fastest bound
    assert rules.estimate_lambda([], (6.0, 8766.0)) is None


# -- feedback --------------------------------------------------------------------------------------
def test_useful_and_confirm_rewrite_no_note_and_raise_it(vault):
    _note(vault, "Alpha", "The build server runs the nightly jobs at two.")
    _note(vault, "Bravo", "The build server runs the nightly jobs at three.")
    before = {p.name: p.read_bytes() for p in vault.folders["memories"].glob("*.md")}
    top, low = _titles(vault, "build server nightly")[:2]  # an exact tie: the newer note leads
    raised = vault.recall("build server nightly", now=NOW, record_access=False)[1].id
    for verdict in ("useful", "confirm"):
        result = vault.feedback(raised, verdict)
        assert result.action == "recorded" and result.changed == [] and result.status == "active"
    assert {p.name: p.read_bytes() for p in vault.folders["memories"].glob("*.md")} == before
    hits = vault.recall("build server nightly", now=NOW, record_access=False)
    assert [h.title for h in hits] == [low, top]
    assert hits[0].feedback == {"weight": pytest.approx(rules.feedback_weight(2, 3, 2.0), abs=1e-6), "up": 2, "down": 0}
    assert hits[1].feedback == {}


def test_wrong_flags_an_active_note_with_a_one_line_edit_and_lowers_it(vault):
    first = _note(vault, "Alpha", "The build server runs the nightly jobs at two.")
    second = _note(vault, "Bravo", "The build server runs the nightly jobs at three.")

    def strength() -> dict[str, float]:
        vault.refresh()
        return {h.id: h.effective for h in vault.recall("build server nightly", now=NOW, record_access=False)}

    vault.feedback(second, "useful")
    assert strength()[second] > strength()[first]
    path = vault.folders["memories"] / "Bravo.md"
    before = path.read_text(encoding="utf-8").splitlines()
    result = vault.feedback(second, "wrong", note="it runs at four now")
    after = path.read_text(encoding="utf-8").splitlines()
    assert result.status == "needs-verification" and result.changed == ["status"]
    assert len(after) == len(before) + 1  # no status line before: one line added, none changed
    assert [line for line in after if line not in before] == ["status: needs-verification"]
    assert strength()[second] == strength()[first]  # one up, one down: weight 1
    vault.feedback(second, "outdated")
    assert vault.get(second).status == "needs-verification"
    assert strength()[second] < strength()[first]
    logged = [json.loads(line) for f in vault.device_dir.glob("events-*.jsonl") for line in f.read_text().splitlines()]
    assert [e["verdict"] for e in logged if e["event"] == "feedback"] == ["useful", "wrong", "outdated"]
    assert logged[1]["note"] == "it runs at four now"


def test_a_superseded_note_keeps_its_status_under_wrong(vault):
    old = _note(vault, "Old", "The gate code is 1234.", status="superseded")
    assert vault.feedback(old, "wrong").changed == []
    assert vault.get(old).status == "superseded"


def test_a_hundred_useful_never_beat_a_much_better_match(vault):
    good = _note(vault, "Exact", "Invoice INV-7731 from Emily Carter was paid on March 3 by wire transfer.")
    weak = _note(vault, "Loose", "Emily sent something about payments once.")
    append_events(vault.device_dir, "events", [{"event": "feedback", "id": weak, "verdict": "useful", "ts": NOW}] * 100)
    vault.index.fold_events()
    hits = vault.recall("invoice INV-7731 paid wire transfer Emily", now=NOW, record_access=False)
    assert hits[0].id == good and hits[1].id == weak
    assert hits[1].feedback["up"] == 100 and hits[1].feedback["weight"] <= 2.0


def test_feedback_from_another_device_counts_once_its_log_is_there(vault):
    _note(vault, "Alpha", "The build server runs the nightly jobs at two.")
    second = _note(vault, "Bravo", "The build server runs the nightly jobs at three.", hours_ago=1)
    assert _titles(vault, "build server nightly")[0] == "Alpha"  # the fresher one, before any feedback
    other = vault.state / "devices" / "laptop-9f00"  # as a git pull brings it
    append_events(other, "events", [{"event": "feedback", "id": second, "verdict": "useful", "ts": NOW}])
    assert _titles(vault, "build server nightly")[0] == "Bravo"


def test_a_bad_verdict_or_an_entity_is_refused(vault):
    ident = _note(vault, "Alpha", "Something.")
    with pytest.raises(VaultmemError, match="verdict"):
        vault.feedback(ident, "great")
    vault.add_entity("张三")
    with pytest.raises(VaultmemError, match="not a memory"):
        vault.feedback("张三", "useful")


def test_a_bad_feedback_line_is_skipped_and_named_by_doctor(vault):
    ident = _note(vault, "Alpha", "The build server runs the nightly jobs at two.")
    append_events(vault.device_dir, "events", [{"event": "feedback", "id": ident, "verdict": "splendid", "ts": NOW}])
    assert _titles(vault, "build server") == ["Alpha"]
    assert not vault.recall("build server", now=NOW, record_access=False)[0].feedback
    assert any("verdict" in str(item) for item in vault.doctor().to_dict().values())


# -- correct ---------------------------------------------------------------------------------------
def test_correct_supersedes_the_old_note_and_keeps_it(vault):
    old = vault.remember("The staging database listens on port 5433", tags=["staging"])
    new = vault.correct(old.id, "The staging database listens on port 6543")
    assert new.action == "created" and new.supersedes == old.id
    assert "staging" in new.tags  # carried over from the old note
    kept = vault.get(old.id)
    assert kept.status == "superseded" and (vault.root / kept.path).exists()
    assert [h.id for h in vault.recall("staging database port")] == [new.id]
    with pytest.raises(VaultmemError, match="already superseded"):
        vault.correct(old.id, "again")


# -- pins and per-note policy ----------------------------------------------------------------------
def test_pin_and_unpin_edit_one_line_and_switch_decay_off_and_on(vault):
    ident = _note(vault, "Old habit", "Prefers green tea in the afternoon.", hours_ago=300)
    path = vault.folders["memories"] / "Old habit.md"
    original = path.read_text(encoding="utf-8")
    assert vault.recall("green tea", now=NOW, record_access=False)[0].decay < 0.01
    pinned = vault.pin(ident)
    assert pinned.action == "pinned" and pinned.event["age_hours"] == pytest.approx(vault.recall(
        "green tea", record_access=False)[0].decay * 0 + pinned.event["age_hours"])
    assert path.read_text(encoding="utf-8") == original.replace("---\nPrefers", "pinned: true\n---\nPrefers")
    hit = vault.recall("green tea", now=NOW, record_access=False)[0]
    assert hit.decay == 1.0 and hit.policy == {"pinned": True}
    assert vault.pin(ident).action == "unchanged"
    assert vault.unpin(ident).action == "unpinned"
    assert path.read_text(encoding="utf-8") == original
    assert vault.recall("green tea", now=NOW, record_access=False)[0].decay < 0.01
    assert vault.unpin(ident).action == "unchanged"


def test_a_hand_set_pin_in_obsidian_style_counts_the_same(vault):
    write_note(vault, "memories/Tea.md", "---\nid: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\ntimestamp: " + _at(500)
               + "\nlifecycle: task\ntags:\n  - drinks\npinned: true\n---\nPrefers green tea.\n")
    hit = vault.recall("green tea", now=NOW, record_access=False)[0]
    assert hit.decay == 1.0 and hit.policy == {"pinned": True}


def test_half_life_and_floor_override_the_lifecycle_and_show(vault):
    _note(vault, "Slow", "Alpha memory about the harbour.", hours_ago=720, half_life="30d")
    _note(vault, "Floored", "Bravo memory about the harbour.", hours_ago=720, decay_floor=0.4)
    _note(vault, "Plain", "Charlie memory about the harbour.", hours_ago=720)
    vault.refresh()
    hits = {h.title: h for h in vault.recall("harbour", now=NOW, record_access=False)}
    assert hits["Slow"].decay == pytest.approx(0.5, abs=1e-6) and hits["Slow"].policy == {"half_life_hours": 720.0}
    assert hits["Floored"].decay == pytest.approx(0.4) and hits["Floored"].policy == {"decay_floor": 0.4}
    assert hits["Plain"].decay == pytest.approx(0.5 ** (720 / 30), abs=1e-6) and hits["Plain"].policy == {}
    assert [h.title for h in vault.recall("", now=NOW, record_access=False)] == ["Slow", "Floored", "Plain"]


def test_bad_policy_values_are_ignored_by_recall_and_reported_by_doctor(vault):
    _note(vault, "Odd", "Delta memory about the harbour.", hours_ago=720, half_life="someday", decay_floor=7,
          pinned="maybe")
    hit = vault.recall("harbour", now=NOW, record_access=False)[0]
    assert hit.policy == {} and hit.decay == pytest.approx(0.5 ** 24, abs=1e-6)
    problems = json.dumps(vault.doctor().to_dict())
    assert "half_life" in problems and "decay_floor" in problems and "pinned" in problems


# -- adaptive λ ------------------------------------------------------------------------------------
def test_adaptive_lambda_learns_from_pins_and_is_off_by_default(vault):
    kept = _note(vault, "Kept", "Echo memory about the lighthouse.", hours_ago=60)
    other = _note(vault, "Other", "Foxtrot memory about the lighthouse.", hours_ago=60)
    vault.record_access([kept], NOW - 20 * HOUR)  # used since its write: stronger for its age
    vault.refresh()
    result = vault.pin(kept, now=NOW)
    ratio, age = result.event["ratio"], result.event["age_hours"]
    assert age == pytest.approx(60.0) and 0 < ratio < 1
    report = vault.lambda_estimate()
    assert report["enabled"] is False and report["lambda"] == pytest.approx(-math.log(ratio) / 60.0)
    assert [e["id"] for e in report["events"]] == [kept] and report["events"][0]["counted"]
    fixed = vault.recall("Foxtrot lighthouse", now=NOW, record_access=False)[0]
    assert fixed.id == other and fixed.decay == pytest.approx(0.5 ** (60 / 30), abs=1e-6)
    vault.configure("ranking", lambda_mode="adaptive")
    adaptive = vault.recall("Foxtrot lighthouse", now=NOW, record_access=False)[0]
    assert adaptive.decay == pytest.approx(math.exp(-report["lambda"] * 60), abs=1e-5) and adaptive.decay > fixed.decay
    vault.unpin(kept, now=NOW + 1)
    assert vault.lambda_estimate()["lambda"] is None  # an undone pin teaches nothing
    assert vault.recall("Foxtrot lighthouse", now=NOW, record_access=False)[0].decay == fixed.decay


# -- what decay hid --------------------------------------------------------------------------------
def test_suppressed_lists_strong_matches_decay_pushed_out(vault):
    _note(vault, "Old exact", "The harbour crane inspection report for pier seven.", hours_ago=2000, score=8)
    for n in range(3):
        _note(vault, f"Fresh {n}", f"The harbour crane inspection report for pier {n}.", hours_ago=1)
    vault.refresh()
    hits = vault.recall("harbour crane inspection report pier", now=NOW, record_access=False, limit=3, explain=True)
    assert "Old exact" not in [h.title for h in hits]
    assert [s["title"] for s in hits.suppressed] == ["Old exact"]
    hidden = hits.suppressed[0]
    assert hidden["rank_without_decay"] <= 3 and hidden["decay"] < 0.01 and hidden["lexical"] >= 0.5
    plain = vault.recall("harbour crane inspection report pier", now=NOW, record_access=False, limit=3)
    assert plain.suppressed == [] and [h.id for h in plain] == [h.id for h in hits]
    assert vault.recall("harbour crane", now=NOW, record_access=False, limit=10, explain=True).suppressed == []


# -- the CLI ---------------------------------------------------------------------------------------
def _cli(vault: Vault, *args: str):
    return CliRunner().invoke(app, [*args, "--vault", str(vault.root)])


def test_cli_feedback_pin_stats_lambda_and_recall_explain(vault):
    ident = _note(vault, "Tea", "Prefers green tea in the afternoon.", hours_ago=5)
    done = _cli(vault, "feedback", ident, "wrong", "--note", "coffee now", "--json")
    assert done.exit_code == 0 and json.loads(done.output)["status"] == "needs-verification"
    assert _cli(vault, "feedback", ident, "nope").exit_code == 1
    assert "pinned: memories/Tea.md" in _cli(vault, "pin", "Tea").output
    shown = _cli(vault, "stats", "--lambda", "--json")
    assert shown.exit_code == 0 and json.loads(shown.output)["events"][0]["id"] == ident
    assert "adaptive lambda  off" in _cli(vault, "stats", "--lambda").output
    explained = _cli(vault, "recall", "green tea", "--explain")
    assert "pinned" in explained.output and "feedback=" in explained.output
    as_json = json.loads(_cli(vault, "recall", "green tea", "--explain", "--json").output)
    assert set(as_json) == {"hits", "suppressed"} and as_json["hits"][0]["policy"] == {"pinned": True}
    assert isinstance(json.loads(_cli(vault, "recall", "green tea", "--json").output), list)
    assert "unpinned" in _cli(vault, "unpin", ident).output
    fixed = _cli(vault, "correct", ident, "Prefers black coffee in the afternoon.", "--json")
    assert fixed.exit_code == 0 and json.loads(fixed.output)["supersedes"] == ident


def test_the_sample_vault_shows_a_pinned_note_and_one_that_needs_verification(sample):
    pinned = sample.recall("concise answers", record_access=False)[0]
    assert pinned.title == "Prefers concise answers" and pinned.policy == {"pinned": True} and pinned.decay == 1.0
    flagged = sample.recall("billing service owner", record_access=False)
    assert any(h.status == "needs-verification" and h.title == "Li Wei owns the billing service" for h in flagged)


def test_confirm_on_a_flagged_note_makes_it_active_again_and_gives_back_its_bytes(vault):
    ident = _note(vault, "Alpha", "The build server runs the nightly jobs at two.", status="active")
    path = vault.folders["memories"] / "Alpha.md"
    before = path.read_bytes()
    assert vault.feedback(ident, "wrong").status == "needs-verification"
    assert vault.feedback(ident, "useful").changed == []  # a use is no check
    done = vault.feedback(ident, "confirm")
    assert done.status == "active" and done.changed == ["status"]
    assert path.read_bytes() == before  # the one line back as it was
    assert vault.feedback(ident, "confirm").changed == []  # an active note is not rewritten
