"""A memory written into an encrypted namespace (`encryption.namespaces`): the Drafter's note, sealed before
anything touches disk (notes/sealed.py, store/crypto.py), then written as every new note is (its free
name, the index, the day line, the audit event), with nothing of its text outside the ciphertext.

Such a memory is a note of its own: the index knows none of its words, so it is neither a retry nor a
restatement of another note (two equal remembers make two notes), it retires no note by attribute, and
it names no new entity (an entity note's title would say who the memory is about); an explicit
supersede (`correct`) still retires the note it names. Its day line names it by its neutral file name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..notes.sealed import KeySpec, clear_meta, read_seals, sealed_name, sealed_note
from ..store.crypto import seal_text
from ..store.index.records import SEALED_TYPE, build_record
from .episodes import EpisodeLine
from .items import WriteResult
from .seen import Known

if TYPE_CHECKING:
    from ..store.store import Store
    from .drafts import Draft

__all__ = ["known_keys", "seal_draft", "writing_key"]


def known_keys(vault: Store) -> list[KeySpec]:
    """The keys of the vault's encrypted notes, the newest notes' first (a note that cannot be read is passed)."""
    from ..errors import NoteFormatError
    from ..notes.note import parse_note

    specs = []
    rows = vault.index.select_notes("type = ? AND +kind = 'memory'", (SEALED_TYPE,), order="ts DESC",
                                    columns=("path",))
    for row in rows:
        try:
            note = parse_note((vault.root / row["path"]).read_bytes(), row["path"])
            specs.append(read_seals(note)[0].key)
        except (OSError, NoteFormatError):
            continue
    return specs


def writing_key(vault: Store, why: str) -> tuple[KeySpec, bytes]:
    """The key new encrypted notes take, from the passphrase given. Raises Locked, WrongPassphrase."""
    passphrase = vault.keyring.passphrase(required=True, why=why)
    return vault.keyring.writing_key(passphrase, lambda: known_keys(vault))  # type: ignore[arg-type]


def seal_draft(writer: Any, draft: Draft, supersedes: Any) -> WriteResult:
    """Write a drafted memory sealed, as a new note (retiring the note `supersedes` names, if any); `writer`
    is the pipeline.Writer deciding it (not imported: the pipeline imports this module)."""
    vault = writer.vault
    meta = draft.meta
    spec, key = writing_key(vault, f"a memory in the encrypted namespace {meta['namespace']}")
    old = writer._superseded(draft, supersedes) if supersedes not in (None, "") else None
    if old is not None:
        writer.flight.notes.load(old.path, old.sha)
        draft.supersedes = old.title
    from ..notes.writing import render_new

    fields, body = draft.fields()
    plain = render_new(fields, body)
    seal = seal_text(spec, key, meta["id"], draft.title, plain)
    draft.data = sealed_note(clear_meta(fields), [seal]).encode("utf-8")
    draft.title = draft.stem = sealed_name(meta["id"])
    draft.record = build_record(draft.data, f"{draft.folder}/{draft.stem}.md", "memory", draft.folder,
                                (0, len(draft.data)), vault.settings.defaults, max_chars=writer.settings.max_text_chars)
    rel = writer._place(draft)
    title = rel.rsplit("/", 1)[-1][:-3]
    if old is not None:
        writer._retire(old, title)
    if writer.settings.episodes and writer._public(meta["namespace"]):
        writer.flight.episodes.append(EpisodeLine(meta["timestamp"], title, "encrypted"))
    writer.flight.audit.append({"event": "remember", "action": "created", "id": meta["id"], "title": title})
    draft.decided("new encrypted note" + (f"; supersedes {old.path}" if old else ""))
    known = Known(rel, meta["id"], title, meta["type"], meta["value"], meta["namespace"], meta["status"], meta["score"])
    return writer._result("created", known, draft, meta["score"], old.id if old else None)
