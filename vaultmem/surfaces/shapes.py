"""The JSON shapes of the library's results (their `to_dict()` forms) as TypedDicts, which the MCP and
HTTP servers publish as schemas (the MCP tools' outputSchema, the HTTP API's OpenAPI document).

Shown and Told are made from the Memory and Story dataclasses' own fields, so their published schemas cannot
drift from them.
No SDK here: pydantic reads these when a server is built.
"""

import typing

try:  # pydantic reads nested TypedDicts before Python 3.12 only from typing_extensions
    from typing_extensions import TypedDict
except ImportError:  # no server extra either: the server's entry point says which to install
    from typing import TypedDict

from .. import Memory
from ..overview.storydata import Story


class Remembered(TypedDict):
    """WriteResult.to_dict()."""

    action: str
    id: str
    path: str
    title: str
    supersedes: str | None
    type: str
    value: str
    score: float
    status: str
    tags: list[str]
    redacted: list[str]


class FeedbackEvent(TypedDict, total=False):
    """The event appended to the device log."""

    event: str
    id: str
    verdict: str
    ts: float
    note: str


class FeedbackGiven(TypedDict):
    """lifecycle.feedback.Marked.to_dict()."""

    action: str
    id: str
    path: str
    title: str
    status: str
    event: FeedbackEvent | None
    changed: list[str]


class ForgottenNote(TypedDict):
    """A memory a forget archived (or would, with dry_run): `to` is its archive path ("" in a dry run)."""

    id: str
    title: str
    path: str
    to: str
    status: str
    sha: str


class LeftAlone(TypedDict):
    """A memory a forget skipped: edited while it ran, or gone."""

    id: str
    path: str
    why: str


class ForgetDone(TypedDict):
    """lifecycle.forget.Forgotten.to_dict()."""

    action: str
    reason: str
    notes: list[ForgottenNote]
    skipped: list[LeftAlone]
    dry_run: bool


class ContextLine(TypedDict):
    """ContextItem.to_dict()."""

    id: str
    title: str
    path: str
    source: str
    date: str
    text: str
    score: float
    count: int
    first: str
    last: str
    ids: list[str]
    line: str


class Woven(TypedDict):
    """Context.to_dict()."""

    query: str
    text: str
    tokens: int
    budget: int
    dropped: int
    items: list[ContextLine]


# answer._Candidate.to_dict(): "from" is a keyword, hence the functional form
Candidate = TypedDict("Candidate", {"value": str, "type": str, "confidence": float, "from": str, "id": str,
                                    "title": str, "path": str, "source": str, "date": str})


class Answered(TypedDict):
    """Answer.to_dict()."""

    question: str
    answered: bool
    answer: str
    confidence: float
    type: str
    id: str
    title: str
    path: str
    source: str
    date: str
    candidates: list[Candidate]
    reason: str


# Memory.to_dict(): the same fields as the dataclass, so the published schema cannot drift from it
Shown = TypedDict("Shown", typing.get_type_hints(Memory))


# Story.to_dict() (`why`): events oldest first, each {ts, when, kind, what, by} and, as they apply, text,
# commit, diff, other; the supersede chain oldest first; strength now and in 30 days
Told = TypedDict("Told", typing.get_type_hints(Story))


__all__ = ["Answered", "Candidate", "ContextLine", "FeedbackEvent", "FeedbackGiven", "ForgetDone", "ForgottenNote",
           "LeftAlone", "Remembered", "Shown", "Told", "TypedDict", "Woven"]
