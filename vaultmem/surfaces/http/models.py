"""What the HTTP API takes and gives, as pydantic models and TypedDicts: FastAPI checks each request
against them and writes the OpenAPI document from them. Field names are the Python API's (the
parameters of Vault.remember, recall, context, ask…; the fields of each result's to_dict())."""

import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ... import Change, Hit
from ..shapes import Remembered, TypedDict

Tags = Annotated[list[str] | None, Field(description="Tags, without '#' (several: all of them).")]
Namespaces = Annotated[list[str] | None, Field(
    description="Namespaces to read (repeatable; default: shared and your own; '*': every one you may read).")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is a 422 naming it, not silently dropped


# -- requests -------------------------------------------------------------------------------------
class MemoryItem(_Strict):
    """One memory: its text and the fields of Vault.remember (README "Batches" lists them)."""

    text: str = Field(min_length=1, description="The memory, in any language.")
    tags: list[str] | str | None = Field(None, description="Tags, without '#' (a list, or one string of words).")
    source: str | None = Field(None, description="Who it is from: kept as provenance; it may lower the "
                                                 "memory's trust, never raise it above the token's.")
    lifecycle: str | None = Field(None, description="Its half-life: task, note, event, preference, fact, permanent.")
    score: float | None = Field(None, ge=0, le=10, description="Importance 0..10 (default: computed).")
    timestamp: str | None = Field(None, description="When it happened (ISO 8601), for imports.")
    type: str | None = Field(None, description="fact, preference, event, task, lesson, …")
    value: str | None = Field(None, description="A structured value: an id, a date, a number.")
    namespace: str | None = Field(None, description="shared (default) or one of the token's namespaces.")
    episode: str | None = Field(None, description="The session or conversation it belongs to.")
    title: str | None = Field(None, description="The note's title instead of one made from the text.")
    entity: str | list[str] | None = Field(None, description="Entities it is about; their notes are made.")
    candidate: bool | None = Field(None, description="Stage it in the inbox until a person confirms it.")
    supersedes: str | None = Field(None, description="Id or title of the memory this one replaces.")
    position: Literal["first", "last"] | None = Field(None, description="Its place in a conversation.")


class Remember(MemoryItem):
    explain: bool = Field(False, description="Also say how it was extracted, scored and decided.")


class RememberMany(_Strict):
    items: list[MemoryItem] = Field(description="The memories (at most http.max_batch of config.yaml); every one "
                                                "is checked before the first is written.")
    explain: bool = False


class RecallQuery(_Strict):
    query: str = Field("", description="Free text (any language; ids like CT2024 match).")
    tags: Tags = None
    limit: int | None = Field(None, ge=1, le=1000, description="How many hits (default: ranking.limit).")
    type: str | None = None
    source: str | None = None
    namespace: Namespaces = None
    lifecycle: str | None = None
    status: list[str] | None = Field(None, description="Only these statuses (default: all but superseded, "
                                                       "archived and candidate).")
    since: str | None = Field(None, description="Written on or after (YYYY-MM-DD or ISO 8601).")
    until: str | None = Field(None, description="Written on or before (a bare date counts through its day).")
    include: list[Literal["superseded", "candidate", "archived"]] | None = Field(
        None, description="Hidden statuses to show as well.")
    explain: bool = Field(False, description="With each hit's channels; `suppressed` lists what decay kept out.")
    semantic: bool | None = Field(None, description="Also by meaning (the `semantic` extra); default: semantic.enabled.")
    as_of: str | None = Field(None, description="Answer as the vault stood then (YYYY-MM-DD counts through its "
                                                "day, or ISO 8601): each hit's `as_of` says what dated it.")


class ContextQuery(_Strict):
    query: str = Field(min_length=1, description="What the prompt is about.")
    budget_tokens: int = Field(800, ge=1, le=100_000, description="Token budget of the block.")
    tags: Tags = None
    limit: int | None = Field(None, ge=1, le=1000, description="Memories recalled to choose from (default 30).")
    source: str | None = None
    namespace: Namespaces = None
    semantic: bool | None = Field(None, description="Also by meaning (the `semantic` extra); default: semantic.enabled.")
    as_of: str | None = Field(None, description="Answer as the vault stood then (YYYY-MM-DD counts through its "
                                                "day, or ISO 8601): each hit's `as_of` says what dated it.")


class AskQuery(_Strict):
    question: str = Field(min_length=1, description="A question about an entity's attribute.")
    min_confidence: float | None = Field(None, ge=0, le=1, description="Answer only at this confidence or above.")
    namespace: Namespaces = None
    semantic: bool | None = Field(None, description="Also by meaning (the `semantic` extra); default: semantic.enabled.")
    as_of: str | None = Field(None, description="Answer as the vault stood then (YYYY-MM-DD counts through its "
                                                "day, or ISO 8601): each hit's `as_of` says what dated it.")


class ChangesQuery(_Strict):
    since: str | None = Field(None, description="The `cursor` of the last answer; none: start from now.")
    limit: int = Field(100, ge=1, le=1000)


class Verdict(_Strict):
    verdict: Literal["useful", "confirm", "wrong", "outdated"]
    note: str = Field("", description="Why, in a few words (kept with the event).")


class Reason(_Strict):
    reason: str = Field("", description="Why (kept in the audit log).")


class ForgetWhere(_Strict):
    reason: str = Field(min_length=1, description="Why (kept in the audit log).")
    ids: list[str] = Field([], description="Memory ids, vault paths or titles.")
    tags: list[str] = Field([], description="Only memories with all these tags.")
    query: str = Field("", description="Only memories holding every word of this.")
    since: str | None = None
    until: str | None = None
    source: str | None = None
    dry_run: bool = Field(False, description="List what would be archived; change nothing.")


# -- the LangGraph server's store routes (storeroutes.py): the bodies langgraph-sdk's client.store sends --
Labels = Annotated[list[str], Field(description="A LangGraph namespace: ['alice', 'food'] is the vault namespace "
                                                "alice.food (labels without '.').")]


class StorePut(_Strict):
    namespace: Labels
    key: str
    value: dict[str, Any] = Field(description="The item: a note of its own (its `text` the body, scalars frontmatter).")
    index: list[str] | Literal[False] | None = Field(None, description="Ignored: recall indexes every word.")
    ttl: float | None = Field(None, description="Ignored: a note does not expire.")


class StoreGetQuery(_Strict):
    namespace: str = Field(description="The namespace's labels joined with '.' (alice.food).")
    key: str
    refresh_ttl: bool | None = Field(None, description="Ignored: a note does not expire.")


class StoreDelete(_Strict):
    namespace: Labels
    key: str


class StoreSearch(_Strict):
    namespace_prefix: Labels = []
    filter: dict[str, Any] | None = Field(None, description="Fields of the value, equal or $eq $ne $gt $gte $lt $lte.")
    limit: int = Field(10, ge=1, le=1000)
    offset: int = Field(0, ge=0)
    query: str | None = Field(None, description="Free text: ranks the items by recall (their `score`).")
    refresh_ttl: bool | None = Field(None, description="Ignored: a note does not expire.")


class StoreListNamespaces(_Strict):
    prefix: list[str] | None = Field(None, description="Only namespaces starting with these labels ('*': any one).")
    suffix: list[str] | None = Field(None, description="Only namespaces ending with these labels ('*': any one).")
    max_depth: int | None = Field(None, ge=1, description="Namespaces cut to this many labels.")
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0)


# -- answers: the results' to_dict() forms --------------------------------------------------------
class RememberedExplained(Remembered, total=False):
    explain: dict[str, Any] | None


class RememberedMany(TypedDict):
    total: int
    created: int
    merged: int
    unchanged: int
    results: list[RememberedExplained]


# Hit.to_dict() and Change.to_dict(): the dataclasses' own fields, so the schema cannot drift from them
HitShape = TypedDict("HitShape", typing.get_type_hints(Hit))
ChangeShape = TypedDict("ChangeShape", typing.get_type_hints(Change))


class Recalled(TypedDict):
    query: str
    hits: list[HitShape]
    suppressed: list[dict[str, Any]]


class ChangesShape(TypedDict):
    cursor: str
    changes: list[ChangeShape]
    more: bool
    reset: bool


class CallerShape(TypedDict):
    name: str
    scope: str
    namespaces: list[str]
    trust: str


class Status(TypedDict):
    version: str
    caller: CallerShape
    stats: dict[str, Any]


class Health(TypedDict):
    status: str
    version: str


class StoreItem(TypedDict):
    """langgraph's Item.dict(): times in ISO 8601, as the LangGraph server sends them."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


class StoreSearchItem(StoreItem):
    score: float | None


class StoreItems(TypedDict):
    items: list[StoreSearchItem]


class StoreNamespaces(TypedDict):
    namespaces: list[list[str]]


class FieldError(TypedDict):
    field: str
    message: str


class Problem(TypedDict, total=False):
    """Every error: a stable `code` (snake_case: not_found, namespace_denied, invalid_request …), the
    message the CLI prints, and for a request that does not fit the field named."""

    code: str
    message: str
    field: str
    errors: list[FieldError]


__all__ = ["AskQuery", "CallerShape", "ChangeShape", "ChangesQuery", "ChangesShape", "ContextQuery", "FieldError",
           "ForgetWhere", "Health", "MemoryItem", "Problem", "Reason", "RecallQuery", "Recalled", "HitShape", "Remember",
           "RememberMany", "RememberedExplained", "RememberedMany", "Status", "StoreDelete", "StoreGetQuery", "StoreItem",
           "StoreItems", "StoreListNamespaces", "StoreNamespaces", "StorePut", "StoreSearch", "StoreSearchItem", "Verdict"]
