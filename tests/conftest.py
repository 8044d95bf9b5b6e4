"""Shared fixtures: every test gets its own device id and machine state, and a fresh vault."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vaultmem import Vault

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample-vault"


@pytest.fixture(autouse=True)
def isolated_machine(tmp_path_factory, monkeypatch):
    """Keep the device id and per-machine state out of the real home directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("VAULTMEM_HOME", str(home))
    monkeypatch.setenv("VAULTMEM_DEVICE_ID", "testbox-0001")
    for name in ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH", "VAULTMEM_PASSPHRASE", "VAULTMEM_NEW_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def vault(tmp_path) -> Vault:
    """An empty, initialised vault."""
    return Vault.init(tmp_path / "vault")


@pytest.fixture
def sample(tmp_path) -> Vault:
    """A private copy of sample-vault/ (tests never write into the repository)."""
    target = tmp_path / "sample"
    shutil.copytree(SAMPLE, target, ignore=shutil.ignore_patterns("cache", "devices"))
    return Vault(target)


def write_note(vault: Vault, rel: str, text: str) -> Path:
    """Put a note on disk as a person (or Obsidian) would."""
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def snapshot_files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every note under root, outside .vaultmem/."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*.md")) if ".vaultmem" not in p.parts}


def cli_commands(group=None, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The words of every command of the `vaultmem` CLI, subcommands included (("entity", "add"), …)."""
    if group is None:
        import typer.main

        from vaultmem.surfaces.cli import app

        group = typer.main.get_command(app)
    found: list[tuple[str, ...]] = []
    for name, command in group.commands.items():
        found += cli_commands(command, (*prefix, name)) if hasattr(command, "commands") else [(*prefix, name)]
    return found
