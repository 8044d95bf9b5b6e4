"""`vaultmem feedback`, `correct`, `pin`, `unpin` and what `stats --lambda` prints (issue 17 items 1-2)."""

from __future__ import annotations

import math
import time
from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, VaultOpt, app
from .console import open_vault, print_json, say

RefArg = Annotated[str, typer.Argument(metavar="REF", help="The memory's id, vault path or title.")]


@app.command()
def feedback(
    ref: RefArg,
    verdict: Annotated[str, typer.Argument(metavar="useful|wrong|outdated|confirm",
                                           help="useful/confirm raise the memory; wrong/outdated lower it and mark "
                                                "it needs-verification.")],
    note: Annotated[Optional[str], typer.Option("--note", metavar="TEXT", help="Why (kept in the event).")] = None,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Say whether a recalled memory helped: an event in this device's log that weighs in ranking
    (bounded: repeating it saturates). wrong/outdated also set `status: needs-verification`.

    \b
    Example:
      vaultmem feedback "Coffee order" useful --note "right order"
      recorded: useful on memories/Coffee order.md
    """
    result = open_vault(vault).feedback(ref, verdict, note or "")
    if json_out:
        print_json(result.to_dict())
        return
    flagged = f" (status {result.status})" if "status" in result.changed else ""
    say(f"{result.action}: {verdict} on {result.path}{flagged}", style="good")


@app.command()
def correct(
    ref: RefArg,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The corrected memory.")],
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Write a corrected memory that supersedes the old one (kept, linked, as history).

    \b
    Example:
      vaultmem correct "Timezone is Asia Shanghai" "Timezone is Europe/Berlin since December"
      created: memories/
    """
    v = open_vault(vault)
    result = v.correct(ref, text)
    if json_out:
        print_json(result.to_dict())
        return
    old = f", supersedes {v.get(result.supersedes).path}" if result.supersedes else ""  # its name, not its id
    say(f"{result.action}: {result.path} ({result.id}){old}", style="good")


@app.command()
def pin(ref: RefArg, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Pin a memory: `pinned: true` in its properties, so it no longer decays; the pin is recorded
    (its strength at its age) for `ranking.lambda: adaptive`.

    \b
    Example:
      vaultmem pin "Uses vim as main editor"
      pinned: memories/Uses vim as main editor.md
    """
    _print_marked(open_vault(vault).pin(ref), json_out)


@app.command()
def unpin(ref: RefArg, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Unpin a memory: `pinned` removed, it decays by its lifecycle again.

    \b
    Example:
      vaultmem unpin "Prefers concise answers"
      unpinned: memories/Prefers concise answers.md
    """
    _print_marked(open_vault(vault).unpin(ref), json_out)


def _print_marked(result, json_out: bool) -> None:
    if json_out:
        print_json(result.to_dict())
    else:
        say(f"{result.action}: {result.path}", style="good" if result.action != "unchanged" else None)


def print_lambda(report: dict) -> None:
    """`stats --lambda` for a person: the estimate, its bounds, and each pin event it came from."""
    state = "on" if report["enabled"] else "off (ranking.lambda: fixed)"
    say(f"adaptive lambda  {state}")
    if report["lambda"] is None:
        say("estimate         none (no pin event with an age and a ratio yet)")
    else:
        say(f"estimate         {report['lambda']:.6f} per hour (half-life {report['half_life_hours']:.1f} h)")
    low, high = report["bounds_hours"]
    say(f"bounds           half-life {low:g} h .. {high:g} h")
    say("")
    say("events", style="title")
    for ev in report["events"]:
        note = ev["title"] or f"{ev['id']} (gone)"  # its name; the id only of a note the vault no longer has
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(ev["ts"]))
        if ev["event"] == "unpin":
            say(f"  unpin  {when}  {note}")
            continue
        lam = ev.get("lambda")
        shown = "-" if lam is None or not math.isfinite(lam) else f"{lam:.6f}"
        say(f"  pin    {when}  {note}  age={ev['age_hours'] or 0:.1f} h  ratio={ev['ratio'] or 0:.4f}  lambda={shown}"
            f"  {'counted' if ev.get('counted') else 'not counted'}  ({ev['log']})")


__all__ = ["RefArg", "correct", "feedback", "pin", "print_lambda", "unpin"]
