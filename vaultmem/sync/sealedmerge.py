"""The merge driver for encrypted notes (sync/mergedriver.py hands them here).

With the passphrase in $VAULTMEM_PASSPHRASE (git runs the driver in the environment of `vaultmem sync`
or `git pull`), the three versions are opened, merged as plain notes are (properties by their rules,
bodies three-way, a clash kept in a callout) and the result sealed again under the key ours is under: two
machines' edits of one encrypted note merge as any note's do. The plain texts pass through git's
merge-file in the driver's scratch folder, in memory (/dev/shm) where the system has one, and are removed
at once.

Without it (or with a passphrase that does not open them), nothing can be read, and nothing is lost:
- one side changed the ciphertext (or both the same way): the clear properties merge by their rules and
  that side's ciphertext is taken, as a body changed on one side is;
- both changed it: both ciphertexts stay in the note, ours first, each in its block; the note becomes
  needs-verification, and opened it shows both texts (notes.sealed.reopened);
- one side is sealed and the other plain (a machine encrypted the note while another edited it): the
  sealed side is kept and the plain side's text follows in a callout, as plain as it was there.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..errors import MissingExtra, NoteFormatError, SealBroken, VaultmemError, WrongPassphrase
from ..notes.note import Note, parse_note
from ..notes.sealed import MARKER, clear_meta, is_sealed, read_seals, sealed_note
from ..notes.writing import render_new, update_fields
from ..store.crypto import PASSPHRASE_ENV, key_for, open_note, seal_text

__all__ = ["merge_sealed"]

_FLAGGED = "needs-verification"
Merge = Callable[[bytes, bytes, bytes, str], tuple[bytes, bool]]


def merge_sealed(base: bytes, ours: bytes, theirs: bytes, path: str, merge_notes: Merge) -> tuple[bytes, bool]:
    """Merge three versions of a note of which ours or theirs is sealed; (bytes, merged for git). `merge_notes`
    is the driver's merge of plain notes (mergedriver.merge_notes, which hands sealed notes here)."""
    try:
        notes = [parse_note(data, path) if data.strip() else None for data in (base, ours, theirs)]
    except NoteFormatError:
        return ours, False  # not a note on some side: git reports the conflict, ours stays as it is
    passphrase = os.environ.get(PASSPHRASE_ENV)
    if passphrase:
        try:
            return _opened_merge(passphrase, notes, path, merge_notes), True
        except (WrongPassphrase, SealBroken, NoteFormatError, MissingExtra):
            pass  # merged as far as it can be without reading them
    sealed = [n is not None and is_sealed(n.meta) for n in notes]
    if sealed[1] != sealed[2]:
        return _one_sealed(notes, path), True
    return _sealed_merge(notes, path, merge_notes), True


def _opened_merge(passphrase: str, notes: list[Note | None], path: str, merge_notes: Merge) -> bytes:
    """Open every sealed side, merge the plain notes, seal the result under the key of ours (else theirs)."""
    plain, titles = [], []
    for note in notes:
        if note is not None and is_sealed(note.meta):
            title, text = open_note(passphrase, note)
            plain.append(text.encode("utf-8"))
            titles.append(title)
        else:
            plain.append(b"" if note is None else note.text.encode("utf-8"))
            titles.append("")
    merged, _ = merge_notes(*plain, path)
    keeper = next(n for n in (notes[1], notes[2]) if n is not None and is_sealed(n.meta))
    spec = read_seals(keeper)[0].key
    result = parse_note(merged, path)
    note_id = str(result.meta.get("id") or keeper.meta["id"])
    title = titles[1] or titles[2]
    seal = seal_text(spec, key_for(passphrase, spec), note_id, title, result.text)
    return sealed_note(clear_meta(result.meta), [seal], result.newline).encode("utf-8")


def _sealed_merge(notes: list[Note | None], path: str, merge_notes: Merge) -> bytes:
    """Both sides sealed, unread: clear properties by the driver's rules; the changed ciphertext, or both."""
    frames = [b"" if n is None else render_new(n.meta, "").encode("utf-8") for n in notes]
    meta = dict(parse_note(merge_notes(*frames, path)[0], path).meta)
    seals = [read_seals(n) if n is not None and is_sealed(n.meta) else None for n in notes]
    base, ours, theirs = seals
    if ours == theirs or theirs == base:
        kept = ours
    elif ours == base:
        kept = theirs
    else:
        kept = [*ours, *(s for s in theirs if s not in ours)]  # type: ignore[union-attr]
        if meta.get("status") != "superseded":
            meta["status"] = _FLAGGED
    meta[MARKER] = meta.pop(MARKER)  # the marker last, as a sealed note writes it
    return sealed_note(meta, kept, notes[1].newline).encode("utf-8")  # type: ignore[arg-type,union-attr]


def _one_sealed(notes: list[Note | None], path: str) -> bytes:
    """One side sealed, the other plain: the sealed note, needs-verification, the plain side's text after it."""
    ours, theirs = notes[1], notes[2]
    sealed, plain = (ours, theirs) if ours is not None and is_sealed(ours.meta) else (theirs, ours)
    if sealed is None:
        raise VaultmemError(f"{path}: neither side of the merge is encrypted")  # merge_sealed checked one is
    if plain is None:
        return sealed.text.encode("utf-8")  # the other side emptied the file: the encrypted note, nothing lost
    nl = sealed.newline
    quoted = [f"> > {line}" if line.strip() else "> >" for line in plain.body.rstrip("\r\n").split("\n")]
    callout = nl.join(["> [!warning] vaultmem: one machine encrypted this note while another changed it",
                       "> the other machine's text, as it was there (not encrypted):", *quoted]) + nl
    text = sealed.text.rstrip("\r\n") + nl + nl + callout
    status = {} if sealed.meta.get("status") == "superseded" else {"status": _FLAGGED}
    return update_fields(parse_note(text, path), status).encode("utf-8")
