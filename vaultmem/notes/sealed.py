"""The format of an encrypted ("sealed") note: what stays in clear, the header a person reads in
Obsidian, the fenced block that holds the ciphertext, and the payload inside it. Pure: text and bytes
in and out; the keys and the cipher are store/crypto.py's.

A sealed note on disk is a valid Markdown note:

    ---
    id: 01JDX3K8Q4W2M9ZC6T7B5N0H1A
    score: 7.0
    timestamp: 2026-11-29T14:02:11+08:00
    lifecycle: preference
    status: active
    namespace: private
    version: [laptop-3f2a:3]
    encrypted: aes-256-gcm/scrypt
    ---
    > [!note] Encrypted memory
    > ... how to read it ...

    ```vaultmem-sealed
    key: scrypt n=32768 r=8 p=1 salt=... check=...
    seal: salt=... nonce=...
    <the ciphertext, base64, 76 characters a line>
    ```

What stays in clear (CLEAR_KEYS) is what lifecycle, ranking's decay, gc, namespaces and the merge
driver need and what says nothing of the memory's content: its id, namespace, status, strength
(score, confidence, trust), times and half-life (timestamp, lifecycle, the note's own decay policy),
its version vector and a supersede link (which names another note by its neutral file name). The text,
the title, the tags, the type and value, the entities, the source, the episode and every other property
are inside the ciphertext. The file name is `Encrypted <id>`: a memory's title is its first words.

The payload is the note's whole text as it was when sealed (every property, the clear ones included, in
its order and spelling, and the body), with its title: opening it gives that text back byte for byte,
with the clear properties changed since (a pin, a forget, a merge) applied by line edits.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vaultmem.errors import InvalidValue, NoteFormatError

if TYPE_CHECKING:
    from vaultmem.notes.note import Note

# notes.note and notes.writing are imported where they are used: the index imports this module to tell a
# sealed note, and a recall imports the index but never parses a note

__all__ = ["CLEAR_KEYS", "KeySpec", "MARKER", "SCHEME", "Seal", "associated_data", "clear_meta", "is_sealed",
           "is_sealed_text", "payload", "read_payload", "read_seals", "reopened", "sealed_name", "sealed_note"]

MARKER = "encrypted"  # the property that marks a sealed note
SCHEME = "aes-256-gcm/scrypt"  # its value: the cipher and the key derivation (version 1 of this format)
CLEAR_KEYS = ("id", "namespace", "status", "score", "confidence", "trust", "timestamp", "lifecycle", "version",
              "pinned", "half_life", "decay_floor", "superseded_by")
FENCE = "vaultmem-sealed"
NAME_PREFIX = "Encrypted "
_WIDTH = 76
_BLOCK = re.compile(r"^```" + FENCE + r"[ \t]*\r?\n(.*?)^```[ \t]*$", re.M | re.S)
_FIELD = re.compile(r"(\w+)=(\S*)")
_HEADER = (
    "> [!note] Encrypted memory",
    "> This note's text and properties are encrypted by vaultmem (AES-256-GCM, its key made from a passphrase",
    "> by scrypt). With the passphrase in $VAULTMEM_PASSPHRASE, or typed at the prompt:",
    "> - read it: `vaultmem show {id}`",
    "> - make it a plain note again: `vaultmem decrypt {id}`",
    ">",
    "> The block below must stay as it is: one changed character and it no longer opens.",
)
_BOTH = "> [!warning] vaultmem: both machines changed this encrypted note"
_CONFLICT = (
    _BOTH,
    "> The merge had no passphrase, so both versions are kept, each in its block; opened with the passphrase,",
    "> the note shows both texts (sync with $VAULTMEM_PASSPHRASE set to merge them instead).",
)


@dataclass(frozen=True)
class KeySpec:
    """How a key was made from a passphrase: scrypt's cost (n, r, p) and salt, and `check`, a short value
    derived from the key that tells a wrong passphrase from a damaged note."""

    n: int
    r: int
    p: int
    salt: bytes
    check: bytes

    @property
    def key_id(self) -> str:
        """A short name of the key for people (its salt's first characters): which passphrase a note is under."""
        return self.salt[:4].hex()

    def line(self) -> str:
        return f"key: scrypt n={self.n} r={self.r} p={self.p} salt={_b64(self.salt)} check={_b64(self.check)}"


@dataclass(frozen=True)
class Seal:
    """One ciphertext of a note: the key it is under, this write's own salt and nonce, the ciphertext (with
    AES-GCM's tag)."""

    key: KeySpec
    salt: bytes
    nonce: bytes
    data: bytes

    def block(self, nl: str) -> str:
        data = _b64(self.data)
        lines = [f"```{FENCE}", self.key.line(), f"seal: salt={_b64(self.salt)} nonce={_b64(self.nonce)}",
                 *(data[i:i + _WIDTH] for i in range(0, len(data), _WIDTH)), "```"]
        return nl.join(lines) + nl


def is_sealed(meta: dict[str, Any]) -> bool:
    """Whether a note's properties mark it as sealed."""
    return meta.get(MARKER) == SCHEME


def is_sealed_text(data: str | bytes) -> bool:
    """Whether a file's text is a sealed note (a fast look first: most notes are not)."""
    from vaultmem.notes.note import parse_note

    probe = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if f"{MARKER}: {SCHEME}" not in probe:
        return False
    try:
        return is_sealed(parse_note(probe).meta)
    except NoteFormatError:
        return False


def sealed_name(note_id: str) -> str:
    """The file stem of a sealed note: it says nothing of the memory (a title is a memory's first words)."""
    return NAME_PREFIX + note_id


def clear_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The properties a sealed note keeps in clear, in the note's order, and the marker."""
    kept = {key: value for key, value in meta.items() if key in CLEAR_KEYS}
    return {**kept, MARKER: SCHEME}


def associated_data(note_id: str, key: KeySpec, salt: bytes) -> bytes:
    """What the ciphertext authenticates besides itself: the format, the note's id (a ciphertext moved into
    another note does not open there) and the key and salt it names (a header changed does not open)."""
    return "\x00".join([SCHEME, note_id, key.line(), _b64(salt)]).encode("utf-8")


def payload(title: str, text: str) -> bytes:
    """The plaintext a note is sealed from: its title and its whole text."""
    return json.dumps({"title": title, "text": text}, ensure_ascii=False).encode("utf-8")


def read_payload(data: bytes) -> tuple[str, str]:
    """(title, text) of an opened payload. Raises InvalidValue when it is no payload of this format."""
    try:
        found = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise InvalidValue("the opened ciphertext is no vaultmem note") from None
    if not isinstance(found, dict) or not isinstance(found.get("title"), str) or not isinstance(found.get("text"), str):
        raise InvalidValue("the opened ciphertext is no vaultmem note")
    return found["title"], found["text"]


def sealed_note(meta: dict[str, Any], seals: list[Seal], nl: str = "\n") -> str:
    """The text of a sealed note: the clear properties (`meta`, from clear_meta), the header and the blocks
    (several only when a merge without the passphrase kept two machines' versions)."""
    from vaultmem.notes.writing import render_new

    header = nl.join(_HEADER).format(id=meta["id"]) + nl + nl
    body = header + seals[0].block(nl)
    if len(seals) > 1:
        body += nl + nl.join(_CONFLICT) + nl + "".join(nl + seal.block(nl) for seal in seals[1:])
    return render_new(meta, body, nl)


def read_seals(note: Note) -> list[Seal]:
    """The ciphertexts of a sealed note, its own first. Raises NoteFormatError when a block is malformed."""
    found = [_seal(match[1], note) for match in _BLOCK.finditer(note.body)]
    if not found:
        raise NoteFormatError(note.path, None, "an encrypted note without its ```vaultmem-sealed block")
    return found


def _seal(block: str, note: Note) -> Seal:
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    problem = "its ```vaultmem-sealed block is damaged"
    if len(lines) < 3 or not lines[0].startswith("key: scrypt ") or not lines[1].startswith("seal: "):
        raise NoteFormatError(note.path, None, problem)
    key, seal = dict(_FIELD.findall(lines[0])), dict(_FIELD.findall(lines[1]))
    try:
        spec = KeySpec(int(key["n"]), int(key["r"]), int(key["p"]), _unb64(key["salt"]), _unb64(key["check"]))
        return Seal(spec, _unb64(seal["salt"]), _unb64(seal["nonce"]), _unb64("".join(lines[2:])))
    except (KeyError, ValueError, binascii.Error):
        raise NoteFormatError(note.path, None, problem) from None


def reopened(sealed: Note, texts: list[str]) -> str:
    """The note's plain text: the first of `texts` (what was sealed) with the clear properties as the sealed
    note has them now (changed by a pin, a forget, a merge since it was sealed). The others, versions a
    merge without the passphrase kept, follow in a callout each, as the merge driver keeps both texts of a
    body two machines changed: nothing is lost, and a person sees both."""
    from vaultmem.notes.note import parse_note
    from vaultmem.notes.writing import DELETE, render_new, update_fields

    original = parse_note(texts[0], sealed.path)
    now = {key: value for key, value in sealed.meta.items() if key != MARKER}
    changes: dict[str, Any] = dict(now)
    changes.update({key: DELETE for key in original.meta if key in CLEAR_KEYS and key not in now})
    try:
        text = update_fields(original, changes)
    except (NoteFormatError, InvalidValue):  # a layout line edits cannot change: the properties written anew
        meta = {key: value for key, value in original.meta.items() if changes.get(key) is not DELETE}
        meta.update({key: value for key, value in changes.items() if value is not DELETE})
        text = render_new(meta, original.body, original.newline)
    nl = original.newline
    extra = _outside_blocks(sealed)
    if extra:  # text a person or a merge put beside the blocks, in clear: kept, never dropped
        text = text.rstrip("\r\n") + nl + nl + extra + nl
    for other in texts[1:]:
        lines = parse_note(other, sealed.path).body.rstrip("\r\n").split("\n")
        quoted = [f"> > {line.rstrip(chr(13))}" if line.strip() else "> >" for line in lines]
        text = text.rstrip("\r\n") + nl + nl + nl.join([_BOTH, "> the other machine wrote:", *quoted]) + nl
    return text


def _outside_blocks(sealed: Note) -> str:
    """What a sealed note's body holds besides its header, its blocks and the note between them."""
    rest = _BLOCK.sub("", sealed.body)
    own = {line.format(id=sealed.meta.get("id", "")) for line in (*_HEADER, *_CONFLICT)}
    kept = [line for line in rest.replace("\r\n", "\n").split("\n") if line not in own]
    return "\n".join(kept).strip("\n")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)
