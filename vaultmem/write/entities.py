"""The entity notes one write makes sure of before anything is drafted, and the matcher that links
drafts to them (write/links.py holds the matching and the entity notes' format)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .drafts import parse_time

if TYPE_CHECKING:
    from ..store.store import Store
    from .links import EntityMatcher
    from .policy import Policy

__all__ = ["EntityNotes"]


class EntityNotes:
    """Entity notes for the names a write's items give or introduce with a cue: each made once per
    write (a batch names the same customer again and again), each one it creates audited into
    `audit` and added to the matcher, so that every memory of a batch links to every entity the
    batch names, wherever it is first named."""

    def __init__(self, vault: Store, policy: Policy, durable: bool, audit: list[dict[str, Any]]):
        self.vault, self.policy, self.durable, self.audit = vault, policy, durable, audit
        self._matcher: EntityMatcher | None = None
        self._ensured: set[str] = set()  # entity names (folded) made sure of

    def ensure(self, checked: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Make sure of the entity notes for these checked (text, fields) items."""
        from .extract import cue_names

        for body, fields in checked:
            names = [*fields["entity"], *cue_names(body)]
            if names:
                when = parse_time(fields.get("timestamp"))
                for name in names:
                    # the given names were checked; a cue's name that a rule calls secret is no name
                    if not self.policy.clean(name)[1]:
                        self._ensure(name, when)

    def matcher(self) -> EntityMatcher:
        """The vault's entity matcher, with the entities this write created."""
        if self._matcher is None:
            from .links import EntityMatcher

            # reused while no entity note changed; a batch adds the entities it creates to it
            self._matcher = self.vault.reused("entities", self.vault.index.entity_state(),
                                              lambda: EntityMatcher.from_index(self.vault))
        return self._matcher

    def _ensure(self, name: str, when: dt.datetime) -> None:
        from .links import Entity, add_entity, fold

        if fold(name) in self._ensured:
            return
        self._ensured.add(fold(name))
        action, rel = add_entity(self.vault, name, when=when, durable=self.durable)
        if action == "created":
            self.matcher().add(Entity(Path(rel).stem, ()))
            self.audit.append({"event": "entity", "action": action, "path": rel})
