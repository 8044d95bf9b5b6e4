"""`vaultmem encrypt`, `decrypt` and `rekey` (issue 30 item 5): thin wrappers over the Vault. The passphrase
is --passphrase-file's first line, else $VAULTMEM_PASSPHRASE, else typed at the terminal (console.open_vault);
a rekey's new one is --new-passphrase-file's, else $VAULTMEM_NEW_PASSPHRASE, else typed twice."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, VaultOpt, app
from .console import ask_passphrase, open_vault, print_json, say
from ..errors import VaultmemError

NEW_PASSPHRASE_ENV = "VAULTMEM_NEW_PASSPHRASE"
IdsArg = Annotated[Optional[list[str]], typer.Argument(metavar="ID", help="Ids, vault paths or titles of memories.",
                                                       show_default=False)]
FileOpt = Annotated[Optional[Path], typer.Option("--passphrase-file", metavar="FILE", help=(
    "Read the passphrase from the first line of FILE (else $VAULTMEM_PASSPHRASE, else it is asked)."))]
NewFileOpt = Annotated[Optional[Path], typer.Option("--new-passphrase-file", metavar="FILE", help=(
    "Read the new passphrase from the first line of FILE (else $VAULTMEM_NEW_PASSPHRASE, else asked twice)."))]
NamespaceOpt = Annotated[Optional[str], typer.Option("--namespace", "-n", metavar="N", help=(
    "Every memory of namespace N, and its new memories from now on (config.yaml's encryption.namespaces)."))]


def _one_way(ids: list[str] | None, namespace: str | None, command: str) -> None:
    if bool(ids) == (namespace is not None):
        raise VaultmemError(f"{command} takes memory ids or --namespace N (one of them)")


def _read(path: Path) -> str:
    try:
        first = path.read_text(encoding="utf-8").splitlines()[:1]
    except (OSError, UnicodeDecodeError) as exc:
        raise VaultmemError(f"cannot read the passphrase from {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not first or not first[0].strip():
        raise VaultmemError(f"{path} holds no passphrase on its first line")
    return first[0].rstrip("\r")


def _opened(vault, passphrase_file: Path | None):
    v = open_vault(vault)
    if passphrase_file is not None:
        v.unlock(_read(passphrase_file))
    return v


def _print(done, json_out: bool) -> None:
    if json_out:
        print_json(done.to_dict())
        return
    count = len(done.notes)
    say(f"{done.action}: {count} note{'s' if count != 1 else ''}"
        + (f" (namespace {done.namespace})" if done.namespace else ""), style="good")
    for note in done.notes:
        say(f"  {note['path']}")
    if done.unchanged:
        say(f"  already so: {len(done.unchanged)}", style="dim")


@app.command()
def encrypt(ids: IdsArg = None, namespace: NamespaceOpt = None, passphrase_file: FileOpt = None,
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Encrypt memories with the passphrase ($VAULTMEM_PASSPHRASE, else asked): their text and properties
    become AES-256-GCM ciphertext, but for what lifecycle needs (id, namespace, status, score, times,
    half-life, version); the file becomes `Encrypted <id>.md`, a note Obsidian opens and that says how
    to read it. Recall finds them only with the passphrase. Versions committed to git before stay in its
    history. With --namespace, new memories of N are written encrypted too.

    \b
    Example:
      vaultmem encrypt "Coffee order" --passphrase-file examples/passphrase.txt
      encrypted: 1 note
      memories/Encrypted 01M394J580H0SN00CEAJKKYZVN.md
    """
    _one_way(ids, namespace, "encrypt")
    v = _opened(vault, passphrase_file)
    _print(v.encrypt_namespace(namespace) if namespace is not None else v.encrypt(*(ids or [])), json_out)


@app.command()
def decrypt(ids: IdsArg = None, namespace: NamespaceOpt = None, passphrase_file: FileOpt = None,
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Make encrypted memories plain notes again, named from their titles (every one is opened before the
    first is written: a wrong passphrase writes nothing). With --namespace, N's new memories are plain again.

    \b
    Example:
      vaultmem decrypt --namespace private --passphrase-file examples/passphrase.txt
      decrypted: 0 notes (namespace private)
    """
    _one_way(ids, namespace, "decrypt")
    v = _opened(vault, passphrase_file)
    _print(v.decrypt_namespace(namespace) if namespace is not None else v.decrypt(*(ids or [])), json_out)


@app.command()
def rekey(passphrase_file: FileOpt = None, new_passphrase_file: NewFileOpt = None, vault: VaultOpt = None,
          json_out: JsonOpt = False) -> None:
    """Encrypt every encrypted note again under a new passphrase: the current one from $VAULTMEM_PASSPHRASE
    (else asked), the new one from $VAULTMEM_NEW_PASSPHRASE (else asked twice). Stopped half-way, every
    note opens with one of the two (`vaultmem doctor` says how many with each), and the same command
    finishes it.

    \b
    Example:
      vaultmem rekey --passphrase-file examples/passphrase.txt --new-passphrase-file examples/passphrase.txt
      rekeyed: 0 notes
    """
    v = _opened(vault, passphrase_file)
    _print(v.rekey(_read(new_passphrase_file) if new_passphrase_file is not None else _new_passphrase()), json_out)


def _new_passphrase() -> str:
    given = os.environ.get(NEW_PASSPHRASE_ENV)
    if given:
        return given
    if not sys.stdin.isatty():
        raise VaultmemError(f"a rekey needs the new passphrase: set ${NEW_PASSPHRASE_ENV}")
    first = ask_passphrase("the new one")
    if first != ask_passphrase("the new one, again"):
        raise VaultmemError("the two new passphrases differ; nothing was written")
    return first



__all__ = ["NEW_PASSPHRASE_ENV", "decrypt", "encrypt", "rekey"]
