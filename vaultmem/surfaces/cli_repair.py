"""`vaultmem repair`, `vaultmem lint` and `vaultmem hook`: the guard for what bypasses the merge driver
(issue 16 items 4 and 8). Registered by one import line at the end of cli.py."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli import EXIT_PROBLEMS, JsonOpt, VaultOpt, app
from .console import open_vault, print_json, say


@app.command()
def repair(vault: VaultOpt = None, dry_run: Annotated[bool, typer.Option(
               "--dry-run", help="Say what would be repaired; change nothing.")] = False,
           json_out: JsonOpt = False) -> None:
    """Fold back what bypassed the merge driver: git conflict markers in notes, sync tools' conflict copies
    and second files with one memory id, merged by the driver's rules (exit 3 if something is left for you).

    Every file rewritten or removed is first copied to .vaultmem/repair-backup/, and every repair is
    audited in this device's log. A second run finds nothing to do.

    \b
    Example:
      vaultmem repair --dry-run
      nothing to repair
    """
    report = open_vault(vault).repair(dry_run)
    if json_out:
        print_json(report.to_dict())
    else:
        _print_repairs(report)
    if not report.ok:
        raise typer.Exit(EXIT_PROBLEMS)


def _print_repairs(report) -> None:
    done = "would repair" if report.dry_run else "repaired"
    for item in report.repaired:
        what = {"markers": "conflict markers", "copy": "sync conflict copies",
                "duplicate-id": "copies with its id"}[item.kind]
        folded = f" <- {', '.join(item.copies)}" if item.copies else ""
        callout = " (both sides changed it: see the callout, needs-verification)" if item.callout else ""
        say(f"{done} {what}: {item.path}{folded}{callout}", style="good")
    for item in report.skipped:
        say(f"left as it is: {item.path}: {item.reason}", style="warn")
    if not report.repaired and not report.skipped:
        say("nothing to repair", style="good")
