"""`vaultmem hermes install | status | uninstall`: put the provider where Hermes 0.19.0 looks for it.

install writes $HERMES_HOME/plugins/vaultmem/ (template.py) and sets `memory.provider: vaultmem`
in $HERMES_HOME/config.yaml by editing that one line of text: Hermes' config is a person's file,
with comments and an order of their own, and a YAML round trip would drop the comments. Every edit
is checked by parsing both texts: the result must equal the original with only that key changed.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from ... import __version__
from ...errors import ConfigError, VaultmemError
from . import settings as cfg
from .provider import NAME, VaultmemProvider
from .template import PLUGIN_INIT, PLUGIN_YAML

PLUGIN_FILES = ("__init__.py", "plugin.yaml")
_TOP_MEMORY = re.compile(r"^memory\s*:(?P<rest>.*)$")
_KEY = re.compile(r"^(?P<indent>[ \t]+)(?P<key>[^\s:#][^:#]*?)\s*:(?P<rest>.*)$")


def install(hermes_home: str | os.PathLike[str] | None = None, vault: str | os.PathLike[str] | None = None) -> dict:
    """Write the plugin, activate it in config.yaml, save --vault (made a vault if it is not one)."""
    from ...vault import Vault

    home = cfg.hermes_home(hermes_home)
    home.mkdir(parents=True, exist_ok=True)
    if vault is not None:
        Vault.init(Path(vault).expanduser())  # an existing vault is left as it is
        cfg.save_settings(home, {"vault": str(vault)})
    plugin = home / "plugins" / NAME
    plugin.mkdir(parents=True, exist_ok=True)
    site = str(Path(__file__).resolve().parents[3])  # the folder holding the vaultmem package
    _write(plugin / "__init__.py", PLUGIN_INIT.format(version=__version__, site=site))
    _write(plugin / "plugin.yaml", PLUGIN_YAML.format(version=__version__))
    changed = _set_provider(home / "config.yaml", NAME)
    return {**status(home), "config_changed": changed}


def uninstall(hermes_home: str | os.PathLike[str] | None = None) -> dict:
    """Remove the plugin folder and clear `memory.provider` when it names vaultmem; the vault and the
    saved settings stay (memories are never deleted by an uninstall)."""
    home = cfg.hermes_home(hermes_home)
    plugin = home / "plugins" / NAME
    removed = plugin.is_dir()
    if removed:
        shutil.rmtree(plugin)
    config = home / "config.yaml"
    changed = _active(config) == NAME and _set_provider(config, "")
    return {"hermes_home": str(home), "plugin_removed": removed, "config_changed": bool(changed),
            "vault_kept": str(cfg.choose_vault(home, cfg.load_settings(home)).path)}


def status(hermes_home: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What is installed where, which vault the provider would use and whether it can."""
    home = cfg.hermes_home(hermes_home)
    plugin = home / "plugins" / NAME
    found: dict[str, Any] = {"hermes_home": str(home), "plugin": str(plugin),
                             "plugin_installed": all((plugin / f).is_file() for f in PLUGIN_FILES),
                             "active": _active(home / "config.yaml") == NAME}
    provider = VaultmemProvider(hermes_home=home)
    try:
        settings = cfg.load_settings(home)
        choice = cfg.choose_vault(home, settings)
        found.update(vault=str(choice.path), vault_origin=choice.origin, budget=cfg.budget_of(settings),
                     namespace=settings.get("namespace") or "(the Hermes profile)")
    except VaultmemError as exc:
        found.update(vault=None, vault_origin=None)
        found["reason"] = str(exc)
    reason = provider.unavailable_reason()
    found.update(available=reason == "", reason=reason)
    return found


# -- config.yaml, edited as text ---------------------------------------------------------------------
def _active(config: Path) -> str:
    """memory.provider of a Hermes config.yaml ("" when unset or unreadable)."""
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8-sig")) or {}
    except (OSError, yaml.YAMLError):
        return ""
    memory = data.get("memory") if isinstance(data, dict) else None
    return str(memory.get("provider") or "") if isinstance(memory, dict) else ""


def _set_provider(config: Path, value: str) -> bool:
    """Set memory.provider in config.yaml, changing that one line (or adding it); True when changed."""
    original = config.read_text(encoding="utf-8") if config.exists() else ""
    updated = set_memory_provider(original, value)
    if updated == original:
        return False
    tmp = config.with_name(f".{config.name}.vaultmem-tmp")
    tmp.write_text(updated, encoding="utf-8")
    if config.exists():
        shutil.copymode(config, tmp)
    os.replace(tmp, config)
    return True


def set_memory_provider(text: str, value: str) -> str:
    """The config text with memory.provider set to value, every other line as it was.

    Raises ConfigError when the file is not YAML, or when `memory:` is written in a form a line edit
    cannot change safely (a flow mapping such as `memory: {provider: x}`).
    """
    before = _parsed(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _TOP_MEMORY.match(line.rstrip("\r\n"))), None)
    entry = f"provider: {_scalar(value)}"
    if start is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += newline
        lines.append(f"memory:{newline}  {entry}{newline}")
    else:
        lines = _edit_block(lines, start, entry, newline)
    updated = "".join(lines)
    expected = {**before, "memory": {**(before.get("memory") or {}), "provider": value}}
    if _parsed(updated) != expected:
        shown = value or '""'
        raise ConfigError(f"config.yaml could not be edited line by line; set `memory.provider: {shown}` in it by hand")
    return updated


def _edit_block(lines: list[str], start: int, entry: str, newline: str) -> list[str]:
    rest = _TOP_MEMORY.match(lines[start].rstrip("\r\n"))["rest"]  # type: ignore[index]
    inline = rest.split(" #", 1)[0].strip()
    if inline in ("{}", "null", "~"):  # an empty mapping written inline becomes a block of one key
        comment = rest[len(rest.split(" #", 1)[0]):]
        lines[start] = f"memory:{comment}{newline}  {entry}{newline}"
        return lines
    if inline and not inline.startswith("#"):
        raise ConfigError("config.yaml's `memory:` is written inline; set `memory.provider` in it by hand")
    indent, end = None, start + 1
    while end < len(lines):
        line = lines[end].rstrip("\r\n")
        if line.strip() and not line.lstrip().startswith("#") and not line[:1].isspace():
            break  # the next top-level key
        found = _KEY.match(line)
        if found and indent is None:
            indent = found["indent"]
        if found and found["indent"] == indent and found["key"] == "provider":
            comment = found["rest"].split(" #", 1)
            tail = f"  #{comment[1]}" if len(comment) > 1 else ""
            lines[end] = f"{indent}{entry}{tail}{newline}"
            return lines
        end += 1
    lines.insert(start + 1, f"{indent or '  '}{entry}{newline}")
    return lines


def _scalar(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9_.-]+", value) else '""' if not value else f'"{value}"'


def _parsed(text: str) -> dict:
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config.yaml is not valid YAML ({exc}); nothing was changed") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("config.yaml does not hold a mapping; nothing was changed")
    return data


def _write(path: Path, content: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(content, encoding="utf-8")
    os.replace(tmp, path)


__all__ = ["PLUGIN_FILES", "install", "set_memory_provider", "status", "uninstall"]
