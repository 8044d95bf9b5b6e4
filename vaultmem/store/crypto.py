"""The keys and the cipher of encrypted notes (notes/sealed.py is their format): a passphrase, scrypt,
AES-256-GCM, all from the `cryptography` package (the `encrypt` extra, imported on first use).

A key is made from the passphrase by scrypt (n=2^15, r=8, p=1: ~32 MB and ~0.1 s) with a random 16-byte
salt; it is made once per process and salt, and every note written with it names it (its KeySpec: the
cost, the salt and a 16-byte check value HKDF derives from the key, which tells a wrong passphrase from
a damaged note without trying to open one). Each write then draws its own random 16-byte salt, from
which HKDF-SHA256 derives that write's AES-256 key, and a random 12-byte nonce; the ciphertext
authenticates the note's id and its header (notes.sealed.associated_data). A vault's notes share one
key salt (a new note takes the salt of the encrypted notes already there), so opening a thousand of
them costs one scrypt, not a thousand; `vaultmem rekey` makes a new one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import InvalidValue, Locked, MissingExtra, NoteFormatError, SealBroken, WrongPassphrase
from ..notes.sealed import KeySpec, Seal, associated_data, payload, read_payload, read_seals

if TYPE_CHECKING:
    from ..notes.note import Note

__all__ = ["PASSPHRASE_ENV", "Keyring", "key_for", "new_key", "open_note", "seal_text", "unseal"]

PASSPHRASE_ENV = "VAULTMEM_PASSPHRASE"
SCRYPT = (2 ** 15, 8, 1)  # n, r, p: OWASP's floor for scrypt (2^15 x 8 x 128 B = 32 MB of memory)
_SALT, _NONCE, _CHECK = 16, 12, 16
_KEYS: dict[tuple[bytes, int, int, int, bytes], bytes] = {}  # this process's keys: (passphrase digest, n, r, p, salt)
_KEYS_LOCK = threading.Lock()


def _primitives() -> Any:
    """cryptography's scrypt, HKDF, SHA-256, AES-GCM and InvalidTag, or MissingExtra without the extra."""
    try:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.hashes import SHA256
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
    except ImportError:
        raise MissingExtra("encrypted notes", "encrypt") from None
    return Scrypt, HKDF, SHA256, AESGCM, InvalidTag


def _hkdf(key: bytes, salt: bytes | None, info: bytes, length: int) -> bytes:
    _, hkdf, sha256, _, _ = _primitives()
    return hkdf(algorithm=sha256(), length=length, salt=salt, info=info).derive(key)


def _derived(passphrase: str, n: int, r: int, p: int, salt: bytes) -> bytes:
    """scrypt of the passphrase, made once per process for each (passphrase, cost, salt)."""
    cache = (hashlib.sha256(passphrase.encode("utf-8")).digest(), n, r, p, salt)
    with _KEYS_LOCK:
        found = _KEYS.get(cache)
    if found is None:
        scrypt = _primitives()[0]
        try:
            found = scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))
        except (ValueError, MemoryError) as exc:  # a cost no machine can pay, written into a note's header
            raise InvalidValue(f"the key's scrypt cost (n={n}, r={r}, p={p}) cannot be used: {exc}") from None
        with _KEYS_LOCK:
            _KEYS[cache] = found
    return found


def _check_of(key: bytes) -> bytes:
    return _hkdf(key, None, b"vaultmem key check", _CHECK)


def new_key(passphrase: str) -> tuple[KeySpec, bytes]:
    """A new key for this passphrase (a random salt): its KeySpec and the key."""
    salt = os.urandom(_SALT)
    key = _derived(passphrase, *SCRYPT, salt)
    return KeySpec(*SCRYPT, salt, _check_of(key)), key


def key_for(passphrase: str, spec: KeySpec) -> bytes:
    """The key a note names, made from this passphrase. Raises WrongPassphrase when it is not that key's."""
    key = _derived(passphrase, spec.n, spec.r, spec.p, spec.salt)
    if not hmac.compare_digest(_check_of(key), spec.check):
        raise WrongPassphrase(f"the passphrase given does not open key {spec.key_id} of the encrypted notes; "
                              "nothing was written")
    return key


def seal_text(spec: KeySpec, key: bytes, note_id: str, title: str, text: str) -> Seal:
    """A note's title and whole text sealed under this key, with a fresh salt and nonce."""
    aesgcm = _primitives()[3]
    salt, nonce = os.urandom(_SALT), os.urandom(_NONCE)
    note_key = _hkdf(key, salt, b"vaultmem note key", 32)
    data = aesgcm(note_key).encrypt(nonce, payload(title, text), associated_data(note_id, spec, salt))
    return Seal(spec, salt, nonce, data)


def unseal(key: bytes, seal: Seal, note_id: str, path: str) -> tuple[str, str]:
    """(title, text) of one ciphertext of the note `note_id`. Raises SealBroken (naming `path`) when it
    fails authentication."""
    _, _, _, aesgcm, invalid_tag = _primitives()
    note_key = _hkdf(key, seal.salt, b"vaultmem note key", 32)
    try:
        data = aesgcm(note_key).decrypt(seal.nonce, seal.data, associated_data(note_id, seal.key, seal.salt))
    except invalid_tag:
        raise SealBroken(path) from None
    try:
        return read_payload(data)
    except InvalidValue as exc:
        raise SealBroken(path, str(exc)) from None


def open_note(passphrase: str, note: Note) -> tuple[str, str]:
    """(title, plain text) of a sealed note: what was sealed, with the clear properties as they are now; a
    note two machines changed without the passphrase shows both texts (notes.sealed.reopened).

    Raises WrongPassphrase, SealBroken, NoteFormatError (a damaged block, no id).
    """
    from ..notes.sealed import reopened

    note_id = str(note.meta.get("id") or "")
    path = str(note.path or "note")
    if not note_id:
        raise NoteFormatError(note.path, None, "an encrypted note without its id cannot be opened")
    versions = [unseal(key_for(passphrase, seal.key), seal, note_id, path) for seal in read_seals(note)]
    return versions[0][0], reopened(note, [text for _, text in versions])


class Keyring:
    """The passphrase of a vault's encrypted notes for one Store and its views: the one given to
    `unlock`, else $VAULTMEM_PASSPHRASE, else what `prompt` asks a person (a CLI sets it) when an
    operation cannot go on without it. Shared between threads."""

    def __init__(self) -> None:
        self._given: str | None = None
        self.prompt: Callable[[str], str] | None = None
        self._writing: dict[bytes, tuple[KeySpec, bytes]] = {}  # passphrase digest -> the key new notes take
        self._lock = threading.Lock()

    def unlock(self, passphrase: str | None) -> None:
        """Use this passphrase from now on (None: back to $VAULTMEM_PASSPHRASE)."""
        if passphrase is not None and not passphrase:
            raise InvalidValue("the passphrase is empty")
        self._given = passphrase

    def passphrase(self, required: bool = False, why: str = "this") -> str | None:
        """The passphrase, or None when none is given (Locked when `required`: after asking `prompt`)."""
        found = self._given or os.environ.get(PASSPHRASE_ENV) or None
        if found is None and required and self.prompt is not None:
            found = self.prompt(why) or None
            if found is not None:
                self._given = found
        if found is None and required:
            raise Locked(f"{why} needs the passphrase of the encrypted notes: set ${PASSPHRASE_ENV} "
                         "(or type it at the prompt of a terminal); nothing was written")
        return found

    def writing_key(self, passphrase: str, known: Callable[[], list[KeySpec]]) -> tuple[KeySpec, bytes]:
        """The key new notes are sealed with: the one the vault's encrypted notes are under (`known`: their
        KeySpecs, newest first), made from this passphrase; a new one for a vault that has none.

        Raises WrongPassphrase when the vault has encrypted notes and the passphrase opens none of them."""
        digest = hashlib.sha256(passphrase.encode("utf-8")).digest()
        with self._lock:
            found = self._writing.get(digest)
        if found is not None:
            return found
        specs = list(dict.fromkeys(known()))
        for spec in specs:
            try:
                found = spec, key_for(passphrase, spec)
                break
            except WrongPassphrase:
                continue
        if found is None and specs:
            raise WrongPassphrase(f"the passphrase given opens none of the vault's encrypted notes (under "
                                  f"key{'s' if len(specs) > 1 else ''} {', '.join(s.key_id for s in specs)}); "
                                  "nothing was written")
        found = found or new_key(passphrase)
        with self._lock:
            self._writing[digest] = found
        return found

    def forget_writing_key(self) -> None:
        """Let the next write choose its key again (after a rekey)."""
        with self._lock:
            self._writing.clear()
