"""The readable file names a write reserves for its new notes before they are written.

A batch lists each folder once and reserves against that listing (a file made since is found by the
exclusive create at the flush, which takes the next free number: Store.create_numbered); a single,
durable write asks the disk and the index for each name instead. Repeated titles in a batch start
after the last number taken, so 1,000 "Daily standup" notes cost no quadratic search.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...errors import VaultmemError
from ...notes.names import numbered_name
from ...store.store import NAME_ATTEMPTS

if TYPE_CHECKING:
    from ...store.store import Store

__all__ = ["FreeNames"]


class FreeNames:
    """The names one writer has reserved, by folder role (memories, inbox)."""

    def __init__(self, vault: Store, durable: bool):
        self.vault = vault
        self.durable = durable  # a single write: ask the disk and the index for each name
        self._taken: dict[str, set[str]] = {}  # folder role -> names taken (casefolded), listed once by a batch
        self._tried: dict[tuple[str, str], int] = {}  # (role, stem) -> the first numbered name still worth trying

    def reserve(self, role: str, stem: str, title: str) -> tuple[str, int]:
        """A free `stem.md` (or `stem N.md`) in the folder of `role`, reserved: (its vault path, N or 0).

        Raises VaultmemError, naming the title, when NAME_ATTEMPTS numbers are all taken.
        """
        folder = self.vault.folders[role]
        taken = self._taken.get(role)
        if taken is None:
            folder.mkdir(parents=True, exist_ok=True)
            taken = self._taken[role] = {n.casefold() for n in os.listdir(folder)} if not self.durable else set()
        under = self.vault.relpath(folder) + "/"
        where = f"{folder}{os.sep}"
        tried = (role, stem.casefold())
        for attempt in range(self._tried.get(tried, 0), NAME_ATTEMPTS):
            name = numbered_name(stem, attempt)
            if name.casefold() in taken or (self.durable and (os.path.lexists(where + name)
                                                              or self.vault.index.path_taken(under + name))):
                continue
            taken.add(name.casefold())
            self._tried[tried] = attempt + 1
            return under + name, attempt
        raise VaultmemError(f"no free file name for {title!r} in {folder}")
