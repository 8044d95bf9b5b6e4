"""Every error vaultmem raises is a VaultmemError; the CLI and servers map them in one place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


class VaultmemError(Exception):
    """Base of all vaultmem errors; its message is one sentence a user can act on."""


class InvalidValue(VaultmemError, ValueError):
    """A value given to vaultmem cannot be used (a ValueError too, for code that catches those)."""


class TextTooLong(InvalidValue):
    """A memory's text is longer than `write.max_text_chars`; nothing was written."""

    def __init__(self, where: str, chars: int, limit: int):
        self.chars = chars
        self.limit = limit
        super().__init__(f"{where}: the text has {chars:,} characters, more than write.max_text_chars ({limit:,}); "
                         "nothing was written (split it into several memories)")


class NotText(InvalidValue):
    """Input that is not UTF-8 text: a byte that is not UTF-8, or a lone surrogate no file can hold.
    `where` names the input, `offset` is where it stops being text; nothing was written."""

    def __init__(self, where: str, offset: int, problem: str, hint: str = ""):
        self.where = where
        self.offset = offset
        super().__init__(f"{where} is not UTF-8 text: {problem}; nothing was written" + (f" ({hint})" if hint else ""))


class MissingArgument(InvalidValue):
    """A call lacks what it needs: one of `names`, its parameters as the Python API calls them. A
    surface names its own (a flag, a tool's parameter) with `said`."""

    def __init__(self, what: str, names: Sequence[str]):
        self.what = what
        self.names = tuple(names)
        super().__init__(self.said({name: name for name in self.names}))

    def said(self, spelling: Mapping[str, str]) -> str:
        """The message with each parameter as `spelling` writes it; one it does not name is left out."""
        given = [spelling[name] for name in self.names if name in spelling]
        listed = ", ".join(given[:-1]) + " or " + given[-1] if len(given) > 1 else "".join(given)
        return f"{self.what}: give {listed}" if listed else self.what


class VaultNotFound(VaultmemError):
    """No vault was named, or the named folder is not a vault."""


class NoteNotFound(VaultmemError):
    """No note has this id or path."""

    def __init__(self, ref: str):
        self.ref = ref
        super().__init__(f"no note matches {ref!r}")


class AmbiguousNote(VaultmemError):
    """A reference matches more than one note."""

    def __init__(self, ref: str, candidates: list[str]):
        self.ref = ref
        self.candidates = candidates
        shown = ", ".join(candidates[:5])
        super().__init__(f"{ref!r} matches {len(candidates)} notes ({shown}); give the id or the full path")


class NoteFormatError(VaultmemError):
    """A note's frontmatter cannot be parsed; the note is left untouched."""

    def __init__(self, path: Path | str | None, line: int | None, problem: str):
        self.path = path
        self.line = line
        self.problem = problem
        where = f"{path}" if path is not None else "note"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {problem}")


class UnsafePath(VaultmemError):
    """A path or file name would escape the vault or is not allowed on disk."""


class WriteConflict(VaultmemError):
    """The note changed on disk after it was read; nothing was written."""

    def __init__(self, path: Path | str, problem: str = ""):
        self.path = path
        super().__init__(f"{path} {problem or 'changed on disk since it was read'}; nothing was written "
                         "(re-read it and try again)")


class PolicyViolation(VaultmemError):
    """The write policy refused this memory."""


class NamespaceDenied(VaultmemError):
    """A caller confined to its namespace named another one (store/caller.py)."""


class OwnerOnly(VaultmemError):
    """An operation over the whole vault (doctor, repair, gc, sync, hooks) asked by a caller confined
    to its namespace: it is the vault owner's."""


class ConfigError(VaultmemError):
    """The vault's config.yaml is invalid."""


class IndexDamaged(VaultmemError):
    """A file of the index sidecar is damaged; the index rebuilds itself from the notes."""


class WatchLimit(VaultmemError):
    """The operating system allows no more file watches (Linux: an inotify limit); `setting` is the
    sysctl that raises it."""

    def __init__(self, message: str, setting: str):
        self.setting = setting
        super().__init__(message)


class MissingExtra(VaultmemError, ImportError):
    """An optional part needs a package of an extra that is not installed (an ImportError too, for code that
    catches those); `extra` names it."""

    def __init__(self, what: str, extra: str):
        self.extra = extra
        super().__init__(f"{what} needs the '{extra}' extra: pip install '{DISTRIBUTION}[{extra}]'")


class Locked(VaultmemError):
    """An operation needs the passphrase of encrypted notes and none was given ($VAULTMEM_PASSPHRASE, a prompt,
    Vault.unlock); nothing was written."""


class WrongPassphrase(VaultmemError):
    """The passphrase given does not open the vault's encrypted notes; nothing was written."""


class SealBroken(VaultmemError):
    """An encrypted note's ciphertext fails authentication (altered, truncated, or moved from another note);
    `path` names it. It is left as it is."""

    def __init__(self, path: Path | str, problem: str = "its ciphertext fails authentication"):
        self.path = path
        super().__init__(f"{path}: {problem} (altered, damaged or copied from another note); it was left as it is")


DISTRIBUTION = "vaultmem-md"  # the name on PyPI, where `vaultmem` is an unrelated project

__all__ = ["AmbiguousNote", "ConfigError", "DISTRIBUTION", "IndexDamaged", "InvalidValue", "Locked", "MissingArgument",
           "MissingExtra", "NamespaceDenied", "NoteFormatError", "NoteNotFound", "NotText", "OwnerOnly", "PolicyViolation",
           "SealBroken", "TextTooLong", "UnsafePath", "VaultNotFound", "VaultmemError", "WatchLimit", "WriteConflict",
           "WrongPassphrase"]
