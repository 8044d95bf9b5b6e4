"""The Story dataclass `vaultmem why` returns (overview/story.py tells it). It lives apart from the telling so
the servers' shapes (surfaces/shapes.py) can make their schema from its fields without importing numpy, git
or the index, which a server's start does not need."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Story"]


@dataclass
class Story:
    """A memory's history, oldest first, and its strength now (what `vaultmem why` prints)."""

    id: str
    title: str
    path: str
    namespace: str
    status: str
    text: str
    events: list[dict[str, Any]] = field(default_factory=list)  # {ts, when, kind, what, by} and text, commit, diff, other
    chain: list[dict[str, Any]] = field(default_factory=list)   # the supersede chain, oldest first
    strength: dict[str, Any] = field(default_factory=dict)
    git: str = ""  # how git was read, or why it was not

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
