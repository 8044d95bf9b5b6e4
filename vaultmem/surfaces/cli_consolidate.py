"""`vaultmem consolidate` (issue 17 item 7). Registered by one import line at the end of cli.py."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .cli_app import EXIT_PROBLEMS, JsonOpt, VaultOpt, app
from .console import open_vault, print_json, say


@app.command()
def consolidate(
    vault: VaultOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the groups and what would be written; write nothing.")] = False,
    min_repeats: Annotated[Optional[int], typer.Option("--min", metavar="N", min=2,
                                                       help="Repeats a group needs (default: consolidate.min_repeats, 3).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Turn repeated events or choices into one consolidated note each (`source: consolidation`, a
    `confidence`, `consolidates:` listing the sources, a link to each). No LLM: notes group by the
    terms they share (see docs/design.md). A second run writes nothing new; a new repeat updates the
    note; a consolidated note you delete is not made again. The sources are left as they are.
    Exit 3 when --dry-run finds something to write (three "ordered oat milk ..." notes would print
    `would create: 3 notes sharing Ordered, oat, milk (confidence 0.75)` and each source).

    \b
    Example:
      vaultmem consolidate --dry-run
      nothing to consolidate
    """
    report = open_vault(vault).consolidate(dry_run, min_repeats)
    if json_out:
        print_json(report.to_dict())
    else:
        _print_groups(report)
    if dry_run and report.written:
        raise typer.Exit(EXIT_PROBLEMS)


def _print_groups(report) -> None:
    dry_run = report.dry_run
    for group in report.groups:
        verb = {"create": "created", "update": "updated"}.get(group.action, group.action)
        if dry_run and group.action in ("create", "update"):
            verb = f"would {group.action}"
        where = f" -> {group.note['path']}" if group.note else ""
        say(f"{verb}: {len(group.sources)} notes sharing {', '.join(group.words)} (confidence {group.confidence})"
            f"{where}; {group.reason}", style="good" if group.action in ("create", "update") else "dim")
        for source in group.sources:
            say(f"  - {source['path']}")
    if not report.groups:
        say(f"nothing to consolidate ({report.candidates} candidate notes)", style="good")


__all__ = ["consolidate"]
