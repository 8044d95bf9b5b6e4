"""Export and import (issue 16 item 7): an export restores a vault byte for byte with its ids; Hermes'
memory files and a folder of Markdown notes (YAML, TOML, JSON frontmatter) come in through the write
pipeline; a source is never modified; an export's path cannot reach outside the note folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import SAMPLE, snapshot_files
from vaultmem import Vault
from vaultmem.errors import VaultmemError
from vaultmem.sync.mergedriver import CALLOUT
from vaultmem.sync.exchange import EXPORT_SCHEMA, export_records, import_source
from vaultmem.notes.note import parse_note


def _notes(vault: Vault) -> dict[str, bytes]:
    return {p.relative_to(vault.root).as_posix(): p.read_bytes()
            for folder in ("memories", "entities", "episodes", "inbox")
            for p in (vault.root / folder).rglob("*.md")}


def test_an_export_restores_every_note_byte_for_byte_with_its_id_and_a_second_import_keeps_them(sample, tmp_path):
    exported = tmp_path / "export.jsonl"
    records = list(export_records(sample))
    assert records and all(r["schema"] == EXPORT_SCHEMA and r["text"] for r in records)
    exported.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    fresh = Vault.init(tmp_path / "restored")
    assert import_source(fresh, exported)["restored"] == len(records)
    assert _notes(fresh) == _notes(sample)
    assert {h.id for h in fresh.recall("CT2024", record_access=False)} == \
        {h.id for h in sample.recall("CT2024", record_access=False)}
    assert import_source(fresh, exported) == {"source": str(exported), "kind": "vaultmem", "unchanged": len(records)}
    assert _notes(fresh) == _notes(sample)


def _export(vault: Vault, where) -> Path:
    where.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in export_records(vault)), encoding="utf-8")
    return where


def _edit(vault: Vault, note_id: str, old: str, new: str) -> None:
    path = vault.root / vault.get(note_id).path
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")


def test_an_import_merges_a_note_the_vault_has_by_the_driver_rules(vault, tmp_path):
    note = vault.remember("The staging database is db-stage-2.\n\nIt is rebuilt nightly.", tags=["db"], score=5)
    laptop = Vault.init(tmp_path / "laptop")
    assert import_source(laptop, _export(vault, tmp_path / "first.jsonl"))["restored"] >= 1
    # the laptop adds a tag and a paragraph; this vault raises the score and rewords the last line
    _edit(laptop, note.id, "tags: [db]", "tags: [db, staging]")
    _edit(laptop, note.id, "It is rebuilt nightly.", "It is rebuilt nightly.\n\nBackups run at 02:00.")
    _edit(vault, note.id, "score: 5.0", "score: 8.0")
    summary = import_source(vault, _export(laptop, tmp_path / "laptop.jsonl"))
    assert summary["merged"] == 1
    merged = vault.markdown(note.id)
    meta = parse_note(merged).meta
    assert meta["tags"] == ["db", "staging"] and meta["score"] == 8.0 and meta["id"] == note.id
    assert "Backups run at 02:00." in merged and CALLOUT not in merged
    again = import_source(vault, tmp_path / "laptop.jsonl")
    assert again.get("merged", 0) == 0 and vault.markdown(note.id) == merged  # nothing new the second time


def test_an_import_keeps_both_texts_of_a_line_both_vaults_changed_in_a_callout(vault, tmp_path):
    note = vault.remember("Deploys go out on Tuesdays at 22:00.")
    laptop = Vault.init(tmp_path / "laptop")
    import_source(laptop, _export(vault, tmp_path / "first.jsonl"))
    _edit(laptop, note.id, "at 22:00.", "at 23:00.")
    _edit(vault, note.id, "Tuesdays", "Wednesdays")
    assert import_source(vault, _export(laptop, tmp_path / "laptop.jsonl"))["merged"] == 1
    merged = vault.markdown(note.id)
    assert CALLOUT in merged and "Tuesdays at 23:00." in merged and "Wednesdays at 22:00." in merged
    assert parse_note(merged).meta["status"] == "needs-verification"
    assert import_source(vault, tmp_path / "laptop.jsonl").get("merged", 0) == 0


@pytest.mark.parametrize("path", ["../../etc/passwd.md", "/etc/x.md", "memories/../../x.md", "notes.txt",
                                  ".vaultmem/config.md", "memories\\..\\x.md"])
def test_an_exported_path_outside_the_note_folders_is_refused_and_nothing_is_written(vault, tmp_path, path):
    exported = tmp_path / "bad.jsonl"
    exported.write_text(json.dumps({"schema": EXPORT_SCHEMA, "path": path, "id": "01J0000000000000000000000X",
                                    "kind": "memory", "text": "---\nid: x\n---\nhi\n"}) + "\n", encoding="utf-8")
    before = snapshot_files(vault.root)
    with pytest.raises(VaultmemError, match="must be a .md file in a note folder"):
        import_source(vault, exported)
    assert not (tmp_path / "etc").exists() and snapshot_files(vault.root).keys() == before.keys()


def test_hermes_memory_files_become_memories_as_the_provider_mirrors_them_and_stay_untouched(vault, tmp_path):
    hermes = tmp_path / "memories"
    hermes.mkdir()
    (hermes / "MEMORY.md").write_text("Deploys go out on Tuesdays at 22:00.\n§\nThe staging host is db-stage-2.\n",
                                      encoding="utf-8")
    (hermes / "USER.md").write_text("Prefers concise answers.\n§\n\n§\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in hermes.iterdir()}
    summary = import_source(vault, hermes)
    assert summary["kind"] == "hermes" and summary["created"] == 3
    assert {p.name: p.read_bytes() for p in hermes.iterdir()} == before
    [user] = vault.recall("", tags=["hermes/user"], record_access=False)
    assert user.content == "Prefers concise answers." and user.lifecycle == "preference"
    assert import_source(vault, hermes).get("created", 0) == 0  # a second import finds them all


def test_a_markdown_folder_in_any_frontmatter_style_comes_in_with_its_tags_and_times(vault, tmp_path):
    folder = tmp_path / "old-notes"
    (folder / ".obsidian").mkdir(parents=True)
    (folder / ".obsidian" / "skip.md").write_text("not a note", encoding="utf-8")
    (folder / "yaml.md").write_text("---\ntags: [ops, deploy]\ndate: 2025-03-04\n---\nDeploys need two reviewers.\n",
                                    encoding="utf-8")
    (folder / "toml.md").write_text('+++\ntags = ["billing"]\n+++\nInvoices go out on the 1st.\n', encoding="utf-8")
    (folder / "json.md").write_text('{"tags": "crm"}\nThe CRM export runs nightly.\n', encoding="utf-8")
    (folder / "plain.md").write_text("No frontmatter at all, just a fact.\n", encoding="utf-8")
    before = snapshot_files(folder)
    summary = import_source(vault, folder)
    assert summary == {"source": str(folder), "kind": "markdown", "created": 4}
    assert snapshot_files(folder) == before
    deploy = next(m for m in vault.list() if "two reviewers" in m.content)
    meta = parse_note((vault.root / deploy.path).read_bytes()).meta
    assert {"ops", "deploy"} <= set(meta["tags"]) and str(meta["timestamp"]).startswith("2025-03-04")
    # source import:<folder> is external trust (policy.external_sources): candidates in the inbox
    assert meta["source"] == "import:old-notes" and meta["trust"] == "external" and meta["status"] == "candidate"
    assert deploy.path.startswith("inbox/")
    assert [h.content for h in vault.recall("", tags=["billing"], status=["candidate"], record_access=False)] == \
        ["Invoices go out on the 1st."]


def test_the_cli_round_trip_and_a_missing_source(tmp_path):
    import subprocess
    import sys

    work = tmp_path / "sample"
    shutil.copytree(SAMPLE, work, ignore=shutil.ignore_patterns("cache", "devices"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "vaultmem", *a], capture_output=True, text=True,  # noqa: E731
                                    timeout=120)
    assert run("export", "--vault", str(work), "--out", str(tmp_path / "x.jsonl")).returncode == 0
    Vault.init(tmp_path / "copy")
    done = run("import", str(tmp_path / "x.jsonl"), "--vault", str(tmp_path / "copy"), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["restored"] > 10
    missing = run("import", str(tmp_path / "nothing-here"), "--vault", str(tmp_path / "copy"))
    assert missing.returncode == 1 and "nothing to import" in missing.stderr


BOMB = "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n" \
       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n---\nboom\n"


@pytest.mark.parametrize(("text", "problem"), [(BOMB, "cannot be read"), ("---\ntags: [a\n---\nbody\n", "cannot be read"),
                                               (b"\xff\xfe binary".decode("latin-1"), None)])
def test_a_hostile_note_in_an_imported_folder_is_one_clear_error_and_nothing_is_written(vault, tmp_path, text, problem):
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "a fine note.md").write_text("A fine note.\n", encoding="utf-8")
    if problem is None:
        (folder / "binary.md").write_bytes(b"\xff\xfe\x00binary")
        problem = "binary.md is not UTF-8 text: byte 0xff at byte offset 0"
    else:
        (folder / "hostile.md").write_text(text, encoding="utf-8")
    with pytest.raises(VaultmemError, match=problem):
        import_source(vault, folder)
    assert not list((vault.root / "inbox").glob("*.md")) and not list((vault.root / "memories").glob("*.md"))
