"""`vaultmem lint` (issue 16 item 8): doctor --strict for CI, exit 3 on findings, with --json; it also
finds live notes whose `expires` / `valid_until` has passed (a date counts through its last day)."""

from __future__ import annotations

import datetime as dt
import json

from typer.testing import CliRunner

from vaultmem.surfaces.cli import app

from .conftest import write_note

NOTE = "---\nid: 01J0000000000000000000{n:04d}\ntype: fact\n{extra}---\n{body}\n"


def lint(vault):
    done = CliRunner().invoke(app, ["lint", "--vault", str(vault.root), "--json"])
    return done.exit_code, json.loads(done.output)


def test_lint_finds_expired_notes_and_exits_3(vault):
    today = dt.date.today()
    past = (dt.datetime.now().astimezone() - dt.timedelta(hours=2)).replace(microsecond=0).isoformat()
    cases = {"Gone.md": f"expires: {today - dt.timedelta(days=1)}\n",
             "Until.md": f"valid_until: {past}\n",
             "Today.md": f"expires: {today}\n",  # its last day: still valid
             "Later.md": f"expires: {today + dt.timedelta(days=30)}\n",
             "Vague.md": "expires: soon\n",
             "History.md": f"expires: {today - dt.timedelta(days=9)}\nstatus: archived\n"}
    for n, (name, extra) in enumerate(cases.items()):
        write_note(vault, f"memories/{name}", NOTE.format(n=n, extra=extra, body=f"Memory {name}"))
    code, report = lint(vault)
    assert code == 3 and not report["ok"]
    assert sorted(item["path"] for item in report["expired"]) == ["memories/Gone.md", "memories/Until.md"]
    assert "vaultmem forget" in report["fixes"]["expired"]
    assert vault.doctor().expired == []  # only the strict check reads every note


def test_lint_passes_a_clean_vault_and_reports_what_doctor_strict_does(vault):
    write_note(vault, "memories/Fine.md", NOTE.format(n=1, extra="", body="A fine memory."))
    code, report = lint(vault)
    assert code == 0 and report["ok"] and report["expired"] == [] and report["secrets"] == []
    write_note(vault, "memories/Linked.md", NOTE.format(n=2, extra="", body="See [[Nowhere at all]]."))
    write_note(vault, "memories/Key.md", NOTE.format(n=3, extra="", body="key sk-" + "Zy9Qx7" * 7))
    code, report = lint(vault)
    assert code == 3 and report["broken_links"][0]["link"] == "Nowhere at all"
    assert report["secrets"] == [{"path": "memories/Key.md", "kinds": ["api_key"]}]
    shown = CliRunner().invoke(app, ["lint", "--vault", str(vault.root)], env={"NO_COLOR": "1"})
    assert shown.exit_code == 3 and "secret (api_key) in memories/Key.md" in shown.output
