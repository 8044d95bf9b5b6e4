"""Writing notes: a new note's text in vaultmem's style (`render_new`) and an edit of an existing
note that rewrites only the lines of the properties that change, keeping every other byte, its
comments, quoting, list style and alignment (`update_fields`). Pure: text in, text out; the note is
read back (notes/note.py) to check that the edit says what was asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any

from vaultmem.errors import InvalidValue, NoteFormatError
from vaultmem.notes.note import _BOM, _UNPRINTABLE, Note, _loader, _split, parse_note
from vaultmem.notes.plainyaml import ASK_YAML, INDICATORS, STR_TAG, plain_value, yaml_tag
from vaultmem.text.terms import LazyPattern

__all__ = ["DELETE", "render_new", "update_fields"]


class _Delete:
    """The type of DELETE."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE: Any = _Delete()
"""As a value in update_fields' changes: remove the property."""

# --- writing values --------------------------------------------------------------------------

_SCALAR_TYPES = (str, int, float, date, type(None))  # bool is an int, datetime a date
_ESCAPE = LazyPattern(f'[\\\\"{_UNPRINTABLE}]')
_ESCAPE_IN_SINGLE = LazyPattern(f"[{_UNPRINTABLE}]")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NOT_PLAIN = LazyPattern(f"[{_UNPRINTABLE}]|:\\s|:$|\\s#")
_NOT_PLAIN_IN_FLOW = re.compile(r"[,\[\]{}?]")  # pure-Python PyYAML also ends a flow scalar at '?'


@dataclass(frozen=True)
class _Style:
    """How an existing property was written, so that its new value is written the same way."""

    quote: str | None = None  # '"' or "'" when the old scalar was quoted
    decimals: int | None = None  # digits after the point of an old float such as 0.50
    block: str | None = None  # indentation before '- ' of an old block list
    comment: str = ""  # the old inline comment, from its '#'
    comment_col: int = 0  # where that '#' stood, so that aligned comments stay aligned
    gap: int = 0  # spaces that stood before it


def render_new(meta: dict[str, Any], body: str, newline: str = "\n") -> str:
    """The text of a new note in vaultmem's style: one `key: value` line a property, flow lists.

    Raises:
        InvalidValue: a value is not text, a number, a boolean, a date, None or a flat list of those.
    """
    if newline not in ("\n", "\r\n"):
        raise InvalidValue(f"newline must be '\\n' or '\\r\\n', not {newline!r}")
    for key, value in meta.items():
        _check(key, value)
    return f"---{newline}{_new_lines(meta, newline)}---{newline}{body}"


def _new_lines(meta: dict[str, Any], newline: str) -> str:
    """Property lines for new keys, in the given order."""
    return "".join([f"{_key(k)}: {_new_value(v)}{newline}" if v is not None else f"{_key(k)}:{newline}"
                    for k, v in meta.items()])


def _new_value(value: Any) -> str:
    """A new property's value (the plain style of _key_lines, without its general machinery:
    a batch renders a hundred thousand of these)."""
    if type(value) is str:
        return value if "[[" not in value and _plain_ok(value, False) else _double_quoted(value)
    if isinstance(value, list):
        return "[" + ", ".join([_scalar(v, flow=True) for v in value]) + "]"
    return _scalar(value, flow=False)


def _check(key: Any, value: Any) -> None:
    """Raise InvalidValue unless this property can be written as a flat Obsidian property."""
    if not isinstance(key, str):
        raise InvalidValue(f"property names must be text, not {key!r}")
    if len(key) > 1000:  # YAML cannot read a longer key on one line
        raise InvalidValue(f"property name {key[:20]!r}… is longer than 1000 characters")
    if type(value) is str:  # the common case, decided without a loop
        return
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, _SCALAR_TYPES):
            raise InvalidValue(f"property {key!r}: only text, numbers, booleans, dates, None and flat lists of "
                            f"those can be written, not {type(item).__name__}")


def _key_lines(key_text: str, value: Any, style: _Style, newline: str) -> list[str]:
    """The lines of one property, written in the given style."""
    if isinstance(value, list) and value and style.block is not None:
        items = [f"{style.block}- {_scalar(v, flow=False)}{newline}" for v in value]
        return [_with_comment(key_text + ":", style) + newline, *items]
    if value is None:
        text = ""
    elif isinstance(value, list):
        text = "[" + ", ".join(_scalar(v, flow=True) for v in value) + "]"
    else:
        text = _scalar(value, flow=False, quote=style.quote, decimals=style.decimals)
    line = f"{key_text}: {text}" if text else f"{key_text}:"
    return [_with_comment(line, style) + newline]


def _with_comment(line: str, style: _Style) -> str:
    """The line with the property's old inline comment, at its old column when there is room."""
    if not style.comment:
        return line
    return line + " " * max(style.comment_col - len(line), min(style.gap, 2)) + style.comment


def _key(name: str) -> str:
    """A property name as written: plain when YAML reads it back unchanged, else double-quoted."""
    return name if _plain_ok(name, flow=False) else _double_quoted(name)


def _scalar(value: Any, flow: bool, quote: str | None = None, decimals: int | None = None) -> str:
    """One scalar in YAML that reads back as the same value and type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value, decimals)
    if isinstance(value, datetime):
        return _datetime(value)
    if isinstance(value, date):
        return date.isoformat(value)
    return _string(value, flow, quote)


def _float(value: float, decimals: int | None) -> str:
    """A float, with `decimals` digits after the point when they hold it exactly (0.50 -> 0.60)."""
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    if decimals is not None:
        fixed = f"{value:.{decimals}f}"
        if float(fixed) == value:
            return fixed
    text = float.__repr__(value)
    if "e" in text and "." not in text:  # YAML 1.1 reads 1e+20 as text; 1.0e+20 is a float
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _datetime(value: datetime) -> str:
    """ISO 8601 with the offset kept; YAML timestamps only carry whole-minute offsets."""
    offset = value.utcoffset()
    if offset is not None and offset % timedelta(minutes=1):
        raise InvalidValue(f"{value.isoformat()}: a YAML timestamp's UTC offset must be whole minutes")
    return value.isoformat()


def _string(text: str, flow: bool, quote: str | None) -> str:
    """A string, plain when safe; wikilinks are always quoted, as Obsidian requires."""
    if quote == "'" and not _ESCAPE_IN_SINGLE.search(text):
        return "'" + text.replace("'", "''") + "'"
    if quote is None and "[[" not in text and _plain_ok(text, flow):
        return text
    return _double_quoted(text)


@lru_cache(maxsize=8192)  # tags, sources, types and namespaces repeat from note to note
def _plain_ok(text: str, flow: bool) -> bool:
    """Whether YAML reads `text` unquoted back as the same string."""
    if not text or text[0] in INDICATORS or text[0].isspace() or text[-1].isspace():
        return False
    if _NOT_PLAIN.search(text) or (flow and _NOT_PLAIN_IN_FLOW.search(text)):
        return False
    value = plain_value(text)
    return isinstance(value, str) if value is not ASK_YAML else yaml_tag(text) == STR_TAG


def _double_quoted(text: str) -> str:
    """A double-quoted YAML string with JSON-style escapes."""
    return '"' + _ESCAPE.sub(lambda m: _ESCAPES.get(m[0]) or f"\\u{ord(m[0]):04x}", text) + '"'


# --- editing ---------------------------------------------------------------------------------

_KEY_LINE = LazyPattern(
    r"""("(?:[^"\\\r\n]|\\.)*"|'(?:[^'\r\n]|'')*'"""
    r"""|(?:[^\s#'"?:,\[\]{}&*!|>%@`\-]|-(?=\S))(?:[^:\r\n]|:(?![ \t\r\n]))*?)[ \t]*:(?=[ \t\r\n]|$)"""
)
_SCALAR_END = {
    '"': re.compile(r'"(?:[^"\\]|\\.)*"'),
    "'": re.compile(r"'(?:[^']|'')*'"),
    "[": re.compile(r"""\[(?:[^\[\]"']|"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')*\]"""),
}
_COMMENT_TAIL = re.compile(r"([ \t]+)(#.*)")
_PLAIN_COMMENT = re.compile(r"[ \t]#")
_FIXED_POINT = re.compile(r"[-+]?\d+\.(\d+)")
_BLOCK_ITEM = re.compile(r"( *)-(?: |$)")


def update_fields(note: Note, changes: dict[str, Any]) -> str:
    """The note's whole new text; only the lines of properties whose value changes differ.

    Args:
        changes: property -> new value, or DELETE to remove it; equal values are left alone.
    Raises:
        InvalidValue: a value is not text, a number, a boolean, a date, None or a flat list of those.
        NoteFormatError: the frontmatter's layout is too unusual to change line by line.
    """
    effective = {k: v for k, v in changes.items() if _differs(note.meta, k, v)}
    for key, value in effective.items():  # an unchanged value, even a nested one, is not written
        if value is not DELETE:
            _check(key, value)
    if not effective:
        return note.text
    text = _edit(note, effective) if note.has_frontmatter else _prepend(note, effective)
    _verify(note, effective, text)
    return text


def _differs(meta: dict[str, Any], key: str, value: Any) -> bool:
    """Whether setting `key` to `value` changes the properties."""
    if value is DELETE:
        return key in meta
    return key not in meta or not _same(meta[key], value)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type (1, 1.0 and True differ; so do offsets of equal datetimes)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, datetime):
        return a == b and a.utcoffset() == b.utcoffset()
    if isinstance(a, float) and a != a:
        return b != b
    return bool(a == b)


def _prepend(note: Note, changes: dict[str, Any]) -> str:
    """A note without frontmatter, given one; the body stays as it was."""
    bom = _BOM if note.text.startswith(_BOM) else ""
    nl = note.newline
    return f"{bom}---{nl}{_new_lines(changes, nl)}---{nl}{note.text[len(bom):]}"


def _edit(note: Note, changes: dict[str, Any]) -> str:
    """The note with the changed properties' lines replaced, removed or appended."""
    start, end, _ = _split(note.text, note.path)  # type: ignore[misc]
    lines = _lines(note.text[start:end])
    spans = _key_spans(lines)  # (name, key as written, colon, first line, end line)
    plan: list[tuple[int, int, list[str]]] = []
    appended: list[str] = []
    for key, value in changes.items():
        found = [span for span in spans if span[0] == key]
        if value is DELETE:
            plan += [(first, last, []) for _, _, _, first, last in found]
        elif found:
            _, key_text, colon, first, last = found[-1]  # YAML keeps the last of duplicate keys
            ending = "\r\n" if lines[first].endswith("\r\n") else "\n"
            new = _key_lines(key_text, value, _style_of(lines[first:last], colon), ending)
            plan.append((first, last, new))
        else:
            appended += _key_lines(_key(key), value, _Style(), note.newline)
    for first, last, new in sorted(plan, reverse=True):  # from the end: earlier indexes stay valid
        lines[first:last] = new
    return note.text[:start] + "".join(lines + appended) + note.text[end:]


def _lines(text: str) -> list[str]:
    """Lines split at '\\n' only (YAML's other breaks stay inside their line), endings kept."""
    return [line + "\n" for line in text.split("\n")[:-1]]


def _key_spans(lines: list[str]) -> list[tuple[str, str, int, int, int]]:
    """Every top-level property: name, key as written, colon column, and its lines [first, end)."""
    spans, i = [], 0
    while i < len(lines):
        key = _KEY_LINE.match(lines[i])
        if key is None:
            i += 1
            continue
        colon = key.end() - 1
        end = _span_end(lines, i, colon)
        spans.append((_key_name(key[1]), lines[i][:colon], colon, i, end))
        i = end
    return spans


def _span_end(lines: list[str], start: int, colon: int) -> int:
    """One past the last line of the property on line `start`: its indented lines, `- item` lines
    after an empty value, and blank or comment lines only when more of it follows them."""
    value = lines[start][colon + 1:].strip(" \t\r\n")
    items_at_column_0 = not value or value.startswith("#")
    block_scalar = value[:1] in ("|", ">")  # its indented '#' lines are text, not comments
    last = start
    for i in range(start + 1, len(lines)):
        line = lines[i].rstrip("\r\n")
        if not line.strip(" \t"):
            continue
        if line[0] in " \t":
            if block_scalar or not line.lstrip(" \t").startswith("#"):
                last = i
        elif items_at_column_0 and _BLOCK_ITEM.match(line):
            last = i
        elif line[0] != "#":
            break
    return last + 1


def _key_name(raw: str) -> str:
    """The property name a key spells (quotes and escapes resolved)."""
    if raw[0] not in ("'", '"'):
        return raw
    import yaml

    try:
        return str(yaml.load(raw, Loader=_loader()))
    except yaml.YAMLError:
        return raw


def _style_of(lines: list[str], colon: int) -> _Style:
    """How the property on these lines is written: quotes, decimals, list layout, comment."""
    first = lines[0].rstrip("\r\n")
    after = first[colon + 1:]
    value = after.lstrip(" \t")
    end = _value_end(value)
    if end is None or (end and len(lines) > 1):  # a value over several lines: no comment to keep
        end, tail = len(value), ""
    else:
        tail = value[end:] if end else after
    comment = _COMMENT_TAIL.fullmatch(tail)
    core = value[:end]
    decimals = _FIXED_POINT.fullmatch(core)
    items = (_BLOCK_ITEM.match(line.rstrip("\r\n")) for line in lines[1:])
    block = next((m[1] for m in items if m), None) if not core else None
    quote, digits = (core[0] if core[:1] in ('"', "'") else None), (decimals and len(decimals[1]))
    if comment is None:
        return _Style(quote, digits, block)
    return _Style(quote, digits, block, comment[2], len(first) - len(comment[2]), len(comment[1]))


def _value_end(value: str) -> int | None:
    """Where a one-line value ends before its comment; None when it goes on past the line."""
    if not value or value[0] == "#":
        return 0
    if value[0] in _SCALAR_END:
        closed = _SCALAR_END[value[0]].match(value)
        return closed.end() if closed else None
    comment = _PLAIN_COMMENT.search(value)
    return len(value[: comment.start() if comment else len(value)].rstrip(" \t"))


def _verify(note: Note, changes: dict[str, Any], text: str) -> None:
    """Refuse an edit whose text would not read back as exactly the intended properties."""
    expected = {k: v for k, v in {**note.meta, **changes}.items() if v is not DELETE}
    try:
        edited = parse_note(text, note.path)
    except NoteFormatError:
        edited = None
    if edited is None or edited.body != note.body or not _same(edited.meta, expected):
        names = ", ".join(changes)
        problem = f"cannot change {names} line by line in this frontmatter's layout; edit the note by hand"
        raise NoteFormatError(note.path, None, problem)
