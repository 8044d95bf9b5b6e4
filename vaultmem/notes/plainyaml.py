"""Frontmatter read as YAML 1.1 (PyYAML's safe loader) reads it, without importing YAML.

Importing YAML costs ~35 ms, more than a whole `remember`, and parsing with it 100-300 µs a
note, too slow for indexing 100k notes. fast_meta reads the simple frontmatter every vaultmem
note and most hand-written ones have; plain_value resolves a plain scalar of the shapes notes
hold. Anything else is left to YAML itself (note.py), so the result is always exactly YAML's.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from functools import cache
from typing import Any

from ..text.terms import LazyPattern

__all__ = ["ASK_YAML", "INDICATORS", "MAX_ALIAS_GROWTH", "MAX_DEPTH", "STR_TAG", "bounded", "error_at", "fast_meta",
           "plain_value", "shallow", "flow_too_deep", "yaml_tag"]

STR_TAG = "tag:yaml.org,2002:str"
_FAST_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "null", "bool", "int", "float", "timestamp"))
INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")  # characters a plain scalar may not start with


# --- simple frontmatter ---------------------------------------------------------------------

_NOT_FAST = object()
# tabs and lone CRs are where PyYAML's and libyaml's readings part; such notes go the slow way
_FAST_UNSAFE = LazyPattern("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]|\r(?!\n)")
# a plain scalar runs to the end of the line or to a ' #' comment; spelt without backtracking
_PLAIN_RE = r"""[^\s"'\[\]{}\#][^ \r\n]*(?:[ ]+[^ \#\r\n][^ \r\n]*)*"""
# groups: the whole line, key, its value, '-' of a block-list item (with indent), the item's value
_FAST_LINE = LazyPattern(
    rf"""( [ ]*\r?\n | \#.*\n
    | (\w[\w.-]*(?:[ ][\w.-]+)*):(?:[ ]+("[^"\\\n]*"|'[^'\n]*'|\[.*?\]|{_PLAIN_RE}))?(?:[ ]+\#.*)?[ ]*\r?\n
    | ([ ]*-)(?:[ ]+("[^"\\\n]*"|'[^'\n]*'|{_PLAIN_RE}))?(?:[ ]+\#.*)?[ ]*\r?\n )""",
    re.VERBOSE,
)
_FAST_ITEM = LazyPattern(r' *(?:"([^"\\]*)"|([^\s"\'\[\]{},#?][^\[\]{},#?]*?)) *([,\]])')
_FAST_EMPTY_LIST = re.compile(r"\[ *\]")
_FAST_CACHE: dict[str, Any] = {}  # plain scalar -> value; all such values are immutable


def fast_meta(frontmatter: str) -> dict[str, Any] | None:
    """The properties of simple frontmatter read without YAML, or None when YAML must read it.

    Simple: blank and `#` lines, `key: value` and `- value` block-list items, each value a plain
    scalar, quoted text without escapes or a one-line flow list of those. The result is exactly
    YAML's: the same resolver and constructors build each scalar.
    """
    if not frontmatter.replace("\r\n", "").replace("\n", "").isprintable() and _FAST_UNSAFE.search(frontmatter):
        return None  # isprintable() is the quick test: it refuses all that YAML refuses, and more
    if frontmatter and not frontmatter.endswith("\n"):
        frontmatter += "\n"
    meta: dict[str, Any] = {}
    list_key, indent, length = None, None, 0  # the key whose block list is open; its items' indent
    for line, key, value, dash, item in _FAST_LINE.findall(frontmatter):
        length += len(line)
        if key:
            meta[key] = parsed = _fast_value(value)
            list_key, indent = (None if value else key), None
            if len(key) > 1000:  # YAML allows 1024 characters a key
                return None
        elif dash:
            if list_key is None or indent not in (None, dash):
                return None
            if indent is None:
                meta[list_key], indent = [], dash
            meta[list_key].append(parsed := _fast_value(item))
        else:
            continue  # a blank or comment line
        if parsed is _NOT_FAST:
            return None
    return meta if length == len(frontmatter) else None  # else some line is not simple


def _fast_value(text: str) -> Any:
    """One value as matched by _FAST_LINE, or _NOT_FAST; an empty match is None."""
    if not text:
        return None
    if text[0] in "\"'":
        return text[1:-1]  # quoted text without escapes is itself
    return _fast_list(text) if text[0] == "[" else _fast_plain(text)


def _fast_list(flow: str) -> Any:
    """A one-line flow list of plain or simply quoted items, or _NOT_FAST."""
    if _FAST_EMPTY_LIST.fullmatch(flow):
        return []
    items, pos = [], 1
    while True:
        item = _FAST_ITEM.match(flow, pos)
        if item is None:
            return _NOT_FAST
        quoted, plain, separator = item.groups()
        value = quoted if quoted is not None else _fast_plain(plain)
        if value is _NOT_FAST:
            return _NOT_FAST
        items.append(value)
        pos = item.end()
        if separator == "]":
            return items if pos == len(flow) else _NOT_FAST


def _fast_plain(raw: str) -> Any:
    """A one-line plain scalar resolved and built as YAML would, or _NOT_FAST."""
    if ": " in raw or raw.endswith(":"):
        return _NOT_FAST
    first = raw[0]
    if first in INDICATORS and not (first == "-" and len(raw) > 1 and raw[1] != " "):
        return _NOT_FAST
    if first not in _MAYBE_NOT_STR:
        return raw
    value = _FAST_CACHE.get(raw, _FAST_CACHE)
    if value is not _FAST_CACHE:
        return value
    value = plain_value(raw)
    if value is ASK_YAML:
        value = _yamlplain_value(raw)
    if len(_FAST_CACHE) > 10_000:  # ids and timestamps rarely repeat: keep the cache small
        _FAST_CACHE.clear()
    _FAST_CACHE[raw] = value
    return value


# --- plain scalars: YAML 1.1's implicit types, for the shapes notes hold, without YAML --------

_MAYBE_NOT_STR = frozenset("!&*+-.0123456789<=FNOTYfnoty~")  # the first characters YAML's resolver tests
# The only words YAML 1.1 reads as other than text (the empty scalar is null too).
_WORDS: dict[str, Any] = {
    **dict.fromkeys("yes Yes YES true True TRUE on On ON".split(), True),
    **dict.fromkeys("no No NO false False FALSE off Off OFF".split(), False),
    **dict.fromkeys("null Null NULL ~".split(), None),
}
# Every character YAML's int, float and timestamp patterns accept: a scalar with any other is text.
_NUMBER_CHARS = frozenset("0123456789_+-.:abcdefABCDEFxeEiInNfFtTZ \t")
_COMMON_PLAIN = LazyPattern(
    r"(-?(?:0|[1-9][0-9]*))|(-?[0-9]+\.[0-9]+)"  # decimal int, float
    r"|([0-9]{4})-([0-9]{2})-([0-9]{2})"  # date, then an optional ISO time, fraction and zone
    r"(?:T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?(?:(Z)|([-+])([0-9]{2}):([0-9]{2}))?)?"
)
ASK_YAML = object()


def plain_value(raw: str) -> Any:
    """What YAML's safe loader makes of the plain scalar `raw` (not empty), or ASK_YAML when it
    is a shape vaultmem never writes (octal, sexagesimal, `.inf`, a space before the zone...) or an
    impossible date."""
    first = raw[0]
    if first not in _MAYBE_NOT_STR:
        return raw
    if first.isalpha() or first == "~":
        return _WORDS.get(raw, raw)
    if first in "<=!&*":  # merge, value and the never-plain indicators: YAML's own business
        return ASK_YAML if raw in ("<<", "=") or first in "!&*" else raw
    if not _NUMBER_CHARS.issuperset(raw):
        return raw
    match = _COMMON_PLAIN.fullmatch(raw)
    if match is None:
        return ASK_YAML
    integer, real, year, month, day, hour, minute, second, fraction, utc, sign, tz_hour, tz_minute = match.groups()
    try:
        if integer:
            return int(integer)  # past 4,300 digits Python refuses: YAML's own error then
        if real:
            return float(real)
        if hour is None:
            return date(int(year), int(month), int(day))
        zone = timezone.utc if utc else None
        if sign:
            offset = timedelta(hours=int(tz_hour), minutes=int(tz_minute))
            zone = timezone(-offset if sign == "-" else offset)
        micro = int(fraction.ljust(6, "0")) if fraction else 0
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=zone)
    except ValueError:  # 2024-02-30, or an integer too long to convert: YAML reports it
        return ASK_YAML


def yaml_tag(raw: str) -> str:
    """The tag YAML's resolver gives the plain scalar `raw`."""
    from yaml.nodes import ScalarNode

    return _resolver().resolve(ScalarNode, raw, (True, False))


def _yamlplain_value(raw: str) -> Any:
    """The plain scalar `raw` resolved and built by YAML itself, or _NOT_FAST."""
    from yaml.constructor import SafeConstructor
    from yaml.nodes import ScalarNode

    tag = yaml_tag(raw)
    try:
        build = SafeConstructor.yaml_constructors[tag] if tag in _FAST_TAGS else None
        return build(_constructor(), ScalarNode(tag, raw)) if build else _NOT_FAST
    except ValueError:  # an impossible date such as 2024-02-30: YAML reports it
        return _NOT_FAST


@cache
def _resolver() -> Any:
    from yaml.resolver import Resolver

    return Resolver()


@cache
def _constructor() -> Any:
    from yaml.constructor import SafeConstructor

    return SafeConstructor()


# --- untrusted YAML: a shared vault's notes and config are written by anyone who can push -----

MAX_DEPTH = 64  # nesting a document may have: Obsidian shows flat properties, configs nest 3 deep
# characters (and values, one each) that aliases may add: "billion laughs" adds billions in 300 bytes
MAX_ALIAS_GROWTH = 100_000
# Each collection starts with one of these characters of its own ('[', '{', or a block's '-', '?'
# or ':'), so a text with fewer of them than a depth cannot nest that deep.
_NESTING_MARKS = "[{-?:"


def shallow(text: str) -> bool:
    """Whether libyaml can compose this text: it recurses in C once per level and overflows the
    stack (the process dies) somewhere past 20,000 levels; PyYAML's own composer raises
    RecursionError instead, so a text that might nest deep enough goes to it."""
    return _nesting_marks(text) < 2_000


def flow_too_deep(text: str) -> bool:
    """Whether the flow brackets (`[`, `{`) of a text that is not shallow nest deeper than MAX_DEPTH, counted
    without reading it as YAML. PyYAML's own scanner takes time quadratic in the marks (100,000 nested
    brackets: minutes) before its composer could refuse them; a bracket inside a quoted string counts too,
    which only a text of thousands of nesting marks pays for."""
    depth = deepest = 0
    for mark in _FLOW_MARKS.findall(text):
        depth = depth + 1 if mark in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return True
    return False


_FLOW_MARKS = re.compile(r"[\[\]{}]")


def _nesting_marks(text: str) -> int:
    return sum(map(text.count, _NESTING_MARKS))


@cache
def bounded(base: type) -> type:
    """The YAML loader class `base`, refusing before anything is built a document nested deeper
    than MAX_DEPTH, or whose aliases add more than MAX_ALIAS_GROWTH to its size or refer to
    themselves: a consumer that walks the values (links, tags, JSON output) would run for hours."""

    class Bounded(base):  # type: ignore[misc,valid-type]
        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            # neither limit can be reached without an alias or that many nesting marks
            self._check = not isinstance(stream, str) or "*" in stream or _nesting_marks(stream) >= MAX_DEPTH

        def construct_document(self, node: Any) -> Any:
            if self._check:
                _check_nodes(node)
            return super().construct_document(node)

    return Bounded


def _check_nodes(root: Any) -> None:
    """Raise ConstructorError unless the node graph is a DAG within MAX_DEPTH and MAX_ALIAS_GROWTH.

    One pass after the children (no recursion: the graph may be deep); an alias is the same node
    object met again, so each node is measured once. A node's size is 1, plus its characters for
    a scalar; its expanded size counts its children's as often as they appear.
    """
    from yaml.constructor import ConstructorError

    measured: dict[int, tuple[int, int]] = {}  # node -> (size with aliases expanded, depth)
    distinct = 0  # the size of the nodes measured, each once
    open_nodes: set[int] = set()  # the nodes being measured: the path from the root
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            parts = [measured[id(child)] for child in _children(node)]
            own = 1 + len(node.value) if isinstance(node.value, str) else 1
            distinct += own
            measured[key] = (own + sum(size for size, _ in parts), 1 + max((depth for _, depth in parts), default=0))
            problem = _problem(measured[key], distinct)
        elif key in measured:
            continue
        elif key in open_nodes:
            problem = "an alias refers to the collection that holds it"
        else:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
            continue
        if problem:
            raise ConstructorError(None, None, problem, node.start_mark)


def _children(node: Any) -> list[Any]:
    """A node's child nodes (a mapping's keys and values); a scalar has none."""
    if isinstance(node.value, str):
        return []
    if node.value and isinstance(node.value[0], tuple):
        return [part for pair in node.value for part in pair]
    return list(node.value)


def _problem(measure: tuple[int, int], distinct: int) -> str:
    """Why a node measured (size with aliases expanded, depth) is refused, or ''; `distinct`:
    the size of every node measured so far, each once (past the node's own: its growth is less)."""
    size, depth = measure
    if depth > MAX_DEPTH:
        return f"values nested more than {MAX_DEPTH} levels deep"
    if size - distinct > MAX_ALIAS_GROWTH:
        return f"aliases expand it by more than {MAX_ALIAS_GROWTH:,} characters (a YAML bomb?)"
    return ""


def error_at(exc: Any, text: str) -> tuple[str, int | None]:
    """What a YAML error says, in one line, and the line (from 0) of `text` it points at."""
    problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "unreadable"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return problem, mark.line
    position = getattr(exc, "position", None)  # a ReaderError knows only the character offset
    return problem, None if position is None else text.count("\n", 0, position)
