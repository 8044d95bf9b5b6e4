"""Encrypting and decrypting notes that exist, and changing the passphrase (`vaultmem encrypt`,
`decrypt`, `rekey`). The format is notes/sealed.py's, the keys and cipher store/crypto.py's.

Each note is changed by two atomic steps: its text is replaced in place (the plain text by the sealed
one, or back), then its file is renamed (to `Encrypted <id>.md`, or back to a name from its title). A
kill between them leaves the note whole, sealed under its readable name or plain under the neutral one,
and the same command run again finishes it. A namespace's notes are all opened (or all found plain)
before the first is written: a wrong passphrase writes nothing.

A rekey writes `rekey.json` in this device's folder (which keys it moves from and to) before it
re-seals the first note and removes it after the last: every note is under the old key or the new one
at any moment, `rekey_state` (and doctor) says how many are under each, and the same rekey run again
takes up where it stopped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, VaultmemError
from ..notes.names import new_ulid, safe_filename
from ..notes.sealed import clear_meta, is_sealed, read_seals, sealed_name, sealed_note
from ..store.crypto import key_for, new_key, open_note, seal_text
from ..store.files import atomic_write
from ..store.index.records import SEALED_TYPE, content_hash
from ..write.sealed import known_keys, writing_key

if TYPE_CHECKING:
    from ..notes.note import Note
    from ..store.store import Store

__all__ = ["Sealing", "decrypt", "encrypt", "rekey", "rekey_state", "sealed_warnings"]

JOURNAL = "rekey.json"


@dataclass
class Sealing:
    """What encrypt, decrypt or rekey did: the notes changed ({id, path}), those already so, and those left."""

    action: str
    notes: list[dict[str, str]] = field(default_factory=list)
    unchanged: list[dict[str, str]] = field(default_factory=list)
    namespace: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "notes": self.notes, "unchanged": self.unchanged, "namespace": self.namespace}


# -- encrypt ----------------------------------------------------------------------------------------------

def encrypt(vault: Store, refs: list[str], namespace: str | None = None) -> Sealing:
    """Seal these notes (or every memory of `namespace`, whose new memories are then written sealed too).
    Raises Locked, WrongPassphrase."""
    with vault.index.writing():
        vault.index.catch_up()
        rows = _rows(vault, refs, namespace)
        spec, key = writing_key(vault, "encrypting notes")
        if namespace is not None:
            _set_namespaces(vault, [*vault.settings.encryption.namespaces, namespace])
        done = Sealing("encrypted", namespace=namespace)
        for row in rows:
            path = vault.root / row["path"]
            note = _current(vault, path)
            if is_sealed(note.meta):
                done.unchanged.append(_named(row["id"], _renamed(vault, path, sealed_name(row["id"]))))
                continue
            new_id = str(note.meta.get("id") or "") or new_ulid()
            text = note.text if note.meta.get("id") else _with_id(note, new_id)
            sealed = sealed_note(clear_meta(_parsed(text, row["path"]).meta),
                                 [seal_text(spec, key, new_id, row["title"], text)], note.newline)
            vault.write_text(path, sealed, expected_sha=content_hash(note.text.encode("utf-8")))
            done.notes.append(_named(new_id, _renamed(vault, path, sealed_name(new_id))))
        vault.audit([{"event": "encrypt", "id": n["id"], "path": n["path"]} for n in done.notes])
        if done.notes:  # their words were indexed while they were plain: the sidecar is made anew without them
            vault.index.scrub()
            vault.index.vectors.drop([row["id"] for row in rows] + [n["id"] for n in done.notes])  # and their meaning
            vault.index.refresh(force=True)
        vault.index.wrote()
    return done


def _with_id(note: Note, note_id: str) -> str:
    from ..notes.writing import update_fields

    return update_fields(note, {"id": note_id})


# -- decrypt ----------------------------------------------------------------------------------------------

def decrypt(vault: Store, refs: list[str], namespace: str | None = None) -> Sealing:
    """Turn these sealed notes (or every one of `namespace`, which is then no longer encrypted) back into plain
    notes under names from their titles. Every one is opened before the first is written. Raises Locked,
    WrongPassphrase, SealBroken."""
    with vault.index.writing():
        vault.index.catch_up()
        rows = _rows(vault, refs, namespace)
        passphrase = vault.keyring.passphrase(required=True, why="decrypting notes")
        opened = []
        done = Sealing("decrypted", namespace=namespace)
        for row in rows:
            path = vault.root / row["path"]
            note = _current(vault, path)
            if not is_sealed(note.meta):
                done.unchanged.append(_named(row["id"], row["path"]))
                continue
            opened.append((path, note, *open_note(passphrase, note)))
        if namespace is not None:
            _set_namespaces(vault, [n for n in vault.settings.encryption.namespaces if n != namespace])
        for path, note, title, plain in opened:
            vault.write_text(path, plain, expected_sha=content_hash(note.text.encode("utf-8")))
            done.notes.append(_named(str(note.meta["id"]), _renamed(vault, path, safe_filename(title))))
        # by id alone: the path is the title now, and the log outlives a later encrypt
        vault.audit([{"event": "decrypt", "id": n["id"]} for n in done.notes])
        vault.index.wrote()
    return done


# -- rekey ------------------------------------------------------------------------------------------------

def rekey(vault: Store, new_passphrase: str) -> Sealing:
    """Seal every encrypted note of the vault again under a new key made from `new_passphrase`; the old
    passphrase is the keyring's. Each note is opened before the first is written; a rekey that was stopped
    is taken up again (its notes under the new key are left as they are). Raises Locked, WrongPassphrase."""
    if not new_passphrase:
        raise VaultmemError("the new passphrase is empty")
    old = vault.keyring.passphrase(required=True, why="a rekey (the current passphrase)")
    journal = vault.device_dir / JOURNAL
    with vault.index.writing():
        vault.index.catch_up()
        rows = _sealed_rows(vault)
        started = _read_journal(journal)
        if started is not None and started.get("to_salt"):
            spec = next((s for s in known_keys(vault) if s.salt.hex() == started["to_salt"]), None)
            spec, key = (spec, key_for(new_passphrase, spec)) if spec is not None else new_key(new_passphrase)
        else:
            spec, key = new_key(new_passphrase)
        todo, done = [], Sealing("rekeyed")
        for row in rows:
            path = vault.root / row["path"]
            note = _current(vault, path)
            if all(seal.key == spec for seal in read_seals(note)):
                done.unchanged.append(_named(row["id"], row["path"]))
                continue
            todo.append((path, note, *open_note(old, note)))  # WrongPassphrase before anything is written
        vault.device_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(journal, json.dumps({"to": spec.key_id, "to_salt": spec.salt.hex(),
                                          "from": sorted({s.key.key_id for _, n, *_ in todo for s in read_seals(n)}),
                                          "notes": len(todo)}).encode("utf-8"))
        for path, note, title, plain in todo:
            sealed = sealed_note(clear_meta(_parsed(plain, str(note.path)).meta),
                                 [seal_text(spec, key, str(note.meta["id"]), title, plain)], note.newline)
            vault.write_text(path, sealed, expected_sha=content_hash(note.text.encode("utf-8")))
            vault.index.upsert([vault.record_for(path)])
            done.notes.append(_named(str(note.meta["id"]), vault.relpath(path)))
        journal.unlink(missing_ok=True)
        vault.audit([{"event": "rekey", "id": n["id"], "path": n["path"], "key": spec.key_id} for n in done.notes])
        vault.index.wrote()
    vault.keyring.forget_writing_key()
    vault.keyring.unlock(new_passphrase)
    return done


def rekey_state(vault: Store) -> dict[str, Any] | None:
    """A rekey stopped before its end on this device: {to, from, under: {key id: notes under it}}; else None."""
    started = _read_journal(vault.device_dir / JOURNAL)
    if started is None:
        return None
    under: dict[str, int] = {}
    for spec in known_keys(vault):
        under[spec.key_id] = under.get(spec.key_id, 0) + 1
    return {"to": started.get("to", ""), "from": started.get("from", []), "under": under}


def sealed_warnings(vault: Store) -> list[str]:
    """What doctor says of encrypted notes: a rekey stopped half-way, and which passphrase each note needs."""
    state = rekey_state(vault)
    if state is None:
        return []
    under = ", ".join(f"{n} under key {k}{' (the new one)' if k == state['to'] else ' (the old one)'}"
                      for k, n in sorted(state["under"].items()))
    return [f"a rekey to key {state['to']} stopped before its end: encrypted notes {under}; each opens with the "
            "passphrase of its key. Run `vaultmem rekey` again (the old passphrase in $VAULTMEM_PASSPHRASE, the "
            "new one in $VAULTMEM_NEW_PASSPHRASE) to finish it"]


def _read_journal(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


# -- shared steps -------------------------------------------------------------------------------------------

def _rows(vault: Store, refs: list[str], namespace: str | None) -> list[dict[str, Any]]:
    """The memory notes named (each must be one this caller may change), or every memory of the namespace."""
    if namespace is not None:
        return vault.index.select_notes("kind = 'memory' AND namespace = ?", (namespace,))
    rows = []
    for ref in refs:
        row = vault.resolve(ref)
        if row["kind"] != "memory":
            raise VaultmemError(f"{row['path']} is not a memory (it is a {row['kind']} note): only memories are encrypted")
        rows.append(row)
    return rows


def _sealed_rows(vault: Store) -> list[dict[str, Any]]:
    return vault.index.select_notes("type = ? AND +kind = 'memory'", (SEALED_TYPE,))


def _current(vault: Store, path: Path) -> Note:
    """The note as its file is now. Raises NoteFormatError when it cannot be read as a note."""
    from ..notes.note import parse_note

    try:
        data = vault.read_current(path)
    except FileNotFoundError:
        raise VaultmemError(f"{vault.relpath(path)} is gone from disk (run `vaultmem reindex`)") from None
    return parse_note(data, vault.relpath(path))


def _parsed(text: str, rel: str) -> Note:
    from ..notes.note import parse_note

    return parse_note(text, rel)


def _renamed(vault: Store, path: Path, stem: str) -> str:
    """Move the note to the first free `stem.md`, `stem 2.md` … of its folder (none when it has that name
    already), never over another file, and index it there; its new vault path."""
    from ..notes.names import numbered_name

    old = vault.relpath(path)
    if path.name == f"{stem}.md" or path.stem.startswith(f"{stem} ") and path.stem[len(stem) + 1:].isdigit():
        vault.index.upsert([vault.record_for(path)])
        return old
    for attempt in range(10_000):
        target = path.with_name(numbered_name(stem, attempt))
        try:
            os.link(path, target)  # fails on any existing name
        except FileExistsError:
            continue
        except OSError:  # no hard links here (a FAT or network drive): a rename after a look
            if target.exists():
                continue
            os.rename(path, target)
        else:
            path.unlink()
        vault.index.upsert([vault.record_for(target)], gone=[old])
        return vault.relpath(target)
    raise VaultmemError(f"no free file name for {stem!r} in {path.parent}")


def _named(note_id: str, rel: str) -> dict[str, str]:
    return {"id": note_id, "path": rel}


def _set_namespaces(vault: Store, names: list[str]) -> None:
    """Write `encryption.namespaces` into config.yaml (its one line, or a section at its end) and use it now."""
    from ..config import load_config

    names = list(dict.fromkeys(names))
    path = vault.state / "config.yaml"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    line = f"  namespaces: [{', '.join(names)}]"
    lines = old.split("\n")
    at = next((i for i, text in enumerate(lines) if text.startswith("encryption:")), None)
    if at is None:
        new = old.rstrip("\n") + f"\n\nencryption:\n{line}\n"
    else:
        end = next((i for i in range(at + 1, len(lines)) if lines[i] and not lines[i].startswith((" ", "#"))),
                   len(lines))
        found = next((i for i in range(at + 1, end) if lines[i].lstrip().startswith("namespaces:")), None)
        if found is None:
            lines.insert(at + 1, line)
        else:
            comment = lines[found].partition("#")[2]
            lines[found] = line + (f"  #{comment}" if comment else "")
        new = "\n".join(lines)
    atomic_write(path, new.encode("utf-8"))
    try:
        written = load_config(path)["encryption"]["namespaces"]
    except (ConfigError, KeyError, TypeError):
        written = None
    if written != names:
        atomic_write(path, old.encode("utf-8"))
        raise ConfigError(f"could not set encryption.namespaces in {path}; set it to [{', '.join(names)}] by hand")
    vault.configure("encryption", namespaces=names)

