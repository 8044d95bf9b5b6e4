"""The note model: Markdown notes with YAML frontmatter, read without disturbing a byte.

A note is kept as its exact text. Properties are read with YAML's safe loader (or a fast path that
returns exactly what it would). Writing notes (a new one, or an edit of the lines of the properties
that change) is notes/writing.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

from vaultmem.errors import NoteFormatError
from vaultmem.notes.plainyaml import bounded, error_at, fast_meta, flow_too_deep, shallow
from vaultmem.text.terms import LazyPattern

__all__ = ["Note", "extract_inline_tags", "extract_links", "fast_meta", "has_frontmatter", "json_ready", "parse_note"]


_BOM = "\ufeff"
_NOT_TEXT = "not a UTF-8 text note (binary file?)"
_FM_FIRST_LINE = 2  # frontmatter starts on the line after the opening '---'
_OPEN = re.compile(r"\ufeff?---(?:\r?\n|$)")
_CLOSE = re.compile(r"\n(?:---|\.\.\.)\r?(?=\n|\Z)")  # a leading literal searches fast
# characters YAML refuses in a stream, or reads as line breaks; they are escaped when written
_UNPRINTABLE = "\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff"



# --- reading ---------------------------------------------------------------------------------


@cache
def _loader(libyaml: bool = True) -> Any:
    """YAML's safe loader (libyaml's unless told otherwise), except that a property name is always
    the key's own text, and bounded (plainyaml.bounded): a shared vault's notes are untrusted.

    Built on first need: importing YAML costs ~35 ms, more than a whole `remember`, and the
    fast path below reads every note vaultmem writes without it.
    """
    import yaml
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.nodes import ScalarNode

    base = yaml.CSafeLoader if libyaml and yaml.__with_libyaml__ else yaml.SafeLoader

    class Loader(bounded(base)):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
            # `2024:` or `yes:` must stay the property "2024"/"yes", as Obsidian shows it, not 2024/True
            self.flatten_mapping(node)
            mapping = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, ScalarNode):
                    raise ConstructorError(None, None, "a property name must be text", key_node.start_mark)
                mapping[key_node.value] = self.construct_object(value_node, deep=deep)
            return mapping

    # YAML 1.1 resolves a bare `=` or `<<` value to tags the safe loader cannot build; they are text
    Loader.add_constructor("tag:yaml.org,2002:value", SafeConstructor.construct_yaml_str)
    Loader.add_constructor("tag:yaml.org,2002:merge", SafeConstructor.construct_yaml_str)
    return Loader


@dataclass(frozen=True)
class Note:
    """One note: its exact text and parsed properties; render() gives the text back unchanged."""

    path: Path | None
    text: str
    meta: dict[str, Any]
    body: str
    newline: str
    has_frontmatter: bool
    body_offset: int

    def render(self) -> str:
        """The note's text, byte for byte as it was read."""
        return self.text

    @cached_property
    def tags(self) -> list[str]:
        """Tags from the `tags` property and inline #tags, as written, first occurrence first."""
        listed = [t.lstrip("#") for t in _listed(self.meta, ("tags", "tag"), split=True)]
        return _unique([*listed, *_inline_tags(self._prose)])

    @cached_property
    def aliases(self) -> list[str]:
        """Other names of the note, from `aliases` (or the legacy `alias`)."""
        return _unique(_listed(self.meta, ("aliases", "alias"), split=False))

    @cached_property
    def links(self) -> list[str]:
        """Wikilink targets in property values and the body (outside code), first occurrence first."""
        in_meta = _wikilinks("\n".join(s for s in _strings(self.meta.values()) if "[[" in s))
        return _unique([*in_meta, *_wikilinks(self._prose)])

    @cached_property
    def _prose(self) -> str:
        """The body with its code blanked out, shared by tags and links."""
        return _outside_code(self.body)


def parse_note(data: str | bytes, path: Path | str | None = None) -> Note:
    """Parse a note, keeping its exact text (BOM, newlines, missing final newline).

    Raises:
        NoteFormatError: not UTF-8 text, unclosed frontmatter, invalid YAML, or YAML that is not
            a mapping; `line` is the line in the file.
    """
    path = Path(path) if path is not None else None
    text = _decode(data, path)
    first_break = text.find("\n")
    newline = "\r\n" if first_break > 0 and text[first_break - 1] == "\r" else "\n"
    parts = _split(text, path)
    if parts is None:  # the body is all the text but a BOM, which is no content
        return Note(path, text, {}, text.removeprefix(_BOM), newline, False, 1)
    start, end, body_start = parts
    frontmatter = text[start:end]
    meta = fast_meta(frontmatter)
    if meta is None:
        meta = _load_yaml(frontmatter, path)
    body_offset = text.count("\n", 0, end) + 2
    return Note(path, text, meta, text[body_start:], newline, True, body_offset)


def _decode(data: str | bytes, path: Path | None) -> str:
    """The note's text; bytes are decoded as strict UTF-8 and a BOM is kept."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise NoteFormatError(path, None, _NOT_TEXT) from None
    if "\x00" in text:
        raise NoteFormatError(path, None, _NOT_TEXT)
    return text


def json_ready(value: Any) -> Any:
    """Properties as JSON holds them: times and dates in ISO 8601 as a note writes them, lists as lists,
    anything else YAML can build (bytes of a !!binary, a set) as text."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, date):  # a datetime is a date too
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def has_frontmatter(text: str) -> bool:
    """Whether a note's text opens a frontmatter block and closes it, as parse_note reads them."""
    opening = _OPEN.match(text)
    return opening is not None and _CLOSE.search(text, opening.end() - 1) is not None


def _split(text: str, path: Path | None) -> tuple[int, int, int] | None:
    """Where the frontmatter starts and ends and the body starts, or None without frontmatter."""
    opening = _OPEN.match(text)
    if opening is None:
        return None
    closing = _CLOSE.search(text, opening.end() - 1)
    if closing is None:
        raise NoteFormatError(path, 1, "the frontmatter opened by '---' is never closed by a '---' line")
    body_start = closing.end() + (1 if text.startswith("\n", closing.end()) else 0)
    return opening.end(), closing.start() + 1, body_start


def _load_yaml(frontmatter: str, path: Path | None) -> dict[str, Any]:
    """The frontmatter's properties, read by YAML's safe loader."""
    import yaml

    libyaml = shallow(frontmatter)
    if not libyaml and flow_too_deep(frontmatter):  # refused before PyYAML's scanner spends minutes on it
        raise NoteFormatError(path, None, "invalid YAML in the frontmatter: values nested too deep")
    try:
        data = yaml.load(frontmatter, Loader=_loader(libyaml))
    except yaml.YAMLError as exc:
        problem, line = error_at(exc, frontmatter)
        line = None if line is None else _FM_FIRST_LINE + line
        raise NoteFormatError(path, line, f"invalid YAML in the frontmatter: {problem}") from None
    except ValueError as exc:  # e.g. 2024-02-30 resolves to a date that cannot exist
        raise NoteFormatError(path, None, f"invalid value in the frontmatter: {exc}") from None
    except RecursionError:  # PyYAML's composer recurses once per level (plainyaml.shallow)
        raise NoteFormatError(path, None, "invalid YAML in the frontmatter: values nested too deep") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = "list" if isinstance(data, list) else "single value"
        problem = f"the frontmatter must be `key: value` properties, not a {kind}"
        raise NoteFormatError(path, _FM_FIRST_LINE, problem)
    return data


# --- tags and links --------------------------------------------------------------------------

# \w plus the combining marks it leaves out, so Hindi, Thai or Hebrew tags stay whole
_TAG_CHARS = (
    r"\w/\-\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
    r"\u0900-\u0dff\u0e00-\u0eff\u1ab0-\u1aff\u1dc0-\u1dff\u200c\u200d\u20d0-\u20ff\u3099\u309a"
    r"\ufe00-\ufe0f\ufe20-\ufe2f"
)
_INLINE_TAG = LazyPattern(rf"#(?<!\S#)([{_TAG_CHARS}]+)")  # '#' first: a fast literal scan
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_TAG_SPLIT = re.compile(r"[,\s]+")
_LINE_BREAK = re.compile(r"(\r\n?|\n)")  # as markdown-it counts lines
_CODE_SPAN = LazyPattern(r"(?<![`\\])(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
_FENCE = re.compile("```|~~~")


@lru_cache(maxsize=1)
def _markdown():
    """The block parser, made on first use: most notes have no fenced code and never need it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])  # block structure is enough


def extract_inline_tags(body: str) -> list[str]:
    """Inline #tags of a Markdown body (not in code, URLs or headings), as written, unique."""
    return _inline_tags(_outside_code(body))


def extract_links(text: str) -> list[str]:
    """Targets of [[wikilinks]] and ![[embeds]] in Markdown text, outside code, unique."""
    return _unique(_wikilinks(_outside_code(text)))


def _inline_tags(prose: str) -> list[str]:
    """Inline tags of text whose code is already blanked out; a tag needs one non-digit."""
    return _unique(t for t in _INLINE_TAG.findall(prose) if not t.isdigit())


def _wikilinks(text: str) -> list[str]:
    """Link targets: `[[T#h|a]]` -> "T"; a same-note `[[#h]]` has none."""
    targets = []
    for inner in _WIKILINK.findall(text):
        # `\|` is how a link inside a Markdown table escapes its alias bar
        target = inner.split("|", 1)[0].split("#", 1)[0].rstrip("\\").strip()
        if target:
            targets.append(target)
    return targets


def _outside_code(text: str) -> str:
    """The text with code blocks and code spans blanked out (same length and line breaks)."""
    if "`" not in text and "~~~" not in text:
        return text
    parts = _LINE_BREAK.split(text)
    lines = parts[0::2]
    # markdown-it is far too slow to run on every note: only a fence needs its block structure
    blocks = _markdown_blocks(text) if _FENCE.search(text) else _paragraphs(lines)
    for first, last, is_code in blocks:
        if is_code:
            lines[first:last] = [_blank(line) for line in lines[first:last]]
        else:
            paragraph = _CODE_SPAN.sub(lambda m: _blank(m[0]), "\n".join(lines[first:last]))
            lines[first:last] = paragraph.split("\n")
    parts[0::2] = lines
    return "".join(parts)


def _markdown_blocks(text: str) -> Iterator[tuple[int, int, bool]]:
    """Line ranges of code blocks (True) and of text that may hold code spans (False)."""
    for token in _markdown().parse(text):
        if token.map is not None and token.type in ("fence", "code_block", "inline"):
            yield token.map[0], token.map[1], token.type != "inline"


def _paragraphs(lines: list[str]) -> Iterator[tuple[int, int, bool]]:
    """Line ranges of blank-line separated paragraphs, none of them code."""
    blank = [i for i, line in enumerate(lines) if not line.strip()]
    for first, last in zip([-1, *blank], [*blank, len(lines)]):
        if last > first + 1:
            yield first + 1, last, False


def _blank(text: str) -> str:
    """Replace all but line breaks by NUL, which no tag or link can contain or follow."""
    return re.sub(r"[^\n]", "\x00", text)


def _listed(meta: dict[str, Any], keys: tuple[str, ...], split: bool) -> list[str]:
    """The text items of list-or-string properties such as `tags` or `aliases`."""
    items: list[str] = []
    for key in keys:
        value = meta.get(key)
        if isinstance(value, str):
            items += _TAG_SPLIT.split(value) if split else [value]
        elif isinstance(value, list):
            items += [str(v) for v in value if v is not None and not isinstance(v, (list, dict))]
        elif value is not None and not isinstance(value, dict):
            items.append(str(value))
    return [item.strip() for item in items if item.strip(" #")]


def _strings(values: Iterable[Any]) -> Iterable[str]:
    """Every string inside property values, nested lists and mappings included."""
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from _strings(value)
        elif isinstance(value, dict):
            yield from _strings(value.values())


def _unique(items: Iterable[str]) -> list[str]:
    """Items without repeats, in first-seen order."""
    return list(dict.fromkeys(items))
