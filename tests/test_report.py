"""`vaultmem report` (issue 30 item 4): the figures are the ranking's own numbers, replayed at past dates;
every string from a note is escaped; the file stands alone. The browser half is test_report_browser.py."""

from __future__ import annotations

import json
import math
import re

import pytest
from typer.testing import CliRunner

from vaultmem import OwnerOnly, Vault
from vaultmem.overview import history
from vaultmem.overview.figures import gather
from vaultmem.surfaces.cli import app

from .conftest import write_note

DAY, HOUR = 86400.0, 3600.0
NOW = 1_800_000_000.0  # 2027-01-15: every note of these tests is written before it
HOSTILE_TITLE = "<img src=x onerror=alert(1)>"
HOSTILE_SOURCE = "</script><script>alert(2)</script>"
HOSTILE_ENTITY = "<svg onload=alert(3)>"


def iso(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat()


def memory(vault: Vault, title: str, *, written: float, score: float = 4.0, lifecycle: str = "event",
           trust: str = "agent", source: str = "hermes", body: str = "", extra: str = "", note_id: str = "") -> str:
    note_id = note_id or f"01TEST{abs(hash(title)) % 10**20:020d}"
    write_note(vault, f"memories/{title}.md",
               f"---\nid: {note_id}\ntype: event\nscore: {score}\ntimestamp: {iso(written)}\nsource: {json.dumps(source)}\n"
               f"lifecycle: {lifecycle}\ntrust: {trust}\nstatus: active\nnamespace: shared\n{extra}---\n"
               f"{body or title}\n")
    return note_id


def figures(vault: Vault, **options):
    vault.refresh()
    return gather(vault, lambda: vault.doctor(strict=True), now=options.pop("now", NOW), **options)


def test_one_notes_curve_steps_at_each_use_and_decays_by_its_half_life_between(vault):
    written = NOW - 30 * DAY
    note = memory(vault, "Quarterly review moved", written=written, score=4.0, lifecycle="event")
    used = written + 7 * DAY  # one half-life (event: 168 h) after the write
    vault.record_access([note], now=used)
    vault.feedback(note, "useful", now=used + 7 * DAY)
    curve = figures(vault, note=note).note
    at = dict(zip(curve.times.tolist(), curve.values.tolist()))
    reward = vault.settings.reinforcement.reward
    assert at[used - 1e-3] == pytest.approx(4.0 * 0.5, rel=1e-6)  # decayed from the write, no use yet
    assert at[used] == pytest.approx(4.0 + reward, rel=1e-6)  # a use adds its reward and resets the clock
    cfg = vault.settings.ranking
    weight = vault.settings.ranking.feedback_max_weight ** math.tanh(1 / cfg.feedback_scale)
    assert at[used + 7 * DAY] == pytest.approx((4.0 + reward) * weight * 0.5, rel=1e-6)
    assert [(e["kind"], e["detail"]) for e in curve.events] == [("access", ""), ("feedback", "useful")]


def test_one_notes_strength_today_is_the_one_recall_ranks_it_with(vault):
    from vaultmem.lifecycle.feedback import strength_ratio

    note = memory(vault, "Deploy window is Tuesday", written=NOW - 12 * DAY, score=6.0, lifecycle="preference")
    vault.record_access([note], now=NOW - 5 * DAY)
    vault.feedback(note, "wrong", now=NOW - 2 * DAY)
    curve = figures(vault, note=note).note
    today = float(curve.values[list(curve.times).index(NOW)])
    ratio, _ = strength_ratio(vault, vault.resolve(note), NOW)
    assert today == pytest.approx(ratio * 6.0, rel=1e-9)


def test_a_pin_stops_the_decay_from_its_event_on(vault):
    written = NOW - 20 * DAY
    note = memory(vault, "Office door code rotates", written=written, score=8.0, lifecycle="event")
    vault.pin(note, now=written + 14 * DAY)
    curve = figures(vault, note=note).note
    at = dict(zip(curve.times.tolist(), curve.values.tolist()))
    assert at[written + 14 * DAY - 1e-3] == pytest.approx(8.0 * 0.25, rel=1e-6)
    assert at[written + 14 * DAY] == pytest.approx(8.0)  # pinned: no decay at all, as ranking has it
    assert curve.values[-1] == pytest.approx(8.0)


def test_the_vault_curve_is_each_memorys_strength_as_recall_rated_it_on_each_date(vault):
    """Checked against the rule written out by hand (SPEC §4), not against the code it tests."""
    t0 = NOW - 40 * DAY
    a = memory(vault, "Ada prefers morning calls", written=t0, score=4.0, lifecycle="event")
    memory(vault, "Build server moved racks", written=t0 + 10 * DAY, score=6.0, lifecycle="event")
    vault.record_access([a], now=t0 + 21 * DAY)
    f = figures(vault)
    reward, hl = vault.settings.reinforcement.reward, 168 * HOUR

    def by_hand(t: float) -> float:
        total = 0.0
        if t >= t0:
            used = t >= t0 + 21 * DAY
            ref = t0 + 21 * DAY if used else t0
            total += (4.0 + (reward if used else 0)) * 0.5 ** ((t - ref) / hl)
        if t >= t0 + 10 * DAY:
            total += 6.0 * 0.5 ** ((t - t0 - 10 * DAY) / hl)
        return total

    summed = sum(f.curve.series.values())
    assert list(f.curve.series) == ["event"]
    assert f.curve.times[0] == pytest.approx(t0) and f.curve.times[-1] == pytest.approx(NOW + 90 * DAY)
    for t, value in zip(f.curve.times, summed):
        assert value == pytest.approx(by_hand(float(t)), rel=1e-6, abs=1e-9)
    assert f.curve.written.tolist()[0] == 1 and f.curve.written.tolist()[-1] == 2


def test_what_decay_takes_within_30_and_90_days_and_what_gc_then_does(vault):
    threshold = vault.settings.gc.threshold
    hl = 168 * HOUR

    def written_to_cross_in(days: float, score: float) -> float:
        # score * 0.5 ** (age / hl) falls below the threshold at age = hl * log2(score / threshold)
        return NOW + days * DAY - hl * math.log2(score / threshold)

    memory(vault, "Standup moved to ten", written=written_to_cross_in(10.5, 4.0))
    memory(vault, "Printer on floor two is fixed", written=written_to_cross_in(50.5, 8.0))
    memory(vault, "Ask Li about the budget", written=written_to_cross_in(20.5, 4.0), trust="user")
    pinned = memory(vault, "Door code", written=written_to_cross_in(5.5, 4.0))
    vault.pin(pinned, now=NOW - DAY)
    memory(vault, "Faded long ago", written=NOW - 200 * DAY)
    memory(vault, "Forever fact", written=NOW - 300 * DAY, lifecycle="permanent")
    fading = figures(vault).fading
    assert fading.within == {30: 2, 90: 3} and fading.below_now == 1
    listed = {n["title"]: n for n in fading.notes}
    assert list(listed) == ["Standup moved to ten", "Ask Li about the budget", "Printer on floor two is fixed"]
    assert listed["Standup moved to ten"]["crosses"] == NOW + 11 * DAY  # the first whole day below
    unused = vault.settings.gc.unused_days * DAY
    standup_written = written_to_cross_in(10.5, 4.0)
    assert listed["Standup moved to ten"]["gc"] == pytest.approx(max(NOW + 11 * DAY, standup_written + unused))
    assert "user" in listed["Ask Li about the budget"]["gc"]


def test_the_distribution_counts_memories_by_status_lifecycle_namespace_and_source(sample):
    f = figures(sample)
    stats = sample.stats()
    assert dict(f.distribution["status"]) == {s or "active": n for s, n in stats["memories_by_status"].items()}
    kept = sum(n for s, n in f.distribution["status"] if s != "archived")
    assert sum(n for _, n in f.distribution["lifecycle"]) == kept
    assert sum(n for _, n in f.distribution["namespace"]) == kept
    assert f.counts["memories"] == sum(stats["memories_by_status"].values())


def test_the_entity_graph_has_the_most_linked_entities_and_the_pairs_memories_link(vault):
    for name in ("Ada Lovelace", "Project Loom", "Lonely Entity"):
        vault.add_entity(name)
    memory(vault, "Ada leads Loom", written=NOW - DAY, body="[[Ada Lovelace]] leads [[Project Loom]].")
    memory(vault, "Ada reviews Loom", written=NOW - DAY, body="[[Ada Lovelace]] reviews [[Project Loom]].")
    memory(vault, "Ada likes tea", written=NOW - DAY, body="[[Ada Lovelace]] likes tea.")
    graph = figures(vault).graph
    assert [(n["title"], n["memories"]) for n in graph.nodes] == [("Ada Lovelace", 3), ("Project Loom", 2)]
    assert graph.edges == [(0, 1, 2, False)] and graph.entities == 3
    assert all(0 <= n["x"] <= 1 and 0 <= n["y"] <= 1 for n in graph.nodes)


def test_every_string_from_a_note_is_escaped_in_the_page(vault, tmp_path):
    vault.add_entity(HOSTILE_ENTITY)
    hostile = memory(vault, HOSTILE_TITLE, written=NOW - 3 * DAY, source=HOSTILE_SOURCE,
                     body=f"links [[{HOSTILE_ENTITY}]]")
    vault.record_access([hostile], now=NOW - DAY)
    vault.feedback(hostile, "wrong", "<b>not bold</b>", now=NOW - DAY / 2)
    written = vault.report(tmp_path, note=hostile, now=NOW)
    html = open(written.path, encoding="utf-8").read()
    for raw in (HOSTILE_TITLE, HOSTILE_SOURCE, HOSTILE_ENTITY, "<b>not bold</b>"):
        assert raw not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;/script&gt;&lt;script&gt;alert(2)" in html
    assert "&lt;svg onload=alert(3)&gt;" in html
    assert "<script" not in html.lower()  # the page has no script of its own either
    assert "script-src" not in html and "default-src 'none'" in html  # and its policy allows none


def test_the_page_stands_alone_no_request_when_it_is_opened(sample, tmp_path):
    html = open(sample.report(tmp_path, now=NOW).path, encoding="utf-8").read()
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert "@import" not in html and "url(" not in html
    assert html.count("<svg") >= 6  # the strength curve, four distributions, decay's bars, the graph


def test_lint_findings_are_the_kept_ones_until_asked_for_fresh(vault, tmp_path):
    memory(vault, "Points at nothing", written=NOW - DAY, body="see [[No Such Note]]")
    html = open(vault.report(tmp_path, now=NOW).path, encoding="utf-8").read()  # none kept: lint runs
    assert "[[No Such Note]] in memories/Points at nothing.md" in html
    write_note(vault, "memories/Points at nothing.md", (vault.root / "memories/Points at nothing.md").read_text()
               .replace("[[No Such Note]]", "nothing"))
    kept = open(vault.report(tmp_path, now=NOW).path, encoding="utf-8").read()
    assert "[[No Such Note]]" in kept and "1 notes were written or edited since" in kept
    fresh = open(vault.report(tmp_path, now=NOW, fresh_lint=True).path, encoding="utf-8").read()
    assert "[[No Such Note]]" not in fresh and "Nothing to act on" in fresh


def test_a_report_of_an_empty_vault_says_so(vault, tmp_path):
    html = open(vault.report(tmp_path, now=NOW).path, encoding="utf-8").read()
    assert "No memory yet" in html and "No memory links any" in html


def test_an_agent_confined_to_a_namespace_cannot_see_the_whole_vault(vault, tmp_path):
    with pytest.raises(OwnerOnly):
        Vault(vault.root, namespace="alice").report(tmp_path)
    with pytest.raises(OwnerOnly):
        Vault(vault.root, namespace="alice").dashboard()
    assert not list(tmp_path.glob("*.html"))


def test_the_report_command_writes_the_file_and_says_where(sample, tmp_path):
    runner = CliRunner()
    done = runner.invoke(app, ["report", "--vault", str(sample.root), "--out", str(tmp_path / "out"), "--json",
                               "--note", "客户张三合同编号 CT2024-0876"])
    assert done.exit_code == 0, done.output
    shown = json.loads(done.output)
    assert shown["path"] == str(tmp_path / "out" / "vaultmem-report.html") and shown["bytes"] > 10_000
    assert shown["note"] == sample.resolve("客户张三合同编号 CT2024-0876")["id"]
    plain = runner.invoke(app, ["report", "--vault", str(sample.root)])
    assert plain.exit_code == 0 and "vaultmem-report.html" in plain.output and "file://" in plain.output
    assert (sample.index.cache_dir / "vaultmem-report.html").is_file()


def test_a_report_for_a_note_that_is_not_a_memory_is_one_clear_line(sample, tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["report", "--vault", str(sample.root), "--out", str(tmp_path), "--note", "nope"])
    assert missing.exit_code == 1 and "no note matches 'nope'" in missing.output
    entity = runner.invoke(app, ["report", "--vault", str(sample.root), "--out", str(tmp_path), "--note", "张三"])
    assert entity.exit_code == 1 and "is not a memory" in entity.output and "Traceback" not in entity.output
    assert not (tmp_path / "vaultmem-report.html").exists()


def test_events_are_read_from_every_devices_log_oldest_first(vault, monkeypatch):
    note = memory(vault, "Two laptops", written=NOW - 9 * DAY)
    vault.record_access([note], now=NOW - 2 * DAY)
    monkeypatch.setenv("VAULTMEM_DEVICE_ID", "otherbox-0002")
    other = Vault(vault.root)
    other.record_access([note], now=NOW - 4 * DAY)
    stamps = [ev["ts"] for ev in history.read_events(vault)]
    assert stamps == [NOW - 4 * DAY, NOW - 2 * DAY]


def test_a_log_read_at_once_still_skips_each_bad_line_and_never_joins_two(vault):
    """Events logs are parsed in one pass when every line is an object of its own (store/events.py)."""
    from vaultmem.store.events import bad_lines, read_new_lines

    log = vault.device_dir / "events-2027-01.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    good = ['{"event":"access","id":"a","ts":1}', '{"event":"feedback","id":"a","verdict":"useful","ts":2}']
    split = ['{"event":"access","id":"b",', '"ts":3}']  # one event over two lines: neither is one
    log.write_text("\n".join([good[0], *split, '{"event":"access","id":"c","ts":-5}', good[1], ""]), encoding="utf-8")
    events, _ = read_new_lines(log, 0)
    assert [(ev["id"], ev["ts"]) for ev in events] == [("a", 1), ("a", 2)]
    assert [n for n, _ in bad_lines(log)] == [2, 3, 4]
    log.write_text("\n".join([*good, '{"event":"access","id":"c","ts":-5}', ""]), encoding="utf-8")
    assert [ev["ts"] for ev in read_new_lines(log, 0)[0]] == [1, 2]  # the one-pass path checks each event too


def test_an_encrypted_memory_shows_in_the_report_by_its_file_name_only(vault, tmp_path):
    """The report reads the index's clear properties and link terms, never a note's text (issue 30 item 5)."""
    pytest.importorskip("cryptography")
    phrase = "zebra-mango-4471"
    vault.unlock("correct horse battery")
    vault.encrypt_namespace("private")
    vault.add_entity("Corner Cafe")
    vault.remember(f"Had the {phrase} latte at [[Corner Cafe]]", namespace="private")
    written = vault.report(tmp_path, now=NOW, fresh_lint=True)
    html = open(written.path, encoding="utf-8").read()
    assert phrase not in html and "latte" not in html and written.memories == 1
    from vaultmem.overview.lint import RECORD

    assert phrase.encode() not in (vault.index.cache_dir / RECORD).read_bytes()
