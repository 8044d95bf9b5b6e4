"""A key-value store's item as a note a person can read, and back; the filters and namespace patterns a
store's search and listing apply. Pure: no IO, no framework (langgraph.py stores what this shapes).

An item (a namespace tuple, a key, a JSON value) is one note:
- namespace ("users", "alice"): the note's vault namespace "users.alice" (a label holds no ".");
- key: the note's `store_key` property; its tags are `langgraph`, `langgraph/users`, `langgraph/users/alice`
  (one per enclosing namespace) and `langgraph/users/alice/<key>`;
- value: its text field (the first of `text`, `content`, `memory` that holds text; `store_text` names it) is
  the body; the fields a property can hold (text, numbers, booleans, null, flat lists of those, under a name
  that is not vaultmem's own) are properties; the others follow the text as a ```json block ending the body.
  A value without a text field is its JSON in the body (so recall finds its words), its scalars properties
  too. Read back in that order, a property last: what a person edits in Obsidian's Properties wins.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import OWN_PROPERTIES

__all__ = ["CREATED", "KEY", "MARK", "STORE_PROPERTIES", "TEXT", "TEXT_FIELDS", "fits", "item_tags", "jsonable",
           "matches", "note_of", "path_tag", "value_of"]

MARK = "langgraph"  # the tag of every item's note: how the store finds its notes among the vault's
TEXT_FIELDS = ("text", "content", "memory")
KEY, TEXT, CREATED = "store_key", "store_text", "store_created"  # the store's own properties
STORE_PROPERTIES = frozenset([KEY, TEXT, CREATED])
OPEN, CLOSE = "```json\n", "\n```"
TITLE_CHARS = 60
_NOT_TAG = re.compile(r"[^\w-]+")  # Obsidian's tags hold letters, digits, _, - and the / that nests them
_ORDER: dict[str, Callable[[Any, Any], bool]] = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt,
                                                 "$lte": operator.le}


def path_tag(labels: Sequence[str]) -> str:
    """The nested tag of a namespace, or of an item with its key as the last label (`langgraph/users/alice/prefs`):
    one posting list in the index, so finding what is under it is one exact tag; a tree in Obsidian's tag pane.
    Characters a tag cannot hold become `-`: what collides is told apart by namespace and key."""
    return "/".join([MARK, *(_NOT_TAG.sub("-", label).strip("-") or "-" for label in labels)])


def item_tags(namespace: Sequence[str], key: str) -> list[str]:
    """An item's tags: its namespace's and each enclosing one's (`langgraph` the outermost), so a search of
    any prefix reads one tag; then its own, so a get does."""
    return [path_tag(namespace[:depth]) for depth in range(len(namespace) + 1)] + [path_tag([*namespace, key])]


def jsonable(value: Any) -> Any:
    """The value as JSON gives it back (tuples as lists, dates as ISO text). Raises TypeError for a value
    JSON cannot hold."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=_iso))


def note_of(key: str, value: Mapping[str, Any], created: str | None = None) -> tuple[str, dict[str, Any], str | None]:
    """(body, properties, title or None for one made from the body) of an item's note. `value` is jsonable;
    `created`, the item's first note's time, is for a later note (the first one's is its timestamp)."""
    text_field = next((f for f in TEXT_FIELDS if isinstance(value.get(f), str) and value[f].strip()), None)
    others = {k: v for k, v in value.items() if k != text_field}
    properties = {k: v for k, v in others.items() if _property(k, v)}
    rest = {k: v for k, v in others.items() if k not in properties}
    own = {KEY: key, TEXT: text_field, CREATED: created}
    if text_field is None:
        title = "; ".join(f"{k} {v}" for k, v in properties.items() if isinstance(v, str) and v.strip()) or key
        return _block(dict(value)), _given(own) | properties, title[:TITLE_CHARS]
    text = value[text_field].strip()
    if rest or text.endswith("```"):  # a text ending in a fence of its own is followed by ours, so ours is last
        text += "\n\n" + _block(rest)
    return text, _given(own) | properties, None


def value_of(meta: Mapping[str, Any], body: str) -> dict[str, Any]:
    """The value an item's note holds now (see the module docstring)."""
    text, fields = _split(body.replace("\r\n", "\n"))
    name = meta.get(TEXT)
    value: dict[str, Any] = {}
    if isinstance(name, str) and name:
        value[name] = text
    elif text:  # a JSON block a person broke: its text is kept, not dropped
        value["text"] = text
    value.update(fields)
    value.update({k: _from_yaml(v) for k, v in meta.items() if k not in OWN_PROPERTIES and k not in STORE_PROPERTIES})
    return value


def matches(value: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether a value passes a store filter: each field equal to the one given, or to every operator given
    for it ($eq $ne $gt $gte $lt $lte); a mapping without operators compares the fields inside. Raises
    ValueError for another operator."""
    return all(_passes(value.get(name) if isinstance(value, Mapping) else None, condition)
               for name, condition in wanted.items())


def fits(namespace: Sequence[str], match_type: str, path: Sequence[str]) -> bool:
    """Whether a namespace starts (match_type "prefix") or ends ("suffix") with `path`, where `*` is any label."""
    if match_type not in ("prefix", "suffix"):
        raise ValueError(f"a namespace condition matches a prefix or a suffix, not {match_type!r}")
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(want in ("*", have) for want, have in zip(path, part))


def _passes(held: Any, condition: Any) -> bool:
    if not isinstance(condition, Mapping):
        return held == condition
    if not any(str(k).startswith("$") for k in condition):
        return isinstance(held, Mapping) and matches(held, condition)
    return all(_compare(held, op, operand) for op, operand in condition.items())


def _compare(held: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return held == operand
    if op == "$ne":
        return held != operand
    order = _ORDER.get(op)
    if order is None:
        raise ValueError(f"unknown filter operator {op!r}: the operators are $eq, $ne, {', '.join(_ORDER)}")
    pair = _comparable(held, operand)
    return pair is not None and order(*pair)


def _comparable(a: Any, b: Any) -> tuple[Any, Any] | None:
    """Two values an order applies to: numbers (numbers written as text too) or two texts; None for others."""
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    try:
        x, y = (float(v) if not isinstance(v, bool) else math.nan for v in (a, b))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isnan(y) else (x, y)


def _property(name: Any, value: Any) -> bool:
    """Whether a field can be a property of the note (the write pipeline's check, items.py, accepts it)."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        return False
    if name in OWN_PROPERTIES or name in STORE_PROPERTIES:
        return False
    return all(v is None or isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))
               for v in (value if isinstance(value, list) else [value]))


def _given(properties: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in properties.items() if v is not None}


def _block(fields: Mapping[str, Any]) -> str:
    return OPEN + json.dumps(fields, ensure_ascii=False, indent=2) + CLOSE


def _split(body: str) -> tuple[str, dict[str, Any]]:
    """A body's text and the fields of the ```json block that ends it ({} when none does, or it is no object)."""
    end = body.rstrip()
    start = end.rfind(OPEN)
    if start < 0 or not end.endswith(CLOSE) or (start and end[start - 1] != "\n"):
        return end.strip(), {}
    try:
        fields = json.loads(end[start + len(OPEN):len(end) - len(CLOSE)])
    except ValueError:
        return end.strip(), {}
    return (end[:start].strip(), fields) if isinstance(fields, dict) else (end.strip(), {})


def _from_yaml(value: Any) -> Any:
    """A property as JSON holds it: a date or time a person typed becomes ISO text."""
    if isinstance(value, list):
        return [_from_yaml(v) for v in value]
    return value.isoformat() if isinstance(value, (dt.date, dt.time)) else value


def _iso(value: Any) -> str:
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    raise TypeError(f"a store's value holds JSON, not {type(value).__name__}")
