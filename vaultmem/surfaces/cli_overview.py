"""`vaultmem dashboard` and `vaultmem report` (issue 30 items 3 and 4): the vault as a whole, to look at; and
`vaultmem why ID` (item 1): one memory's story. Registered by one import line at the end of cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, VaultOpt, app
from .console import open_vault, print_json, say


@app.command()
def dashboard(vault: VaultOpt = None,
              force: Annotated[bool, typer.Option(
                  "--force", help="Replace a dashboard file you edited (or one vaultmem did not write), after "
                                  "copying it to .vaultmem/dashboard-backup/.")] = False,
              json_out: JsonOpt = False) -> None:
    """Write the Obsidian dashboard into the memory root: `Memory dashboard.base` (Bases views, Obsidian 1.9+)
    and `Memory dashboard.md` (the same as Dataview queries): memories by namespace, fading soon, needs
    verification, recently superseded, pinned. Run it again after changing folders or half-lives: an
    unedited file is brought up to date, an edited one is kept (and said so) unless --force.

    \b
    Example:
      vaultmem dashboard
      Memory dashboard.base
    """
    done = open_vault(vault).dashboard(force)
    if json_out:
        print_json(done.to_dict())
        return
    for item in done.files:
        if item["action"] == "kept":
            say(f"kept: {item['path']} ({item['why']}; --force replaces it, backed up first)", style="warn")
        elif item["action"] == "replaced":
            say(f"replaced: {item['path']} (the old one is in {item['backup']})", style="good")
        else:
            say(f"{item['action']}: {item['path']}", style="good" if item["action"] != "unchanged" else "dim")


@app.command()
def report(vault: VaultOpt = None,
           out: Annotated[Optional[Path], typer.Option(
               "--out", metavar="DIR", help="Folder to write vaultmem-report.html into (default: the vault's "
                                            ".vaultmem/cache/, rebuilt like the index).")] = None,
           note: Annotated[Optional[str], typer.Option(
               "--note", metavar="ID", help="Also draw this memory's strength over time with its uses and "
                                           "feedback (id, path or title).")] = None,
           lint: Annotated[bool, typer.Option(
               "--lint", help="Run `vaultmem lint` now for the findings shown (default: the last ones kept by "
                              "doctor or lint, run now when there are none).")] = False,
           json_out: JsonOpt = False) -> None:
    """Write one self-contained HTML report (no script, no network when you open it): strength over time,
    the memories by status, lifecycle, namespace and source, what decay takes in the next 30 and 90 days,
    the entity graph and the lint findings.

    \b
    Example:
      vaultmem report --out . --note 01M4VZM6H0TGH81P9ENBTTGEQN
      vaultmem-report.html
    """
    written = open_vault(vault).report(out, note=note, fresh_lint=lint)
    if json_out:
        print_json(written.to_dict())
        return
    path = Path(written.path)
    say(f"Wrote {path} ({written.bytes / 1024:,.0f} KB, {written.memories:,} memories): open {path.as_uri()}",
        style="good")


__all__ = ["dashboard", "report"]


@app.command()
def why(ref: Annotated[str, typer.Argument(metavar="ID", help="The memory's id, vault path or title.")],
        vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Tell one memory's story, oldest first: when and by whom it was written, what merged into it, what it
    replaced and what replaced it (the whole supersede chain), each commit that changed it in git (a short
    diff of the text), feedback, pins, forget and restore; then its strength now and in 30 days.

    \b
    Example:
      vaultmem why 01M4VZM6H0TGH81P9ENBTTGEQN
      supersede chain
    """
    story = open_vault(vault).why(ref)
    if json_out:
        print_json(story.to_dict())
        return
    say(story.title, style="title")
    say(f"{story.path}  id={story.id}  status={story.status}  namespace={story.namespace}", style="dim")
    say(story.text)
    say("")
    for event in story.events:
        by = f"  ({event['by']})" if event["by"] else ""
        commit = f"  commit {event['commit'][:8]}" if "commit" in event else ""
        say(f"{event['when'][:16].replace('T', ' ')}  {event['what']}{by}{commit}")
        if event.get("text"):
            say(f"                  “{event['text']}”", style="dim")
        for line in event.get("diff", []):
            say(f"                  {line}", style="dim")
    if story.chain:
        say("")
        say("supersede chain, oldest first:", style="title")
        for link in story.chain:
            mark = "→" if link.get("this") else " "
            say(f" {mark} {link['timestamp'][:10]}  {link['status']:<11} {link['title']}"
                + ("  (this one)" if link.get("this") else ""))
    s = story.strength
    last = f", last used {s['last_access'][:16].replace('T', ' ')}" if s["last_access"] else ", never recalled"
    life = "never fades" if s["half_life_hours"] == float("inf") else f"half-life {s['half_life_hours']:g} h"
    say("")
    say(f"strength: score {s['score']:g}, {s['lifecycle'] or 'default'} ({life}), used {s['uses']} times{last}")
    say(f"          effective {s['effective']:.3f} now, {s['in_30_days']:.3f} in 30 days without use")
    say(story.git, style="dim")
