"""Forget by selection, restore, decay by tag and gc (issue 17 items 4-5, SPEC §7)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.errors import UnsafePath, VaultmemError
from vaultmem.notes.note import parse_note
from vaultmem.surfaces.cli import app

from .conftest import write_note

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc).timestamp()
DAY = 86400.0


def _note(vault: Vault, name: str, body: str, days_ago: float = 0.0, tags: tuple[str, ...] = (), score: float = 5,
          source: str = "agent", **props) -> str:
    """A memory written by hand with these properties; returns its id."""
    ident = f"01JDX3K8Q4W2M9ZC6T7B5N{len(list(vault.folders['memories'].glob('*.md'))):04d}"
    when = dt.datetime.fromtimestamp(NOW - days_ago * DAY, dt.timezone.utc).isoformat()
    tag_line = f"tags: [{', '.join(tags)}]\n" if tags else ""
    extra = "".join(f"{k}: {v}\n" for k, v in props.items())
    write_note(vault, f"memories/{name}.md", f"---\nid: {ident}\ntimestamp: {when}\nscore: {score:g}\nsource: {source}\n"
                                              f"lifecycle: note\n{tag_line}{extra}---\n{body}\n")
    return ident


def _audit(vault: Vault) -> list[dict]:
    return [json.loads(line) for path in sorted((vault.state / "devices").rglob("audit*"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def _snapshot_bytes(root: Path) -> dict[str, bytes]:
    """Every file of the vault but the index cache (which a read may refresh)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "cache" not in p.relative_to(root).parts}


@pytest.fixture
def notes(vault: Vault) -> dict[str, str]:
    ids = {
        "old-atlas": _note(vault, "Atlas kickoff", "Atlas kickoff was in the Berlin office", 200, ("atlas",)),
        "new-atlas": _note(vault, "Atlas demo", "Atlas demo rehearsal on Friday", 2, ("atlas", "demo")),
        "coffee": _note(vault, "Coffee order", "Oat milk flat white", 50, ("coffee",), source="user"),
        "staging": _note(vault, "Staging port", "Staging uses port 8443", 100, ("ops",), source="deploy-bot"),
    }
    vault.refresh()
    return ids


def _memories(vault: Vault) -> set[str]:
    return {p.stem for p in vault.folders["memories"].glob("*.md")}


def test_forget_by_tag_archives_each_with_status_audit_and_episode_line(vault, notes):
    done = vault.forget_where(tags=["atlas"], reason="project closed", now=NOW)
    assert done.action == "archived" and {n["id"] for n in done.notes} == {notes["old-atlas"], notes["new-atlas"]}
    assert _memories(vault) == {"Coffee order", "Staging port"}
    for note in done.notes:
        meta = parse_note((vault.root / note["to"]).read_bytes()).meta
        assert meta["status"] == "archived" and note["to"].startswith("archive/")
    events = [e for e in _audit(vault) if e["event"] == "forget"]
    assert len(events) == 2 and {e["reason"] for e in events} == {"project closed"}
    assert all(e["device"] == "testbox-0001" and "user" in e and e["status"] == "active" for e in events)
    day = dt.datetime.fromtimestamp(NOW).astimezone().date().isoformat()
    episode = (vault.folders["episodes"] / f"{day}.md").read_text(encoding="utf-8")
    assert "Forgot [[Atlas kickoff]]: project closed" in episode and "Forgot [[Atlas demo]]: project closed" in episode
    assert [h.title for h in vault.recall("atlas", record_access=False)] == []


def test_selectors_are_anded(vault, notes):
    def chosen(**selectors) -> set[str]:
        return {n["id"] for n in vault.forget_where(reason="look", dry_run=True, **selectors).notes}

    assert chosen(tags=["atlas"], until="2026-10-01") == {notes["old-atlas"]}
    assert chosen(tags=["atlas"], since="2026-11-01") == {notes["new-atlas"]}
    assert chosen(query="berlin office") == {notes["old-atlas"]}
    assert chosen(query="atlas rehearsal") == {notes["new-atlas"]}
    assert chosen(query="atlas", tags=["demo"]) == {notes["new-atlas"]}
    assert chosen(source="deploy-bot") == {notes["staging"]}
    assert chosen(source="user", tags=["atlas"]) == set()
    assert chosen(ids=[notes["coffee"], "Staging port"]) == {notes["coffee"], notes["staging"]}
    assert chosen(ids=[notes["coffee"]], tags=["ops"]) == set()
    assert chosen(tags=["ATLAS", "#demo"]) == {notes["new-atlas"]}  # tags normalised as everywhere


def test_dry_run_changes_no_byte_of_the_vault(vault, notes):
    before = _snapshot_bytes(vault.root)
    done = vault.forget_where(tags=["atlas"], reason="project closed", dry_run=True)
    assert done.action == "would-archive" and len(done.notes) == 2
    assert vault.forget_where(tags=["ops"], reason="x", dry_run=True, hard=True).action == "would-delete"
    assert _snapshot_bytes(vault.root) == before


def test_reason_and_a_selector_are_required(vault, notes):
    with pytest.raises(VaultmemError, match="reason"):
        vault.forget_where(tags=["atlas"], reason="  ")
    with pytest.raises(VaultmemError, match="what to forget"):
        vault.forget_where(reason="why not")
    result = CliRunner().invoke(app, ["forget", "--tag", "atlas", "--vault", str(vault.root)])
    assert result.exit_code == 2 and "--reason" in result.output
    assert len(_memories(vault)) == 4


def test_a_path_like_id_is_a_clear_error(vault, notes):
    with pytest.raises(UnsafePath):
        vault.forget_where(ids=["../../etc/passwd"], reason="x")
    result = CliRunner().invoke(app, ["forget", "../../etc/passwd", "--reason", "x", "--vault", str(vault.root)])
    assert result.exit_code == 1 and "outside the vault" in result.output
    assert len(_memories(vault)) == 4


def test_hard_deletes_the_file_and_audits_without_the_text(vault, notes):
    done = vault.forget_where(ids=[notes["staging"]], reason="leaked a secret", hard=True, now=NOW)
    assert done.action == "deleted" and not list(vault.root.rglob("Staging port*.md"))
    event = [e for e in _audit(vault) if e["event"] == "forget"][-1]
    assert event["action"] == "delete" and event["id"] == notes["staging"] and event["title"] == "Staging port"
    assert event["path"] == "memories/Staging port.md" and event["reason"] == "leaked a secret"
    assert "8443" not in json.dumps(_audit(vault))  # the text itself is not kept
    assert vault.recall("staging port", include=["archived"], record_access=False) == []


def test_cli_forget_json_and_text(vault, notes):
    runner = CliRunner()
    out = runner.invoke(app, ["forget", "--tag", "coffee", "--reason", "switched to tea", "--json",
                              "--vault", str(vault.root)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["action"] == "archived" and data["notes"][0]["to"] == "archive/Coffee order.md"
    out = runner.invoke(app, ["forget", "--tag", "atlas", "--reason", "closed", "--dry-run", "--vault", str(vault.root)])
    assert out.exit_code == 0 and "would archive: 2 notes" in out.output


def test_a_note_edited_during_the_forget_is_kept_and_reported(vault, notes, monkeypatch):
    import vaultmem.lifecycle.forget as module

    real_sync = module.sync_files

    def edit_then_sync(paths):  # a person saves the note in Obsidian after its copy was written
        path = vault.root / "memories/Coffee order.md"
        path.write_text(path.read_text(encoding="utf-8") + "with cinnamon\n", encoding="utf-8")
        real_sync(paths)

    monkeypatch.setattr(module, "sync_files", edit_then_sync)
    done = vault.forget_where(tags=["coffee"], reason="x")
    assert done.notes == [] and done.skipped[0]["why"] == "edited during the forget"
    assert "cinnamon" in (vault.root / "memories/Coffee order.md").read_text(encoding="utf-8")
    assert not list(vault.folders["archive"].glob("*.md"))


def test_restore_round_trip_puts_back_the_same_note(vault, notes):
    before = (vault.root / "memories/Coffee order.md").read_bytes()
    vault.forget_where(ids=[notes["coffee"]], reason="switched to tea", now=NOW)
    back = vault.restore(notes["coffee"], now=NOW)
    assert back.action == "restored" and back.path == "memories/Coffee order.md" and back.status == "active"
    assert (vault.root / back.path).read_bytes() == before  # the status line the archive added is gone again
    assert not list(vault.folders["archive"].glob("*.md"))
    assert [h.id for h in vault.recall("oat milk", record_access=False)] == [notes["coffee"]]
    restored = [e for e in _audit(vault) if e["event"] == "restore"]
    assert restored[0]["from"] == "archive/Coffee order.md" and restored[0]["device"] == "testbox-0001"
    with pytest.raises(VaultmemError, match="not archived"):
        vault.restore(notes["coffee"])


def test_restore_gives_back_the_status_recorded(vault):
    _note(vault, "Unsure fact", "The printer is on floor 3", 1, status="needs-verification")
    vault.refresh()
    vault.forget("Unsure fact", reason="moved offices")
    assert vault.restore("Unsure fact").status == "needs-verification"
    meta = parse_note((vault.root / "memories/Unsure fact.md").read_bytes()).meta
    assert meta["status"] == "needs-verification"


def test_cli_restore_of_a_note_not_archived_is_an_error(vault, notes):
    out = CliRunner().invoke(app, ["restore", notes["coffee"], "--vault", str(vault.root)])
    assert out.exit_code == 1 and "not archived" in out.output


def _ranked(vault: Vault, query: str) -> list[str]:
    return [h.title for h in vault.recall(query, now=NOW, record_access=False)]


def test_decay_event_lowers_ranking_without_rewriting_and_survives_a_rebuild(vault):
    _note(vault, "Deploy target alpha", "Deploy target is the alpha cluster", 1, ("alpha",), score=6)
    _note(vault, "Deploy target beta", "Deploy target is the beta cluster", 1, ("beta",), score=5)
    vault.refresh()
    assert _ranked(vault, "deploy target cluster") == ["Deploy target alpha", "Deploy target beta"]
    before = _snapshot_bytes(vault.root / "memories")
    done = vault.decay(["alpha"], 0.1, reason="alpha is being retired", now=NOW)
    assert [n["title"] for n in done.notes] == ["Deploy target alpha"] and done.notes[0]["scale"] == 0.1
    assert _snapshot_bytes(vault.root / "memories") == before  # an event, not an edit
    assert _ranked(vault, "deploy target cluster") == ["Deploy target beta", "Deploy target alpha"]
    hit = [h for h in vault.recall("alpha cluster", now=NOW, record_access=False, explain=True)][0]
    assert hit.feedback["decayed"] == 0.1
    audit = [e for e in _audit(vault) if e["event"] == "decay"]
    assert audit[0]["factor"] == 0.1 and audit[0]["reason"] == "alpha is being retired" and audit[0]["ids"]
    import shutil

    vault.close()
    shutil.rmtree(vault.state / "cache")  # the index is a cache: the events log is the source of truth
    again = Vault(vault.root)
    again.refresh()
    assert _ranked(again, "deploy target cluster") == ["Deploy target beta", "Deploy target alpha"]


def test_decay_is_bounded_and_leaves_pinned_notes(vault):
    _note(vault, "Pinned fact", "Pinned deploy fact", 1, ("ops",), pinned="true")
    _note(vault, "Plain fact", "Plain deploy fact", 1, ("ops",))
    vault.refresh()
    for bad in (0, -1, 1.5, float("nan")):
        with pytest.raises(VaultmemError, match="factor"):
            vault.decay(["ops"], bad)
    done = vault.decay(["ops"], 0.01)
    assert [s["why"] for s in done.skipped] == ["pinned"] and len(done.notes) == 1
    assert vault.decay(["ops"], 0.01).notes[0]["scale"] == 0.001  # never below MIN_SCALE
    out = CliRunner().invoke(app, ["decay", "--factor", "2", "--tag", "ops", "--vault", str(vault.root)])
    assert out.exit_code == 1 and "at most 1" in out.output


@pytest.fixture
def aged(vault: Vault) -> Vault:
    _note(vault, "Weak old", "An old standup note", 400, score=1, trust="agent")
    _note(vault, "Strong old", "The production database is Postgres 16", 400, score=9, trust="agent", half_life="10y")
    _note(vault, "Weak recent", "A standup note from yesterday", 1, score=1, trust="agent")
    _note(vault, "Weak pinned", "An old but pinned note", 400, score=1, trust="agent", pinned="true")
    _note(vault, "Weak user", "An old note the user wrote", 400, score=1, trust="user")
    write_note(vault, "memories/Weak permanent.md", "---\nid: 01JDX3K8Q4W2M9ZC6T7B5NPERM\ntimestamp: 2025-01-01T00:00:00Z\n"
                                                    "score: 0.2\nlifecycle: permanent\ntrust: agent\n---\nOld permanent note\n")
    vault.refresh()
    return vault


def test_gc_archives_only_weak_unused_notes_and_is_idempotent(aged):
    listed = aged.gc(dry_run=True, now=NOW)
    assert [n["title"] for n in listed.notes] == ["Weak old"] and listed.notes[0]["effective"] < 0.5
    assert listed.notes[0]["last_use"] is None
    done = aged.gc(now=NOW)
    assert [n["to"] for n in done.notes] == ["archive/Weak old.md"]
    assert [e["event"] for e in _audit(aged)].count("gc") == 1
    assert aged.gc(now=NOW).notes == []  # a second run archives nothing
    assert {p.stem for p in aged.folders["memories"].glob("*.md")} == {
        "Strong old", "Weak recent", "Weak pinned", "Weak user", "Weak permanent"}


def test_gc_takes_user_and_permanent_notes_only_when_asked(aged):
    titles = {n["title"] for n in aged.gc(dry_run=True, include_user=True, include_permanent=True, now=NOW).notes}
    assert titles == {"Weak old", "Weak user", "Weak permanent"}  # never the pinned one


def test_gc_recent_use_keeps_a_note(aged):
    aged.record_access([aged.resolve("Weak old")["id"]], now=NOW - 5 * DAY)
    assert aged.gc(dry_run=True, now=NOW).notes == []


def test_gc_skips_a_note_edited_during_the_run(aged, monkeypatch):
    import vaultmem.lifecycle.forget as module

    real_sync = module.sync_files

    def edit_then_sync(paths):
        path = aged.root / "memories/Weak old.md"
        path.write_text(path.read_text(encoding="utf-8") + "still needed\n", encoding="utf-8")
        real_sync(paths)

    monkeypatch.setattr(module, "sync_files", edit_then_sync)
    done = aged.gc(now=NOW)
    assert done.notes == [] and done.skipped[0]["path"] == "memories/Weak old.md"
    assert "still needed" in (aged.root / "memories/Weak old.md").read_text(encoding="utf-8")
    monkeypatch.undo()
    out = CliRunner().invoke(app, ["gc", "--json", "--vault", str(aged.root)])
    assert out.exit_code == 0, out.output  # the next run takes it, the person's edit with it
    assert json.loads(out.output)["notes"][0]["to"] == "archive/Weak old.md"
    assert "still needed" in (aged.root / "archive/Weak old.md").read_text(encoding="utf-8")


def test_an_agent_forgets_only_in_the_namespaces_it_reads(vault):
    _note(vault, "Shared build note", "The build runs nightly", 1, ("build",))
    _note(vault, "Private build note", "My own build cache trick", 1, ("build",), namespace="agent:other")
    vault.refresh()
    seen = vault.forget_where(tags=["build"], namespace=None, reason="x", dry_run=True)  # as recall: shared and mine
    assert [n["title"] for n in seen.notes] == ["Shared build note"]
    everything = vault.forget_where(tags=["build"], reason="x", dry_run=True)  # a person's command: every namespace
    assert sorted(n["title"] for n in everything.notes) == ["Private build note", "Shared build note"]


def test_a_bad_decay_line_is_skipped_and_named_by_doctor(vault, notes):
    from vaultmem.store.events import append_events

    append_events(vault.device_dir, "events", [{"event": "decay", "id": notes["coffee"], "factor": 5, "ts": NOW}])
    assert _ranked(vault, "oat milk flat white") == ["Coffee order"]
    hit = vault.recall("oat milk", now=NOW, record_access=False, explain=True)[0]
    assert "decayed" not in hit.feedback
    problems = vault.doctor().to_dict()["bad_log_lines"]
    assert any("factor" in p["problem"] for p in problems)


def test_no_episode_line_when_episode_notes_are_off(tmp_path):
    vault = Vault.init(tmp_path / "v")
    (vault.state / "config.yaml").write_text("write:\n  episodes: false\n", encoding="utf-8")
    vault = Vault(vault.root)
    made = vault.remember("The gate code changes monthly", tags=["office"])
    vault.forget_where(ids=[made.id], reason="moved out", now=NOW)
    assert not list(vault.folders["episodes"].glob("*.md")) and (vault.root / "archive").is_dir()
