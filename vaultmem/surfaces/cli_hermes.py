"""`vaultmem hermes install|status|uninstall`: vaultmem as Hermes Agent's memory provider."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, sub_app, app
from .console import print_json, say


hermes_app = sub_app("Hermes Agent: install vaultmem as its memory provider, check it, remove it.")
app.add_typer(hermes_app, name="hermes")
HermesHomeOpt = Annotated[Optional[Path], typer.Option(
    "--hermes-home", envvar="HERMES_HOME", show_envvar=True, metavar="PATH",
    help="Hermes' home folder (default ~/.hermes).")]


@hermes_app.command("install")
def hermes_install(hermes_home: HermesHomeOpt = None,
                   vault: Annotated[Optional[Path], typer.Option(
                       "--vault", "-V", metavar="PATH",
                       help="The vault to use (made a vault if it is not one); default: $VAULTMEM_VAULT, "
                            "$OBSIDIAN_VAULT_PATH, else $HERMES_HOME/vaultmem.")] = None,
                   json_out: JsonOpt = False) -> None:
    """Write the plugin into $HERMES_HOME/plugins/vaultmem/ and set memory.provider: vaultmem in
    $HERMES_HOME/config.yaml (no other line of it changes).

    \b
    Example:
      vaultmem hermes install --vault ~/Obsidian/Memory
    """
    from .hermes import install

    _hermes_report(install(hermes_home, vault), json_out, "installed")


@hermes_app.command("status")
def hermes_status(hermes_home: HermesHomeOpt = None, json_out: JsonOpt = False) -> None:
    """Whether the plugin is installed and active, which vault it uses, and whether it can open it.

    \b
    Example:
      vaultmem hermes status --json
    """
    from .hermes import status

    _hermes_report(status(hermes_home), json_out, "status")


@hermes_app.command("uninstall")
def hermes_uninstall(hermes_home: HermesHomeOpt = None, json_out: JsonOpt = False) -> None:
    """Remove the plugin and clear memory.provider when it is vaultmem; the vault and its notes stay.

    \b
    Example:
      vaultmem hermes uninstall --hermes-home ~/.hermes/profiles/coder
    """
    from .hermes import uninstall

    _hermes_report(uninstall(hermes_home), json_out, "uninstalled")


def _hermes_report(report: dict, json_out: bool, what: str) -> None:
    if json_out:
        print_json(report)
        return
    say(f"vaultmem for Hermes ({what}):")
    for key, value in report.items():
        if value not in ("", None):  # `reason:` only when there is one (--json keeps every field)
            shown = ("yes" if value else "no") if isinstance(value, bool) else value
            say(f"  {key.replace('_', ' ')}: {shown}")


__all__ = ["HermesHomeOpt", "hermes_app", "hermes_install", "hermes_status", "hermes_uninstall"]
