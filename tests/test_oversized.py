"""No note too big (issue 28 item 4): a memory's text has a documented limit at every write surface, and a
longer note written by hand or synced in costs recall and the index no more than the limit's worth of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.config import defaults
from vaultmem.errors import ConfigError, TextTooLong
from vaultmem.surfaces.cli import app

from .conftest import REPO, snapshot_files, write_note

LIMIT = defaults()["write"]["max_text_chars"]
runner = CliRunner()


def notes_of(vault: Vault) -> dict:
    """Every note file of the vault with its bytes (what a refused write must leave as it was)."""
    return snapshot_files(vault.root)


# -- the limit at every write surface ------------------------------------------------------------------
def test_remember_refuses_a_text_over_the_limit_and_writes_nothing(vault):
    before = notes_of(vault)
    with pytest.raises(TextTooLong, match=rf"^memory: the text has {LIMIT + 1:,} characters, more than "
                                          rf"write.max_text_chars \({LIMIT:,}\); nothing was written") as caught:
        vault.remember("x" * (LIMIT + 1), entity="Zhang San")
    assert (caught.value.chars, caught.value.limit) == (LIMIT + 1, LIMIT)
    assert notes_of(vault) == before  # no memory, no entity note, no day note
    assert vault.remember("x" * LIMIT).action == "created"  # at the limit: kept


def test_the_limit_counts_characters_of_the_text_as_written(vault):
    vault.configure("write", max_text_chars=10)
    assert vault.remember("  合同编号CT2024  \n").action == "created"  # ten characters once stripped, 18 bytes
    with pytest.raises(TextTooLong, match="has 11 characters"):
        vault.remember("合同编号CT2024X")


def test_the_limit_is_a_setting_checked_as_config_yaml_is(vault):
    (vault.state / "config.yaml").write_text("write:\n  max_text_chars: 20\n", encoding="utf-8")
    assert Vault(vault.root).settings.write.max_text_chars == 20
    with pytest.raises(TextTooLong, match=r"more than write.max_text_chars \(20\)"):
        Vault(vault.root).remember("The deploy window is Tuesday at 22:00")
    for bad in ("0", "-5", "1.5", "lots"):
        (vault.state / "config.yaml").write_text(f"write:\n  max_text_chars: {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="max_text_chars"):
            Vault(vault.root).settings  # noqa: B018


def test_a_batch_with_one_oversized_item_writes_nothing_and_names_the_item(vault):
    items = [{"text": "The deploy window is Tuesday at 22:00", "entity": "Ops Team"},
             {"text": "y" * (LIMIT + 5)},
             {"text": "The staging port is 8443"}]
    before = notes_of(vault)
    with pytest.raises(TextTooLong, match=rf"^item 2: the text has {LIMIT + 5:,} characters"):
        vault.remember_many(items)
    assert notes_of(vault) == before


def test_a_correction_over_the_limit_leaves_the_old_note_as_it_was(vault):
    old = vault.remember("The staging port is 8443")
    before = notes_of(vault)
    with pytest.raises(TextTooLong):
        vault.correct(old.id, "The staging port is 9443. " + "z" * LIMIT)
    assert notes_of(vault) == before and vault.get(old.id).status == "active"


def test_an_import_with_an_oversized_entry_imports_nothing(vault, tmp_path):
    hermes = tmp_path / "hermes"
    hermes.mkdir()
    (hermes / "MEMORY.md").write_text("The user deploys on Tuesdays\n§\n" + "w" * (LIMIT + 1), encoding="utf-8")
    before = notes_of(vault)
    with pytest.raises(TextTooLong, match="^item 2: "):
        vault.import_source(hermes)
    assert notes_of(vault) == before


def test_remember_from_stdin_refuses_5_9_mb_with_one_line_and_exit_1(vault):
    text = "2026-11-29 14:02 INFO deploy worker took 12 ms\n" * 125_000  # 5.9 MB, as issue 28 pasted
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "vaultmem", "remember", "-", "--vault", str(vault.root)],
                          input=text, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"Error: memory: the text has {len(text.strip()):,} characters, more than write.max_text_chars "
        f"({LIMIT:,}); nothing was written (split it into several memories)"]
    assert not list(vault.folders["memories"].glob("*.md"))


def test_remember_batch_from_the_cli_names_the_item_and_writes_nothing(vault, tmp_path):
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(item) for item in [{"text": "The staging port is 8443"},
                                                              {"text": "v" * (LIMIT + 1)}]), encoding="utf-8")
    done = runner.invoke(app, ["remember", "--batch", str(batch), "--vault", str(vault.root)])
    assert done.exit_code == 1 and done.output.startswith("Error: item 2: the text has")
    assert not list(vault.folders["memories"].glob("*.md"))


def test_the_mcp_remember_tool_declares_the_limit_and_refuses_a_longer_text(vault):
    from .test_mcp import call, session
    from vaultmem.surfaces import mcp as surface

    vault.configure("write", max_text_chars=64)
    server = surface.build_server(vault)
    tools = {t.name: t for t in session(server, lambda client: client.list_tools()).tools}
    assert tools["remember"].input_schema["properties"]["text"]["maxLength"] == 64
    refused = call(server, "remember", text="m" * 65)
    assert refused.is_error
    assert refused.content[0].text.endswith("the text has 65 characters, more than write.max_text_chars (64); "
                                            "nothing was written (split it into several memories)")
    assert not list(vault.folders["memories"].glob("*.md"))


def test_the_hermes_remember_tool_goes_through_the_same_check(tmp_path, monkeypatch):
    from vaultmem.hermes import VaultmemProvider

    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hermes-home"))
    (tmp_path / "hermes-home").mkdir()
    provider = VaultmemProvider()
    provider.initialize("s1", hermes_home=str(tmp_path / "hermes-home"), platform="cli", agent_context="primary",
                        agent_identity="coder")
    answer = json.loads(provider.handle_tool_call("vault_remember", {"content": "h" * (LIMIT + 1)}))
    assert answer == {"error": f"memory: the text has {LIMIT + 1:,} characters, more than write.max_text_chars "
                               f"({LIMIT:,}); nothing was written (split it into several memories)"}
    assert provider._open().list() == []


# -- a longer note on disk: the index and recall read the limit's worth of it ----------------------------
LOG_LINE = "INFO deploy worker restarted the cache node after a queue timeout\n"
HUGE = 10 * LIMIT  # characters of the note a person dropped into memories/ (issue 28: 37 MB)


@pytest.fixture
def huge(vault) -> Vault:
    """A vault of a few memories and one log dump ten times the limit, written by hand."""
    vault.remember("Deploys go out on Tuesdays after the worker queue drains", tags=["ops"])
    vault.remember("The cache node restarts itself after a timeout of 30 s")
    vault.remember("Zhang San owns the deploy worker")
    write_note(vault, "memories/Deploy log dump.md", "---\ntype: log\n---\n" + LOG_LINE * (HUGE // len(LOG_LINE)))
    return vault


@pytest.fixture
def read(monkeypatch) -> dict[str, int]:
    """Characters handed to the tokenizer, the normaliser and plain_text, by name, since the test began."""
    from vaultmem.text import terms as text

    seen = dict.fromkeys(("terms", "normalize", "plain_text"), 0)
    for name in seen:
        def counted(value, *args, _name=name, _real=getattr(text, name), **kwargs):
            seen[_name] += len(value)
            return _real(value, *args, **kwargs)
        monkeypatch.setattr(text, name, counted)
    return seen


def dump_of(vault: Vault):
    return next(h for h in vault.recall("deploy worker queue timeout", limit=10) if h.title == "Deploy log dump")


def test_indexing_a_note_over_the_limit_tokenises_the_limits_worth_of_it(huge, read):
    huge.refresh()
    assert read["terms"] < 2 * LIMIT  # on main: all of its million characters
    row = huge.index.select_notes("path = ?", ("memories/Deploy log dump.md",))[0]
    assert len(row["body"]) == LIMIT and row["body"] == (LOG_LINE * (HUGE // len(LOG_LINE)))[:LIMIT]


def test_recall_on_a_vault_with_a_huge_note_answers_and_feedback_reads_a_bounded_amount(huge, read):
    from vaultmem.recall import READ_CHARS

    huge.refresh()
    for name in read:
        read[name] = 0
    hit = dump_of(huge)
    # feedback's voters (3 by default), read from their first READ_CHARS characters, and the query
    assert read["terms"] <= 3 * READ_CHARS + 200
    assert len(hit.content) <= LIMIT and hit.content.startswith(LOG_LINE.strip())  # as the index holds it
    read["normalize"] = 0
    assert huge.recall("deploy wokrer")  # an unknown word: the short list is rescored for typos
    assert read["normalize"] <= 20 * (READ_CHARS + 100)


def test_a_huge_note_saved_again_since_it_was_indexed_is_read_again_within_the_limit(huge, read):
    huge.refresh()
    dump_of(huge)
    path = huge.root / "memories/Deploy log dump.md"
    with path.open("a", encoding="utf-8") as note:
        note.write("INFO deploy worker drained the queue\n")  # saved in place: recall re-reads its short list
    for name in read:
        read[name] = 0
    dump_of(huge)
    assert read["terms"] < 2 * LIMIT


def test_context_and_ask_read_no_more_of_a_huge_note_than_the_index_holds(huge, read, monkeypatch):
    from vaultmem.recall import READ_CHARS
    from vaultmem.write.extract import Extractor

    huge.refresh()
    extracted = []
    real = Extractor.extract
    monkeypatch.setattr(Extractor, "extract", lambda self, text, now: extracted.append(len(text)) or real(self, text, now))
    for name in read:
        read[name] = 0
    woven = huge.context("deploy worker queue timeout", budget_tokens=400)
    assert "Deploy log dump" in {item.title for item in woven.items} and woven.tokens <= 400
    assert read["plain_text"] <= READ_CHARS + 2000  # each hit's text once, of the dump its beginning
    huge.ask("When does the deploy worker restart?")
    assert extracted and max(extracted) <= READ_CHARS + 100  # on main: the whole note, per ask


# -- doctor and lint name a note over the limit ---------------------------------------------------------
def test_doctor_and_lint_name_a_memory_over_the_limit_with_its_path_and_size(vault):
    vault.configure("write", max_text_chars=40)
    written = vault.remember("The deploy window is Tuesday at 22:00 h.")  # 40 characters: at the limit
    assert vault.doctor().ok
    (vault.state / "config.yaml").write_text("write:\n  max_text_chars: 40\n", encoding="utf-8")
    body = "The deploy window moved to Wednesday at 23:00, says ops."
    write_note(vault, "inbox/Pasted by hand.md", f"---\ntype: fact\n---\n{body}\n")
    size = len(f"---\ntype: fact\n---\n{body}\n".encode())
    report = Vault(vault.root).doctor()
    assert not report.ok
    assert report.oversized == [{"path": "inbox/Pasted by hand.md", "chars": len(body), "bytes": size, "limit": 40}]
    assert written.path not in {item["path"] for item in report.oversized}
    for command in ("doctor", "lint"):
        done = runner.invoke(app, [command, "--vault", str(vault.root)])
        assert done.exit_code == 3
        assert (f"oversized note: inbox/Pasted by hand.md ({len(body)} characters, {size} bytes; over "
                "write.max_text_chars): only its first 40 characters are indexed and recalled") in done.output
    found = json.loads(runner.invoke(app, ["lint", "--json", "--vault", str(vault.root)]).output)
    assert found["oversized"][0]["path"] == "inbox/Pasted by hand.md" and "oversized" in found["fixes"]


def test_the_sample_vault_holds_no_note_near_the_limit(sample):
    assert sample.doctor().oversized == []
    assert max(len(m.content) for m in sample.list()) < LIMIT / 100
