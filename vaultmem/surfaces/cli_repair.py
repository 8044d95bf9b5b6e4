"""`vaultmem repair`, `vaultmem lint` and `vaultmem hook`: the guard for what bypasses the merge driver
(issue 16 items 4 and 8). Registered by one import line at the end of cli.py."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli_app import EXIT_ERROR, JsonOpt, VaultOpt, app, show_report, sub_app
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
    show_report(open_vault(vault).repair(dry_run), json_out, _print_repairs)


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


hook_app = sub_app("The git pre-commit hook that refuses conflict markers, secrets and mass deletions in notes.")
app.add_typer(hook_app, name="hook")


@hook_app.command("install")
def hook_install(vault: VaultOpt = None, force: Annotated[bool, typer.Option(
                     "--force", help="Keep a pre-commit hook that is there as pre-commit.before-vaultmem and run it "
                                     "first.")] = False,
                 json_out: JsonOpt = False) -> None:
    """Install the pre-commit hook in the vault's git repository (it runs `vaultmem hook run` with this
    Python, so a pipx or venv install works); another tool's hook is never overwritten without --force.

    \b
    Example:
      vaultmem hook install
      installed
    """
    done = open_vault(vault).install_hook(force)
    if json_out:
        print_json(done)
        return
    kept = f" (runs {done['chained']} first)" if done["chained"] else ""
    say(f"{done['action']}: {done['hook']}{kept}", style="good")


@hook_app.command("uninstall")
def hook_uninstall(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Remove vaultmem's pre-commit hook (a hook it kept is put back).

    \b
    Example:
      vaultmem hook uninstall
    """
    done = open_vault(vault).uninstall_hook()
    if json_out:
        print_json(done)
        return
    back = f"; {done['restored']} is back" if done["restored"] else ""
    say(f"{done['action']}: {done['hook']}{back}", style="good")


@hook_app.command("run")
def hook_run(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Check the staged notes as the pre-commit hook does: conflict markers, secrets, more deletions than
    sync.max_deletions (exit 1 refuses the commit).

    \b
    Example:
      vaultmem hook run
      staged notes ok
    """
    show_report(open_vault(vault).check_staged(), json_out, _print_hook, failing=EXIT_ERROR)


def _print_hook(report) -> None:
    for item in report.conflict_markers:
        say(f"conflict markers in {item['path']}, line {item['line']}: run `vaultmem repair`", style="warn")
    for item in report.secrets:
        say(f"secret ({', '.join(item['kinds'])}) in {item['path']}: remove it, then stage the note again",
            style="warn")
    if report.deleted > report.max_deletions:
        say(f"{report.deleted} notes deleted, more than sync.max_deletions ({report.max_deletions}): if you mean "
            "it, raise sync.max_deletions in .vaultmem/config.yaml or commit with --no-verify", style="warn")
    if report.ok:
        say(f"staged notes ok ({report.checked} checked)", style="good")
    else:
        say("vaultmem refused the commit (the staged notes are unchanged)", style="warn")


__all__ = ["hook_app", "hook_install", "hook_run", "hook_uninstall", "repair"]
