"""`vaultmem forget`, `restore`, `decay` and `gc` (issue 17 items 4-5): thin wrappers over the Vault."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, VaultOpt, app
from .console import open_vault, print_json, say

DateOpt = Annotated[Optional[str], typer.Option(metavar="DATE", help="YYYY-MM-DD or ISO 8601 (write time).")]
ReasonOpt = Annotated[str, typer.Option("--reason", metavar="TEXT", help="Why (required; kept in the audit log).")]


@app.command()
def forget(
    ids: Annotated[Optional[list[str]], typer.Argument(metavar="ID", help="Ids, vault paths or titles (any number).", show_default=False)] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", "-t", metavar="TAG",
                                                     help="Only memories with this tag (repeatable: all of them).")] = None,
    query: Annotated[Optional[str], typer.Option("--query", "-q", metavar="Q",
                                                 help="Only memories holding every term of Q.")] = None,
    since: DateOpt = None,
    until: DateOpt = None,
    source: Annotated[Optional[str], typer.Option(metavar="S", help="Only memories from this source.")] = None,
    reason: ReasonOpt = ...,  # type: ignore[assignment]
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would go; change nothing.")] = False,
    hard: Annotated[bool, typer.Option("--hard", help="Delete the files instead of archiving them.")] = False,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Archive the memories matching every selector given (ids, tags, query, time, source): moved to
    archive/ with status archived, a line in today's episode note, audited with the reason.
    `vaultmem restore ID` undoes it; --hard deletes instead (audited, not undoable). Exit 3 when a note
    was edited meanwhile and left as it is.

    \b
    Example:
      vaultmem forget --tag weekly_sync --until 2026-10-10 --reason "old sync notes" --dry-run
      would archive: 2 notes
    """
    result = open_vault(vault).forget_where(ids=ids or (), tags=tag or (), query=query or "", since=since,
                                            until=until, source=source, reason=reason, dry_run=dry_run, hard=hard)
    print_forgotten(result, json_out)


def print_forgotten(result, json_out: bool) -> None:
    """What forget or gc did (or would do), then exit 3 if a note was skipped."""
    if json_out:
        print_json(result.to_dict())
    else:
        say(f"{result.action.replace('-', ' ')}: {len(result.notes)} note{'s' if len(result.notes) != 1 else ''}", style="good")
        for note in result.notes:
            why = f"  (score {note['effective']:.3f}, last use {note['last_use'] or 'never'})" if "effective" in note else ""
            say(f"  {note['path']}{' -> ' + note['to'] if note['to'] else ''}{why}")
        for item in result.skipped:
            say(f"  skipped {item['path']}: {item['why']}", style="warn")
    if result.skipped:
        raise typer.Exit(3)


@app.command()
def restore(ref: Annotated[str, typer.Argument(metavar="ID", help="The archived memory's id, path or title.")],
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Undo a forget or gc: the archived memory goes back to memories/ with the status it had before
    (audited, and a line in today's episode note). A note that is not archived is an error.

    \b
    Example:
      vaultmem restore "Atlas staging on port 8080"
      restored: memories/Atlas staging on port 8080.md (status active)
    """
    result = open_vault(vault).restore(ref)
    if json_out:
        print_json(result.to_dict())
        return
    say(f"{result.action}: {result.path} (status {result.status})", style="good")


@app.command()
def decay(
    factor: Annotated[float, typer.Option("--factor", metavar="F", help="Multiply strength by F (above 0, at most 1).")],
    tag: Annotated[list[str], typer.Option("--tag", "-t", metavar="TAG",
                                           help="The memories with this tag (repeatable: all of them).")],
    reason: Annotated[str, typer.Option("--reason", metavar="TEXT", help="Why (kept in the audit log).")] = "",
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Lower the strength of the memories with these tags: one event each in this device's log (no note
    is rewritten), which ranking and gc read; pinned memories are left alone. Repeated, the factors
    multiply, never below 0.001.

    \b
    Example:
      vaultmem decay --factor 0.5 --tag weekly_sync --reason "old meeting notes"
      decayed: 6 notes by x0.5
    """
    result = open_vault(vault).decay(tag, factor, reason)
    if json_out:
        print_json(result.to_dict())
        return
    say(f"decayed: {len(result.notes)} note{'s' if len(result.notes) != 1 else ''} by x{result.factor:g}", style="good")
    for item in result.skipped:
        say(f"  skipped {item['path']}: {item['why']}", style="warn")


@app.command()
def gc(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be archived; change nothing.")] = False,
    include_user: Annotated[bool, typer.Option("--include-user", help="Also memories of trust user.")] = False,
    include_permanent: Annotated[bool, typer.Option("--include-permanent",
                                                    help="Also memories of lifecycle permanent.")] = False,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Archive the memories whose effective score fell below `gc.threshold` and that were not used for
    `gc.unused_days` (config). Never pinned ones. Prints each with its score and last use; running it
    again archives nothing more. Exit 3 when a note edited meanwhile was left as it is.

    \b
    Example:
      vaultmem gc --dry-run
      would archive: …
    """
    result = open_vault(vault).gc(dry_run=dry_run, include_user=include_user, include_permanent=include_permanent)
    print_forgotten(result, json_out)


__all__ = ["DateOpt", "ReasonOpt", "decay", "forget", "gc", "print_forgotten", "restore"]
