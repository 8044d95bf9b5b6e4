"""`vaultmem hooks list|enable|disable|test` (issue 29 item 4): the on-write hooks of config.yaml on this
device. Registered by one import line at the end of cli.py."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from .cli_app import EXIT_PROBLEMS, JsonOpt, VaultOpt, app, sub_app
from .console import open_vault, print_json, say

hooks_app = sub_app("On-write hooks: programs config.yaml names, run after a note is written, merged, superseded "
                    "or forgotten, once enabled on this device.")
app.add_typer(hooks_app, name="hooks")
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The hook's name in config.yaml (hooks.run).")]


@hooks_app.command("list")
def list_hooks(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """The hooks config.yaml names: what each runs, whether this device runs it (enabled, not enabled,
    changed since enabled) and the failures recorded here since it was enabled. Exit 3 if any failed.

    \b
    Example:
      vaultmem hooks list
      count  not enabled
    """
    hooks = open_vault(vault).hook_list()
    if json_out:
        print_json(hooks)
    elif not hooks:
        say("no hooks in .vaultmem/config.yaml (hooks.run)", style="dim")
    for hook in [] if json_out else hooks:
        say(f"{hook['name']}  {hook['state']}  {hook['runs']}  (on {', '.join(hook['actions'])})",
            style="good" if hook["state"] == "enabled" else "warn")
        if hook["last_failure"]:
            last = hook["last_failure"]
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last["ts"]))
            say(f"  failed {hook['failures']} times since enabled; last {when}: {last['why']}", style="warn")
    if any(hook["failures"] for hook in hooks):
        raise typer.Exit(EXIT_PROBLEMS)


@hooks_app.command("enable")
def enable_hook(name: NameArg, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Let this device run a hook as config.yaml names it now. Read what it runs first: config.yaml
    travels with the vault, so anyone who can push to it can name a hook. A changed command (or
    script of the vault it runs) is off again until enabled again.

    \b
    Example:
      vaultmem hooks enable count
      enabled count: python3 -c
    """
    entry = open_vault(vault).enable_hook(name)
    if json_out:
        print_json(entry)
    else:
        say(f"enabled {name}: {entry['runs']}", style="good")


@hooks_app.command("disable")
def disable_hook(name: NameArg, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Stop running a hook on this device (config.yaml is left as it is).

    \b
    Example:
      vaultmem hooks disable count
      count was not enabled on this device
    """
    was = open_vault(vault).disable_hook(name)
    if json_out:
        print_json({"name": name, "disabled": was})
    else:
        say(f"disabled {name}" if was else f"{name} was not enabled on this device", style="good" if was else "dim")


@hooks_app.command("test")
def test_hook(name: NameArg, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Run a hook once now with a sample event (action "test", no note) and say how it went, enabled
    on this device or not (you ask for this one run by name). Exit 3 if it failed.

    \b
    Example:
      vaultmem hooks test count
      count ok in
    """
    result = open_vault(vault).test_hook(name)
    if json_out:
        print_json(result)
    elif result["ok"]:
        say(f"{name} ok in {result['seconds']} s: {result['runs']}", style="good")
    else:
        say(f"{name} failed: {result['why']}", style="warn")
        if result["stderr"]:
            say(result["stderr"].rstrip(), style="dim")
    if not result["ok"]:
        raise typer.Exit(EXIT_PROBLEMS)


__all__ = ["disable_hook", "enable_hook", "hooks_app", "list_hooks", "test_hook"]
