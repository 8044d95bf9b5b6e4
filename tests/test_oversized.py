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

from .conftest import REPO, snapshot_files

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
