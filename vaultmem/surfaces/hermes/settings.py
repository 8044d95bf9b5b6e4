"""Where the Hermes provider finds its home, its saved settings and its vault (no Hermes import).

Resolution, each step a small helper:
- Hermes' home: the argument, else $HERMES_HOME, else ~/.hermes (as Hermes itself resolves it).
- Saved settings: $HERMES_HOME/vaultmem.json, written by `vaultmem hermes install --vault` and by
  Hermes' `hermes memory setup` (the provider's save_config); per Hermes profile, since a profile
  is its own HERMES_HOME.
- The vault: the saved `vault`, else $VAULTMEM_VAULT, else $OBSIDIAN_VAULT_PATH, else
  $HERMES_HOME/vaultmem, which is the only one created on first use: a folder someone named is
  never turned into a vault behind their back (`vaultmem init` or `vaultmem hermes install --vault`
  does that).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError

SETTINGS_FILE = "vaultmem.json"
DEFAULT_VAULT = "vaultmem"  # under $HERMES_HOME
DEFAULT_BUDGET = 800
KEYS = ("vault", "namespace", "budget")
VAULT_ENV = ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH")


def hermes_home(given: str | os.PathLike[str] | None = None) -> Path:
    """Hermes' home: the argument, else $HERMES_HOME, else ~/.hermes."""
    if given:
        return Path(given).expanduser()
    env = os.environ.get("HERMES_HOME", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".hermes"


def load_settings(home: Path) -> dict[str, Any]:
    """The saved settings ({} when none); ConfigError when the file is not a JSON object."""
    path = home / SETTINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON ({exc}); fix or delete it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object with {', '.join(KEYS)}")
    return data


def save_settings(home: Path, values: dict[str, Any]) -> Path:
    """Merge `values` (known keys only; None or "" removes a key) into the saved settings."""
    unknown = set(values) - set(KEYS)
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(sorted(unknown))}; known: {', '.join(KEYS)}")
    settings = load_settings(home)
    for key, value in values.items():
        if value in (None, ""):
            settings.pop(key, None)
        else:
            settings[key] = _checked(key, value)
    home.mkdir(parents=True, exist_ok=True)
    path = home / SETTINGS_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(settings, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _checked(key: str, value: Any) -> Any:
    if key == "budget":
        try:
            budget = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"budget must be a whole number of tokens, not {value!r}") from None
        if budget < 1:
            raise ConfigError("budget must be at least 1 token")
        return budget
    if key == "vault":
        return str(Path(str(value)).expanduser().resolve())
    return str(value).strip()


@dataclass(frozen=True)
class VaultChoice:
    """The vault the provider uses and why: origin is settings, VAULTMEM_VAULT, OBSIDIAN_VAULT_PATH or default."""

    path: Path
    origin: str

    @property
    def creatable(self) -> bool:
        """Only the default location is made a vault on first use."""
        return self.origin == "default"


def choose_vault(home: Path, settings: dict[str, Any]) -> VaultChoice:
    """The saved vault, else the environment's, else $HERMES_HOME/vaultmem."""
    if settings.get("vault"):
        return VaultChoice(Path(str(settings["vault"])).expanduser(), "settings")
    for name in VAULT_ENV:
        value = os.environ.get(name, "").strip()
        if value:
            return VaultChoice(Path(value).expanduser(), name)
    return VaultChoice(home / DEFAULT_VAULT, "default")


def budget_of(settings: dict[str, Any]) -> int:
    """The prefetch token budget (default 800)."""
    return int(settings.get("budget") or DEFAULT_BUDGET)


__all__ = ["DEFAULT_BUDGET", "DEFAULT_VAULT", "KEYS", "SETTINGS_FILE", "VAULT_ENV", "VaultChoice", "budget_of",
           "choose_vault", "hermes_home", "load_settings", "save_settings"]
