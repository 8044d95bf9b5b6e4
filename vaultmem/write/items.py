"""What a caller hands the write pipeline and what it gets back: the fields of a memory (the batch
file's and `remember`'s), their check before anything is written, JSON lines, and WriteResult.

Checks only: no file is read or written here (the policy object it is given holds the rules).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import TextTooLong, VaultmemError
from ..text.encoding import check_text
from .drafts import OWN_PROPERTIES, parse_time
from .extract import POSITIONS

if TYPE_CHECKING:
    from .policy import Policy

__all__ = ["BATCH_FIELDS", "WriteResult", "check_item", "given_fields", "read_jsonl"]

BATCH_FIELDS = {"text", "tags", "source", "lifecycle", "score", "timestamp", "type", "value", "namespace",
                "episode", "title", "entity", "candidate", "supersedes", "position", "merge", "properties"}
_SCALARS = (str, bool, int, float, type(None))  # what a property holds, alone or in a flat list


@dataclass(frozen=True)
class WriteResult:
    """What remember did: created a note, merged into an existing one, or found it already there."""

    action: str                      # created | merged | unchanged
    id: str
    path: str
    title: str
    supersedes: str | None = None    # id of the memory this one replaced
    type: str = ""
    value: str = ""
    score: float = 0.0
    status: str = "active"
    tags: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # kinds of secrets removed before writing
    explain: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (`explain` only when it was asked for)."""
        if self.explain is not None:
            return asdict(self)
        # asdict copies deeply and costs ~10x this: a batch prints 100,000 of these
        return {"action": self.action, "id": self.id, "path": self.path, "title": self.title,
                "supersedes": self.supersedes, "type": self.type, "value": self.value, "score": self.score,
                "status": self.status, "tags": list(self.tags), "redacted": list(self.redacted)}


def check_item(policy: Policy, item: dict[str, Any], where: str, max_chars: int) -> tuple[str, dict[str, Any]]:
    """Validate one item (fields, text of at most `max_chars` characters, blocked tags, secrets in
    identifiers): its text and fields, or VaultmemError/PolicyViolation naming `where`.

    A message never repeats a value it refuses (it may be a secret): it says what was expected.
    """
    for name, value in item.items():  # a string UTF-8 cannot hold would fail as its note is written, after its entities'
        for one in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(one, str):
                check_text(one, f"{where}: {name}")
    unknown = set(item) - BATCH_FIELDS
    if unknown:  # a field's name is shown, cleaned like text (a JSON key can be anything)
        raise VaultmemError(f"{where}: unknown field(s) {policy.clean(', '.join(sorted(unknown)))[0]}; "
                            f"the fields are {', '.join(sorted(BATCH_FIELDS))}")
    body = item.get("text")
    if not isinstance(body, str) or not body.strip():
        raise VaultmemError(f"{where}: `text` is required and must be a non-empty string")
    body = body.strip()
    if len(body) > max_chars:
        raise TextTooLong(where, len(body), max_chars)
    fields = {k: v for k, v in item.items() if k != "text"}
    fields["tags"] = _str_list(fields.get("tags"), "tags")
    policy.check_tags(fields["tags"])
    fields["entity"] = _names(fields.get("entity"))
    policy.check_identifiers(fields, where)
    score = fields.get("score")
    if score is not None and not (isinstance(score, (int, float)) and 0 <= score <= 10):
        raise VaultmemError(f"{where}: score must be a number between 0 and 10")
    if fields.get("position") not in (None, *POSITIONS):
        raise VaultmemError(f"{where}: position must be {' or '.join(POSITIONS)}")
    if not isinstance(fields.get("merge", True), bool):
        raise VaultmemError(f"{where}: merge must be true or false")
    fields["properties"] = _properties(policy, fields.get("properties"), where)
    if fields["properties"] and fields.get("merge", True):
        raise VaultmemError(f"{where}: properties are kept on a note of its own: give merge: false with them")
    try:
        parse_time(fields.get("timestamp"))
    except VaultmemError as exc:
        raise VaultmemError(f"{where}: {exc}") from None
    return body, fields


def given_fields(fields: dict[str, Any]) -> frozenset[str]:
    """The fields a caller set (not empty), of those a supersede would otherwise carry over."""
    return frozenset(name for name in ("tags", "lifecycle", "entity") if fields.get(name))


def read_jsonl(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Objects of a JSON-lines stream; a bad line raises VaultmemError naming its line number."""
    import json

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise VaultmemError(f"line {number}: not valid JSON ({exc.args[0]})") from None
        if not isinstance(item, dict):
            raise VaultmemError(f"line {number}: expected a JSON object")
        yield item


def _str_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, int, float)) for v in value):
        raise VaultmemError(f"{name} must be a list of strings")
    return [str(v).lstrip("#") for v in value if str(v).strip("# ")]


def _properties(policy: Policy, value: Any, where: str) -> dict[str, Any]:
    """A write's own properties, checked: names of text that are not vaultmem's own (OWN_PROPERTIES) and
    hold no secret, values that are text, numbers, booleans, null or flat lists of those."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VaultmemError(f"{where}: properties must be an object of name: value")
    for name, held in value.items():
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise VaultmemError(f"{where}: a property's name must be text of 1 to 200 characters")
        check_text(name, f"{where}: a property's name")
        if name in OWN_PROPERTIES:
            raise VaultmemError(f"{where}: property {name!r} is vaultmem's own; give it as its field, or another name")
        policy.check_identifier("property name", name, where)
        for one in held if isinstance(held, list) else [held]:
            if not isinstance(one, _SCALARS) or (isinstance(one, float) and not math.isfinite(one)):
                raise VaultmemError(f"{where}: property {name!r} must be text, a number, a boolean, null or a flat "
                                    "list of those")
            if isinstance(one, str):
                check_text(one, f"{where}: property {name!r}")
    return dict(value)


def _names(value: Any) -> list[str]:
    """Entity names: a string is one name (names have spaces), a list is several."""
    if value is None:
        return []
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise VaultmemError("entity must be a name or a list of names")
    return [n.strip() for n in names if n.strip()]
