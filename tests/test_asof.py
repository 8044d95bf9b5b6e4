"""recall --as-of (issue 30 item 2): the vault as it stood on a date, from the audit log, the notes'
timestamps and git. A scripted 30-day history (writes, a supersede, a forget and a restore, a hand edit
committed in git) is checked against the set expected at each of its dates."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess

import pytest
from typer.testing import CliRunner

from vaultmem.surfaces.cli import app

START = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)


def day(n: float) -> dt.datetime:
    return START + dt.timedelta(days=n)


def _git(root, when: dt.datetime, *args):
    stamp = when.isoformat()
    env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "-C", str(root), "-c", "user.name=Ann Person", "-c", "user.email=ann@example.com", *args],
                   check=True, capture_output=True, env=env)


def _commit(root, when: dt.datetime, message: str) -> None:
    _git(root, when, "add", "-A")
    _git(root, when, "commit", "-qm", message)


@pytest.fixture
def history(vault):
    """Thirty days of a vault kept in git, each step committed on its day."""
    _git(vault.root, day(0), "init", "-q", "-b", "main")
    _commit(vault.root, day(0), "empty vault")
    w = lambda text, n, **kw: vault.remember(text, timestamp=day(n).isoformat(), lifecycle="fact", **kw)
    port = w("The staging database listens on port 5432", 1)
    _commit(vault.root, day(1), "port")
    coffee = w("Ann drinks a flat white every morning", 3)
    launch = w("The Atlas launch is planned for March", 5)
    _commit(vault.root, day(5), "coffee, launch")
    moved = w("The staging database moved to port 6543", 10, supersedes=port.id)
    _commit(vault.root, day(10), "port moved")
    vault.forget_where(ids=[coffee.id], reason="Ann gave up coffee", now=day(15).timestamp())
    _commit(vault.root, day(15), "forget coffee")
    note = vault.root / launch.path
    note.write_text(note.read_text(encoding="utf-8").replace("March", "June"), encoding="utf-8")
    _commit(vault.root, day(20), "launch slipped (by hand in Obsidian)")
    vault.refresh()
    vault.restore(coffee.id, now=day(25).timestamp())
    _commit(vault.root, day(25), "coffee is back")
    ben = w("Ben joined the platform team", 27)
    _commit(vault.root, day(27), "ben")
    return vault, {"port": port.id, "coffee": coffee.id, "launch": launch.id, "moved": moved.id, "ben": ben.id}


EXPECTED = {  # day -> the memories current then
    2: {"port"},
    7: {"port", "coffee", "launch"},
    12: {"moved", "coffee", "launch"},
    17: {"moved", "launch"},
    26: {"moved", "coffee", "launch"},
    28: {"moved", "coffee", "launch", "ben"},
}


@pytest.mark.parametrize("n", sorted(EXPECTED))
def test_as_of_each_date_holds_what_was_current_then(history, n):
    vault, ids = history
    names = {v: k for k, v in ids.items()}
    hits = vault.recall("", limit=50, as_of=day(n).timestamp())
    assert {names[h.id] for h in hits} == EXPECTED[n]
    assert all(h.as_of["dated_by"] == "audit log" for h in hits)


def test_today_differs_from_the_past(history):
    vault, ids = history
    assert {h.id for h in vault.recall("", limit=50)} == {ids[k] for k in ("moved", "coffee", "launch", "ben")}
    past = {h.id: h for h in vault.recall("", limit=50, as_of=day(12).timestamp())}
    assert past[ids["launch"]].as_of["status"] == "active" and ids["port"] not in past


def test_a_hand_edit_since_is_ranked_by_its_text_then(history):
    vault, ids = history
    today = vault.recall("launch March")
    assert today[0].id == ids["launch"] and "June" in today[0].content and today[0].as_of == {}
    then = vault.recall("launch March", as_of=day(17).timestamp())
    assert then and then[0].id == ids["launch"]
    assert "March" in then[0].content and "June" not in then[0].content
    assert then[0].as_of["text"].startswith("git ")
    after = vault.recall("launch", as_of=day(22).timestamp())
    assert after[0].id == ids["launch"] and "June" in after[0].content and after[0].as_of["text"] == "today's"


def test_a_superseded_note_is_current_again_before_its_successor(history):
    vault, ids = history
    hits = vault.recall("staging database port", as_of=day(7).timestamp())
    assert [h.id for h in hits] == [ids["port"]] and hits[0].status == "active"
    today = vault.recall("staging database port")
    assert [h.id for h in today] == [ids["moved"]]


def test_strength_is_computed_at_the_date_and_nothing_is_recorded(history):
    vault, ids = history
    vault.recall("Ben platform team")  # a use today
    before = vault.recall("staging database", as_of=day(11).timestamp(), explain=True)
    late = vault.recall("staging database", as_of=day(40).timestamp(), explain=True)
    assert before[0].id == late[0].id == ids["moved"]
    assert before[0].effective > late[0].effective  # ten more days of the half-life
    uses = vault.index.snapshot().uses.sum()
    vault.recall("staging database", as_of=day(11).timestamp())
    vault.context("staging database", as_of=day(11).timestamp())
    vault.ask("what port does the staging database use", as_of=day(11).timestamp())
    vault.index.catch_up()
    assert vault.index.snapshot().uses.sum() == uses


def test_without_an_audit_record_the_note_timestamp_dates_it(sample):
    hits = sample.recall("合同编号", as_of="2026-10-13")
    assert hits[0].title == "客户张三合同编号 CT2024-0771"  # superseded since, current then
    assert hits[0].as_of["dated_by"] == "note timestamp" and hits[0].status == "active"
    assert all(h.timestamp[:10] <= "2026-10-13" for h in hits)
    assert "客户张三合同编号 CT2024-0771" not in [h.title for h in sample.recall("合同编号")]


def test_cli_as_of_explain_says_what_dated_each_note(history):
    vault, ids = history
    runner = CliRunner()
    done = runner.invoke(app, ["recall", "staging database", "--as-of", day(7).date().isoformat(), "--explain",
                               "--vault", str(vault.root)])
    assert done.exit_code == 0, done.output
    assert "dated by audit log" in done.output and "port 5432" in done.output and "6543" not in done.output
    out = runner.invoke(app, ["recall", "staging database", "--as-of", day(12).date().isoformat(), "--json",
                              "--vault", str(vault.root)])
    found = json.loads(out.stdout)
    assert [h["id"] for h in found] == [ids["moved"]] and found[0]["as_of"]["date"].startswith("2026-11-13")
    ctx = runner.invoke(app, ["context", "staging database", "--as-of", day(7).date().isoformat(), "--vault",
                              str(vault.root)])
    assert ctx.exit_code == 0 and "5432" in ctx.output and "6543" not in ctx.output
    bad = runner.invoke(app, ["recall", "x", "--as-of", "last tuesday", "--vault", str(vault.root)])
    assert bad.exit_code != 0 and "invalid date" in bad.output


def test_without_git_todays_text_stands_and_recall_still_dates(vault):
    vault.remember("The Atlas launch is planned for March", timestamp=day(1).isoformat())
    vault.remember("Ben joined the platform team", timestamp=day(5).isoformat())
    hits = vault.recall("", limit=10, as_of=day(2).timestamp())
    assert [h.content for h in hits] == ["The Atlas launch is planned for March"]
    assert hits[0].as_of["text"] == "today's"


def test_http_and_mcp_take_as_of(history):
    import anyio
    import httpx
    from mcp import Client

    from vaultmem.surfaces import mcp as surface
    from vaultmem.surfaces.http.app import API, build_app
    from vaultmem.surfaces.http.run import in_thread

    vault, ids = history
    when = day(7).date().isoformat()
    with in_thread(build_app(vault)) as url, httpx.Client(base_url=url, timeout=30) as client:
        found = client.get(f"{API}/recall", params={"query": "staging database", "as_of": when}).json()["hits"]
        assert [h["id"] for h in found] == [ids["port"]] and found[0]["as_of"]["dated_by"] == "audit log"
        woven = client.get(f"{API}/context", params={"query": "staging database", "as_of": when}).json()
        assert "5432" in woven["text"] and "6543" not in woven["text"]
        assert client.get(f"{API}/recall", params={"query": "x", "as_of": "someday"}).status_code == 400

    async def main():
        async with Client(surface.build_server(vault)) as mcp:
            return await mcp.call_tool("recall", {"query": "staging database", "as_of": when})

    answer = anyio.run(main)
    assert [h["id"] for h in answer.structured_content["hits"]] == [ids["port"]]
