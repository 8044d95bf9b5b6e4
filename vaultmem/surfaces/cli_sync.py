"""`vaultmem sync`, `merge-driver`, `export`, `import` and `device show|reset`: the vault on every
machine (issue 16)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, VaultOpt, sub_app, app
from .console import open_vault, print_json, say


@app.command()
def sync(vault: VaultOpt = None, dry_run: Annotated[bool, typer.Option(
             "--dry-run", help="Say what would be set up and committed; change nothing.")] = False,
         json_out: JsonOpt = False) -> None:
    """Sync the vault through git: set it up for memory sync on first use (.gitattributes, the merge
    driver in .git/config, .gitignore), commit what changed, pull (merge), push, refresh the index.

    \b
    Example:
      vaultmem sync --dry-run
      changes:
    """
    report = open_vault(vault).sync(dry_run)
    if json_out:
        print_json(report)
        return
    if report["set_up"]:
        say(f"{'would set up' if dry_run else 'set up'}: {', '.join(report['set_up'])}")
    c = report["changes"]
    say(f"changes: {c['new']} new, {c['changed']} changed, {c['removed']} removed notes, {c['other']} other files")
    if report.get("commit"):
        say(f"committed: {report['commit']}", style="good")
    if report.get("pushed"):
        done = "pulled from and pushed to" if report.get("pulled") else "pushed to"
        here = "" if report["remote_branch"] == report["branch"] else f" (this clone's branch {report['branch']})"
        say(f"{done} {report['pushed_to']}{here}", style="good")
    elif not dry_run and not report["remote"]:
        say("no remote: committed locally (git remote add origin URL to share it)")


@app.command("export")
def export(out: Annotated[Optional[Path], typer.Option(
               "--out", "-o", metavar="FILE", help="Write the JSON lines here (default: standard output).")] = None,
           vault: VaultOpt = None) -> None:
    """Write every note as one JSON line (schema vaultmem-export/1: path, kind, id, properties, body and
    the note's whole text), which `vaultmem import` restores byte for byte.

    \b
    Example:
      vaultmem export --out memories-export.jsonl
    """
    v = open_vault(vault)
    stream = out.open("w", encoding="utf-8") if out else sys.stdout
    try:
        for record in v.export_records():
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        if out:
            stream.close()


@app.command("import")
def import_(source: Annotated[Path, typer.Argument(
                metavar="SOURCE", help="A vaultmem export (.jsonl), Hermes' memories folder (MEMORY.md, USER.md) "
                                       "or a folder of Markdown notes (YAML, TOML or JSON frontmatter).")],
            namespace: Annotated[Optional[str], typer.Option(
                "--namespace", "-n", metavar="NAME", help="The namespace of the imported memories.")] = None,
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Bring memories in; the source is only read. An export's notes come back with their ids (a note
    the vault has already is merged into it by the merge driver's rules); Hermes entries and Markdown notes go through the write
    pipeline (secrets cleaned, duplicates merged).

    \b
    Example:
      vaultmem import examples/hermes
      hermes import of examples/hermes: 4 created
    """
    summary = open_vault(vault).import_source(source, namespace)
    if json_out:
        print_json(summary)
    else:
        counts = ", ".join(f"{n} {action}" for action, n in summary.items() if action not in ("source", "kind"))
        say(f"{summary['kind']} import of {summary['source']}: {counts or 'nothing to import'}", style="good")


device_app = sub_app("This machine's device id: the name of its own event and audit logs in every vault.")
app.add_typer(device_app, name="device")


@device_app.command("show")
def device_show(json_out: JsonOpt = False) -> None:
    """Print this machine's device id and where it is kept.

    \b
    Example:
      vaultmem device show
    """
    from .. import device_info

    info = device_info()
    if json_out:
        print_json(info)
    else:
        where = "$VAULTMEM_DEVICE_ID" if info["source"] == "env" else info["path"]
        say(f"{info['device']}  ({where})")


@device_app.command("reset")
def device_reset(json_out: JsonOpt = False) -> None:
    """Give this machine a new device id: do it on a cloned VM or a copied home directory, so that
    two machines never write one device log (the old id's logs stay and still count).

    \b
    Example:
      vaultmem device reset
      ->
    """
    from .. import reset_device_id

    changed = reset_device_id()
    if json_out:
        print_json(changed)
    else:
        say(f"{changed['old'] or '(none)'} -> {changed['device']}", style="good")


@app.command("merge-driver")
def merge_driver(
    base: Annotated[Path, typer.Argument(metavar="BASE", help="The common ancestor (git's %O).")],
    ours: Annotated[Path, typer.Argument(metavar="OURS", help="Ours (git's %A); the result is written here.")],
    theirs: Annotated[Path, typer.Argument(metavar="THEIRS", help="Theirs (git's %B).")],
    path: Annotated[str, typer.Argument(metavar="PATH", help="The note's path in the repository (git's %P).")],
) -> None:
    """Merge a note for git: properties field by field, bodies three-way, conflicts kept in a callout.

    Git runs it once set up: `*.md merge=vaultmem` in .gitattributes and
    `git config merge.vaultmem.driver "vaultmem merge-driver %O %A %B %P"`. A note is always merged
    (exit 0); a file that is not a note gets git's text merge (exit 1 on a conflict).

    \b
    Example (a note merged with itself stays byte for byte as it was):
      vaultmem merge-driver sample-vault/Welcome.md sample-vault/Welcome.md sample-vault/Welcome.md Welcome.md
    """
    from .. import run_merge_driver

    raise typer.Exit(run_merge_driver(base, ours, theirs, path))


__all__ = ["device_app", "device_reset", "device_show", "export", "import_", "merge_driver", "sync"]
