"""The note model: golden notes, errors, tags and links, rendering, line-preserving edits."""

from __future__ import annotations

import difflib
import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem.errors import NoteFormatError, VaultmemError
from vaultmem.notes.note import extract_inline_tags, extract_links, fast_meta, parse_note
from vaultmem.notes.writing import DELETE, render_new, update_fields
from vaultmem.notes.note import _loader  # the YAML loader parse_note falls back to: the fast path's reference

_Loader = _loader()

GOLDEN = Path(__file__).parent / "golden"
NAMES = sorted(p.name[:-3] for p in GOLDEN.glob("*.md") if not p.name.endswith(".edited.md"))

# the documented change behind each <name>.edited.md
EDITS = {
    "vaultmem-style": {
        "status": "superseded",
        "score": 8.5,
        "tags": ["contract", "client_zhangsan", "archived-2026"],
        "confidence": 0.95,
        "trust": "user",  # unchanged: its line must not move
        "namespace": DELETE,
        "superseded_by": "[[客户张三合同编号 CT2024-0999]]",
    },
    "obsidian-properties-ui": {
        "score": 8.5,
        "tags": ["preference", "editor/vim", "reviewed"],
        "related": ["[[张三]]"],
        "status": "superseded",
        "pinned": True,
        "reviewed": date(2026, 12, 1),
    },
    "comments-and-unknown-keys": {
        "score": 0.6,
        "flag": True,  # unchanged, and spelled `yes`: stays `yes`
        "quoted": "changed",
        "single": "still 'single'",
        "tags": ["deploy", "ops", "done"],
        "status": "superseded",
        "notes": DELETE,
        "new_key": "value: with colon",
    },
    "crlf": {"score": 7.5, "tags": ["windows"], "added": True},
    "cjk": {"tags": ["客户", "偏好", "茶"], "来源": "[[张三|张先生]]", "score": 5},
    "no-trailing-newline": {"status": "archived"},
    "bom": {"title": "Still a BOM"},
    "no-frontmatter": {"type": "event", "tags": ["planning"]},
    "empty-frontmatter": {"id": "x"},
}


def jsonable(value):
    """Meta as the golden JSON spells it: dates and datetimes as ISO strings."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def typed(value):
    """A value with every type made explicit, so 1, 1.0 and True (or two offsets) differ."""
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: typed(v) for k, v in value.items()})
    if isinstance(value, (date, float)):
        return (type(value).__name__, value.isoformat() if isinstance(value, date) else repr(value))
    return (type(value).__name__, value)


def owner_keys(lines: list[str]) -> list[str | None]:
    """For each line of a note: "---", "body", the top-level key it belongs to, or None for a
    column-0 comment or blank line inside the frontmatter (it belongs to no key)."""
    owners: list[str | None] = []
    key, inside = None, False
    for i, line in enumerate(lines):
        bare = line.rstrip("\r\n").lstrip("\ufeff" if i == 0 else "")
        if (i == 0 and bare == "---") or (inside and bare in ("---", "...")):
            inside = i == 0
            owners.append("---")
        elif not inside:
            owners.append("body")
        elif not bare.strip() or bare.startswith("#"):
            owners.append(None)
        else:
            match = re.match(r"""("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"-](?:[^:]|:(?=\S))*?)\s*:(\s|$)""", bare)
            if match:
                key = yaml.safe_load(match[1]) if match[1][0] in "\"'" else match[1]
            owners.append(key)
    return owners


def changed_keys(before: str, after: str) -> set[str | None]:
    """The owners of every line difflib finds removed or added between two texts."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    old_owner, new_owner = owner_keys(old), owner_keys(new)
    touched: set[str | None] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            touched.update(old_owner[i1:i2], new_owner[j1:j2])
    return touched


def lines_by_key(text: str) -> dict[str | None, list[str]]:
    """Each key's own lines (and the keyless lines under None), in order."""
    lines = text.splitlines(keepends=True)
    grouped: dict[str | None, list[str]] = {}
    for owner, line in zip(owner_keys(lines), lines):
        grouped.setdefault(owner, []).append(line)
    return grouped


# --- golden notes ----------------------------------------------------------------------------


def test_there_are_enough_golden_notes():
    assert len(NAMES) >= 8 and set(NAMES) == set(EDITS)
    assert (GOLDEN / ".gitattributes").read_text().splitlines()[-1] == "* -text"


@pytest.mark.parametrize("name", NAMES)
def test_golden_parse(name):
    data = (GOLDEN / f"{name}.md").read_bytes()
    expected = json.loads((GOLDEN / f"{name}.result.json").read_text(encoding="utf-8"))
    note = parse_note(data, GOLDEN / f"{name}.md")
    assert jsonable(note.meta) == expected["meta"]
    assert list(note.meta) == list(expected["meta"])  # key order as written
    assert {k: type(v).__name__ for k, v in note.meta.items()} == expected["types"]
    assert note.tags == expected["tags"]
    assert note.links == expected["links"]
    assert note.aliases == expected["aliases"]
    assert note.body == expected["body"]
    assert note.render().encode("utf-8") == data


@pytest.mark.parametrize("name", NAMES)
def test_golden_edit_changes_only_the_changed_keys_lines(name):
    data = (GOLDEN / f"{name}.md").read_bytes()
    note = parse_note(data)
    edited = update_fields(note, EDITS[name])
    assert edited.encode("utf-8") == (GOLDEN / f"{name}.edited.md").read_bytes()
    changes = EDITS[name]
    expected = {k: v for k, v in {**note.meta, **changes}.items() if v is not DELETE}
    assert typed(parse_note(edited).meta) == typed(expected)
    assert parse_note(edited).body == note.body
    touched = changed_keys(note.text, edited)
    if not note.has_frontmatter:
        touched.discard("---")  # the new frontmatter's delimiters
    assert touched <= {k for k, v in changes.items() if not _same_value(note.meta, k, v)}


def _same_value(meta, key, value):
    """Whether the change leaves the key as it was."""
    return key in meta and typed(meta[key]) == typed(value)


@pytest.mark.parametrize("name", NAMES)
def test_golden_untouched_round_trip(name):
    note = parse_note((GOLDEN / f"{name}.md").read_bytes())
    assert update_fields(note, {}) == note.text
    assert update_fields(note, dict(note.meta)) == note.text  # same values: nothing to rewrite


def test_crlf_and_bom_are_detected():
    crlf = parse_note((GOLDEN / "crlf.md").read_bytes())
    assert crlf.newline == "\r\n" and crlf.body_offset == 8
    bom = parse_note((GOLDEN / "bom.md").read_bytes())
    assert bom.has_frontmatter and bom.text.startswith("\ufeff") and bom.body_offset == 5
    assert parse_note((GOLDEN / "no-frontmatter.md").read_bytes()).body_offset == 1


# --- errors ----------------------------------------------------------------------------------


def test_broken_yaml_reports_the_file_line_and_path():
    text = "---\nid: a\ntitle: ok\nbad: x: y\nscore: 1\n---\nbody\n"
    with pytest.raises(NoteFormatError) as err:
        parse_note(text, "memories/broken.md")
    assert err.value.line == 4
    assert "memories/broken.md" in str(err.value) and "line 4" in str(err.value)


def test_broken_yaml_in_a_crlf_note_with_a_bom():
    text = "\ufeff---\r\nid: a\r\n\r\nbad: x: y\r\n---\r\nbody\r\n"
    with pytest.raises(NoteFormatError) as err:
        parse_note(text.encode("utf-8"), "n.md")
    assert err.value.line == 4


def test_tab_indentation_error_line():
    with pytest.raises(NoteFormatError) as err:
        parse_note("---\na: 1\nb: 2\nc:\n\t- x\n---\n")
    assert err.value.line == 5


def test_unprintable_character_in_frontmatter_has_a_line():
    with pytest.raises(NoteFormatError) as err:
        parse_note("---\na: 1\nb: \x01\n---\n")
    assert err.value.line == 3


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"---\nid: \xff\xfe\n---\n", "text\x00more"])
def test_binary_is_not_a_note(data):
    with pytest.raises(NoteFormatError) as err:
        parse_note(data, "x.png")
    assert err.value.problem == "not a UTF-8 text note (binary file?)" and err.value.line is None


@pytest.mark.parametrize("text", ["---\nid: x\nbody without end\n", "---\r\nid: x\r\n", "---"])
def test_unclosed_frontmatter(text):
    with pytest.raises(NoteFormatError) as err:
        parse_note(text, "n.md")
    assert err.value.line == 1


@pytest.mark.parametrize("frontmatter", ["- a\n- b\n", "just text\n", "42\n", "[a, b]\n"])
def test_frontmatter_must_be_a_mapping(frontmatter):
    with pytest.raises(NoteFormatError) as err:
        parse_note(f"---\n{frontmatter}---\nbody\n")
    assert err.value.line == 2


@pytest.mark.parametrize("frontmatter", ["when: 2024-02-30\n", "? [a, b]\n: c\n", "a: !!python/object:os.system x\n"])
def test_values_yaml_cannot_build_are_format_errors(frontmatter):
    with pytest.raises(NoteFormatError):
        parse_note(f"---\n{frontmatter}---\n")


def test_frontmatter_details():
    assert parse_note("---\n---\nx").meta == {}
    assert parse_note("---\n# only a comment\n\n---\n").meta == {}
    closed_by_dots = parse_note("---\na: 1\n...\nbody")
    assert closed_by_dots.meta == {"a": 1} and closed_by_dots.body == "body"
    at_eof = parse_note("---\na: 1\n---")
    assert at_eof.meta == {"a": 1} and at_eof.body == "" and at_eof.render() == "---\na: 1\n---"
    assert parse_note("---\na: 1\na: 2\n---\n").meta == {"a": 2}  # YAML keeps the last
    assert not parse_note(" ---\na: 1\n---\n").has_frontmatter
    assert not parse_note("--- \na: 1\n---\n").has_frontmatter
    assert parse_note("---\n2024: x\nyes: y\nnull: z\n---\n").meta == {"2024": "x", "yes": "y", "null": "z"}
    assert parse_note("---\nop: =\n---\n").meta == {"op": "="}


# --- tags, links, aliases --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "tags"),
    [
        ("#start and #end", ["start", "end"]),
        ("# Heading\n## Sub #real", ["real"]),
        ("x#no a#b #yes", ["yes"]),
        ("http://x.org/#frag https://y/p#q", []),
        ("#123 #1984 #y1984 #2024-q1 #1_000", ["y1984", "2024-q1", "1_000"]),
        ("#a/b/c #a-b_c #tag. #tag, (#no)", ["a/b/c", "a-b_c", "tag"]),
        ("#客户/张三 #乌龙茶，真好 喝#茶", ["客户/张三", "乌龙茶"]),
        ("#हिन्दी #ไทย", ["हिन्दी", "ไทย"]),
        ("`#code` #out ``#a ` #b`` #c", ["out", "c"]),
        ("```\n#fenced\n```\n#after\n~~~\n#tilde\n~~~\n", ["after"]),
        ("- item #x\n  ```python\n  #in-list-fence\n  ```\n> quote #q", ["x", "q"]),
        ("\\#escaped &#35; #ok", ["ok"]),
        ("#dup #dup #Dup", ["dup", "Dup"]),
        ("tab\t#tab ideographic\u3000#space", ["tab", "space"]),
    ],
)
def test_inline_tags(body, tags):
    assert extract_inline_tags(body) == tags


def test_tags_from_properties():
    note = parse_note("---\ntags: 'alpha, #beta gamma'\ntag: [legacy, 2024]\n---\n#alpha #body\n")
    assert note.tags == ["alpha", "beta", "gamma", "legacy", "2024", "body"]
    assert parse_note("---\ntags:\n---\n").tags == []


@pytest.mark.parametrize(
    ("text", "links"),
    [
        ("[[Target]] [[Target|alias]] [[Other#Heading]] [[Third#^block|x]]", ["Target", "Other", "Third"]),
        ("![[image.png]] and ![[Note#Section]]", ["image.png", "Note"]),
        ("[[#Local heading]] [[ spaced ]] [[a]] [[a]]", ["spaced", "a"]),
        ("| a | [[Table link\\|alias]] |", ["Table link"]),
        ("`[[code]]` [[real]]\n```\n[[fenced]]\n```\n", ["real"]),
        ("[[folder/Note.md]] [[张三|张先生]]", ["folder/Note.md", "张三"]),
        ("[[broken\nlink]] [not] [[]]", []),
    ],
)
def test_links(text, links):
    assert extract_links(text) == links


def test_links_in_properties_and_body():
    text = '---\nsupersedes: "[[Old]]"\nrelated: ["[[A|a]]", plain, "[[B#h]]"]\n---\n[[A]] `[[Code]]` [[C]]\n'
    note = parse_note(text)
    assert note.links == ["Old", "A", "B", "C"]


def test_aliases():
    assert parse_note("---\naliases: [Zhang San, 张三]\n---\n").aliases == ["Zhang San", "张三"]
    assert parse_note("---\naliases: Zhang, San\n---\n").aliases == ["Zhang, San"]
    assert parse_note("---\nalias: Legacy\n---\n").aliases == ["Legacy"]
    assert parse_note("---\naliases:\n---\n").aliases == []


# --- rendering -------------------------------------------------------------------------------

UTC8 = timezone(timedelta(hours=8))


def test_render_new_writes_vaultmem_style():
    meta = {
        "id": "01JDX3K8Q4W2M9ZC6T7B5N0H1A",
        "type": "contract_id",
        "score": 7.0,
        "confidence": 0.9,
        "timestamp": datetime(2026, 11, 29, 14, 2, 11, tzinfo=UTC8),
        "day": date(2026, 11, 29),
        "tags": ["contract", "client_zhangsan"],
        "supersedes": "[[客户张三合同编号 CT2024-0771]]",
        "version": ["laptop-3f2a:3"],
        "pinned": False,
        "note": None,
        "empty": "",
        "looks_like_bool": "yes",
        "looks_like_number": "0.50",
        "colon": "a: b",
        "comment": "a #b",
        "items": ["a, b", "[[X]]", 3, None, True],
        "big": 1e20,
        "my key": 1,
        "2024": "year",
    }
    expected = (
        "---\n"
        "id: 01JDX3K8Q4W2M9ZC6T7B5N0H1A\n"
        "type: contract_id\n"
        "score: 7.0\n"
        "confidence: 0.9\n"
        "timestamp: 2026-11-29T14:02:11+08:00\n"
        "day: 2026-11-29\n"
        "tags: [contract, client_zhangsan]\n"
        'supersedes: "[[客户张三合同编号 CT2024-0771]]"\n'
        "version: [laptop-3f2a:3]\n"
        "pinned: false\n"
        "note:\n"
        'empty: ""\n'
        'looks_like_bool: "yes"\n'
        'looks_like_number: "0.50"\n'
        'colon: "a: b"\n'
        'comment: "a #b"\n'
        'items: ["a, b", "[[X]]", 3, null, true]\n'
        "big: 1.0e+20\n"
        "my key: 1\n"
        '"2024": year\n'
        "---\n"
        "客户 [[张三]] 的合同编号是 CT2024-0876。\n"
    )
    body = "客户 [[张三]] 的合同编号是 CT2024-0876。\n"
    assert render_new(meta, body) == expected
    assert typed(parse_note(expected).meta) == typed(meta)


def test_render_new_crlf_and_escapes():
    text = render_new({"a": "line\nbreak\t\"q\" \\ \x85\u2028"}, "body\r\n", newline="\r\n")
    assert text == '---\r\na: "line\\nbreak\\t\\"q\\" \\\\ \\u0085\\u2028"\r\n---\r\nbody\r\n'
    assert parse_note(text).meta == {"a": "line\nbreak\t\"q\" \\ \x85\u2028"}


@pytest.mark.parametrize("value", [{"a": 1}, [[1]], {1, 2}, (1, 2), object(), b"bytes", [{"a": 1}]])
def test_only_flat_values_can_be_written(value):
    with pytest.raises(VaultmemError):
        render_new({"k": value}, "")
    with pytest.raises(VaultmemError):
        update_fields(parse_note("---\nk: 1\n---\n"), {"k": value})


def test_property_names_must_be_text():
    with pytest.raises(VaultmemError):
        render_new({1: "x"}, "")


def test_sub_minute_utc_offsets_are_refused():
    odd = datetime(2024, 1, 1, tzinfo=timezone(timedelta(seconds=30)))
    with pytest.raises(VaultmemError):
        render_new({"t": odd}, "")


# --- editing ---------------------------------------------------------------------------------


def test_edit_keeps_comment_before_the_next_key_when_deleting():
    text = "---\na: 1\n  # indented note on a\n\n# about b\nb: 2\n---\n"
    # an indented comment after a key may be about anything: it is kept, never lost
    assert update_fields(parse_note(text), {"a": DELETE}) == "---\n  # indented note on a\n\n# about b\nb: 2\n---\n"


def test_edit_block_list_with_comments_inside():
    text = "---\ntags:\n# first\n  - a\n  # second\n  - b\nnext: 1\n---\n"
    edited = update_fields(parse_note(text), {"tags": ["c"]})
    assert edited == "---\ntags:\n  - c\nnext: 1\n---\n"


def test_edit_keeps_styles():
    text = "---\ns: 'single'\nd: \"double\"\nf: [a]\nb:\n    - x\nn: 7.000\ne: []\n---\n"
    changes = {"s": "it's", "d": "new", "f": ["x", "y z"], "b": ["y", "[[L]]"], "n": 7.25, "e": ["q"]}
    edited = update_fields(parse_note(text), changes)
    assert edited == "---\ns: 'it''s'\nd: \"new\"\nf: [x, y z]\nb:\n    - y\n    - \"[[L]]\"\nn: 7.250\ne: [q]\n---\n"


def test_edit_changes_type_and_shape():
    text = "---\na: 1\nb:\n  - x\nc: [1, 2]\nd: 0.5\ne: \"7\"\n---\n"
    changes = {"a": True, "b": [], "c": "scalar", "d": 1e-7, "e": 7}
    edited = update_fields(parse_note(text), changes)
    assert edited == "---\na: true\nb: []\nc: scalar\nd: 1.0e-07\ne: 7\n---\n"
    assert typed(parse_note(edited).meta) == typed(changes)


def test_edit_comment_on_a_key_with_a_block_list_and_a_null():
    text = "---\ntags:  # kept\n  - a\nowner:   # who\n---\n"
    edited = update_fields(parse_note(text), {"tags": ["b", "c"], "owner": "me"})
    assert edited == "---\ntags:  # kept\n  - b\n  - c\nowner: me  # who\n---\n"


def test_edit_quoted_and_duplicate_keys():
    text = "---\n\"my key\": 1\n'it''s': 2\ndup: first\ndup: second\n---\n"
    edited = update_fields(parse_note(text), {"my key": 10, "it's": DELETE, "dup": "third"})
    assert edited == "---\n\"my key\": 10\ndup: first\ndup: third\n---\n"
    assert update_fields(parse_note(text), {"dup": DELETE}) == "---\n\"my key\": 1\n'it''s': 2\n---\n"


def test_edit_without_frontmatter_keeps_bom_and_newlines():
    text = "\ufeffTitle\r\n\r\nBody #x"
    edited = update_fields(parse_note(text), {"id": "n1", "gone": DELETE})
    assert edited == "\ufeff---\r\nid: n1\r\n---\r\nTitle\r\n\r\nBody #x"
    assert update_fields(parse_note(text), {"gone": DELETE}) == text


def test_edit_distinguishes_equal_values_of_other_types():
    note = parse_note("---\nflag: 1\nwhen: 2024-01-01T10:00:00+08:00\n---\n")
    same_instant = datetime(2024, 1, 1, 2, 0, tzinfo=timezone.utc)
    edited = update_fields(note, {"flag": True, "when": same_instant})
    assert edited == "---\nflag: true\nwhen: 2024-01-01T02:00:00+00:00\n---\n"


def test_edit_compares_list_items_by_type():
    assert update_fields(parse_note("---\na: [1, 0]\n---\n"), {"a": [True, False]}) == "---\na: [true, false]\n---\n"
    assert update_fields(parse_note("---\na: [1, 0]\n---\n"), {"a": [1, 0]}) == "---\na: [1, 0]\n---\n"


def test_special_floats_round_trip():
    text = render_new({"n": float("nan"), "i": float("inf"), "m": float("-inf"), "z": -0.0}, "")
    assert text == "---\nn: .nan\ni: .inf\nm: -.inf\nz: -0.0\n---\n"
    meta = parse_note(text).meta
    assert meta["n"] != meta["n"] and meta["i"] == float("inf") and meta["m"] == float("-inf")
    assert update_fields(parse_note(text), {"n": float("nan")}) == text


def test_edit_refuses_layouts_it_cannot_change_line_by_line():
    note = parse_note("---\n{a: 1, b: 2}\n---\nbody\n")
    assert note.meta == {"a": 1, "b": 2}
    with pytest.raises(NoteFormatError) as err:
        update_fields(note, {"c": 3})
    assert "by hand" in str(err.value)


def test_block_scalar_with_hash_lines_is_replaced_whole():
    text = "---\nnotes: |\n  text\n  # still text\nafter: 1\n---\n"
    assert update_fields(parse_note(text), {"notes": "short"}) == "---\nnotes: short\nafter: 1\n---\n"


# --- property tests --------------------------------------------------------------------------

_OFFSETS = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
_SCALARS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["yes", "No", "~", "null", "1_000", "0x1F", "1:30", "2024-01-05", "[[A|b]]", "- x", "a: b", "#x"])
    | st.text(alphabet="ab :#-[]{},'\"!&*|>%@`?~.", max_size=6),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.dates(),
    st.datetimes(timezones=st.none() | _OFFSETS),
)
_VALUES = _SCALARS | st.lists(_SCALARS, max_size=4)
_KEYS = st.text(min_size=0, max_size=12) | st.sampled_from(["tags", "score", "status", "yes", "2024", "a b", "<<", "="])
_META = st.dictionaries(_KEYS, _VALUES, max_size=6)
_TEXT_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")  # what a file can hold
_BODIES = st.text(alphabet=_TEXT_CHARS, max_size=40)


@settings(max_examples=300, deadline=None)
@given(meta=_META, body=_BODIES, newline=st.sampled_from(["\n", "\r\n"]))
def test_render_new_round_trips(meta, body, newline):
    text = render_new(meta, body, newline)
    note = parse_note(text)
    assert typed(note.meta) == typed(meta) and list(note.meta) == list(meta)
    assert note.body == body and note.render() == text
    frontmatter = text[3 + len(newline):text.rindex(f"---{newline}")]
    assert typed(yaml.load(frontmatter, Loader=yaml.SafeLoader) or {}) == typed(meta)  # pure-Python PyYAML too


_STYLED_NOTES = [(GOLDEN / f"{name}.md").read_text(encoding="utf-8") for name in NAMES] + [
    "---\ntags:\n- a\n- b\n# c\nscore: 0.50 # s\nq: 'x'\nd: \"y\"\n---\nbody",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(_STYLED_NOTES) | st.builds(render_new, _META, _BODIES, st.sampled_from(["\n", "\r\n"])),
    extra=_META,
    picks=st.lists(st.tuples(st.integers(min_value=0, max_value=30), _VALUES | st.just(DELETE)), max_size=5),
)
def test_update_fields_round_trips(base, extra, picks):
    note = parse_note(base)
    keys = list(note.meta)
    changes = dict(extra)
    for index, value in picks:
        if keys:
            changes[keys[index % len(keys)]] = value
    edited = update_fields(note, changes)
    expected = {k: v for k, v in {**note.meta, **changes}.items() if v is not DELETE}
    again = parse_note(edited)
    assert typed(again.meta) == typed(expected)
    assert list(again.meta) == list(expected)  # old keys keep their place; new ones follow in order
    assert again.body == note.body
    before, after = lines_by_key(note.text), lines_by_key(edited)
    for key in note.meta:
        if key not in changes:
            assert after[key] == before[key]
    assert after.get("body") == before.get("body")


_FM_WORD = st.text(alphabet=list("abXY019 -_.:#,'\"[]{}~!&*|>%@`?/=<+\\\t") + ["é", "中"], max_size=8)
_FM_SCALAR = _FM_WORD | st.sampled_from(
    ["yes", "Off", "~", "NULL", "1_000", "0x1F", "017", "1:30", "-1.5", "+.inf", ".NaN", "2024-01-05", "2024-1-5",
     "2024-01-05T10:00:00Z", "2024-01-05 10:00:00.5 +08:00", "2024-02-30", "1e3", "1.0e+3", "=", "<<", "a:b", "-x",
     "- x"]
)
_FM_VALUE = st.one_of(
    _FM_SCALAR,
    _FM_WORD.map(lambda w: f'"{w}"'),
    _FM_WORD.map(lambda w: f"'{w}'"),
    st.lists(_FM_SCALAR | _FM_WORD.map(lambda w: f'"{w}"'), max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
)
_FM_LINE = st.one_of(
    st.tuples(
        st.sampled_from(["id", "tags", "a b", "y", "2024", "x.y", "key-1", "标签"]),
        st.sampled_from([": ", ":", ":  ", " : "]),
        _FM_VALUE | st.just(""),
        st.sampled_from(["", "  # c", " #c", "#c", "   "]),
    ).map("".join),
    st.sampled_from(["", "# comment", "  # indented", "   "]),
    st.tuples(st.sampled_from(["- ", "  - ", "-", "    - "]), _FM_SCALAR | _FM_WORD.map(lambda w: f'"{w}"'))
    .map("".join),
)


@settings(max_examples=1000, deadline=None)
@given(lines=st.lists(_FM_LINE, max_size=6), crlf=st.booleans())
def test_fast_path_reads_exactly_what_yaml_reads(lines, crlf):
    frontmatter = "".join(line + ("\r\n" if crlf else "\n") for line in lines)
    fast = fast_meta(frontmatter)
    try:
        slow = yaml.load(frontmatter, Loader=_Loader)
    except (yaml.YAMLError, ValueError):
        assert fast is None
        return
    if fast is not None:
        assert typed(fast) == typed({} if slow is None else slow)
        yaml.load(frontmatter, Loader=yaml.SafeLoader)  # pure-Python PyYAML reads it too


_SIMPLE_WORD = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9 _./-]{0,10}[A-Za-z0-9_]|[A-Za-z_]", fullmatch=True)
_SIMPLE_SCALAR = _SIMPLE_WORD | st.integers().map(str) | st.floats(allow_nan=False).map(repr) | st.dates().map(str)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True), min_size=1, max_size=8),
    values=st.lists(
        st.one_of(
            _SIMPLE_SCALAR,
            _SIMPLE_WORD.map(lambda w: f'"{w}"'),
            st.lists(_SIMPLE_SCALAR, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
            st.lists(_SIMPLE_SCALAR, min_size=1, max_size=3).map(lambda items: "".join(f"\n  - {i}" for i in items)),
        ),
        min_size=8,
        max_size=8,
    ),
    comment=st.booleans(),
)
def test_fast_path_takes_well_formed_frontmatter(keys, values, comment):
    block = [v.startswith("\n") for v in values]
    frontmatter = "".join(f"{k}:{v}\n" if b else f"{k}: {v}{'  # note' if comment else ''}\n"
                          for k, v, b in zip(keys, values, block))
    fast = fast_meta(frontmatter)
    assert fast is not None
    assert typed(fast) == typed(yaml.load(frontmatter, Loader=_Loader))


def test_fast_path_takes_common_notes():
    assert fast_meta((GOLDEN / "vaultmem-style.md").read_text(encoding="utf-8").split("---\n")[1]) is not None
    obsidian = (GOLDEN / "obsidian-properties-ui.md").read_text(encoding="utf-8").split("---\n")[1]
    assert fast_meta(obsidian) == parse_note(f"---\n{obsidian}---\n").meta
    assert fast_meta("a:\n  nested: 1\n") is None
    assert fast_meta("a: b\n  continued\n") is None
    assert fast_meta("a:\n  - x\n - y\n") is None


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=_TEXT_CHARS, max_size=60), framed=st.booleans())
def test_any_text_renders_back_unchanged(text, framed):
    source = f"---\n{text}\n---\n{text}" if framed else text
    try:
        note = parse_note(source)
    except NoteFormatError:
        return
    assert note.render() == source
    assert parse_note(source.encode("utf-8")).render().encode("utf-8") == source.encode("utf-8")
    assert update_fields(note, {}) == source
    _ = (note.tags, note.links, note.aliases)  # computing them never raises


_PLAIN_TRICKY = [
    "0", "-0", "00", "+1", "-12", "1_000", "0x1F", "0b101", "017", "1:30", "190:20:30", "-1.5", "1.", ".5", "1e3",
    "1.0e+3", "6.8523015e+5", "+.inf", "-.Inf", ".NaN", ".nan", "2024-01-05", "2024-1-5", "2024-02-30",
    "2024-01-05T10:00:00Z", "2024-01-05t10:00:00Z", "2024-01-05T10:00:00", "2024-01-05T10:00:00.5+08:00",
    "2024-01-05T10:00:00.1234567Z", "2024-01-05 10:00:00 +08:00", "2024-01-05T10:00:00-00:00",
    "2024-01-05T10:00:00+8", "2024-01-05T25:00:00Z", "2024年8月15日", "3 apples", "12-ab", "1.5.2", "yes", "Yes",
    "YES", "yEs", "y", "n", "no", "NO", "on", "Off", "OFF", "true", "TRUE", "tRue", "null", "Null", "NULL", "nul",
    "~", "~x", "=", "==", "<<", "<x", "<", "f", "type", "namespace", "Friday", "O'Brien", "-", "-x", "+", ".",
]


@settings(max_examples=2000, deadline=None)
@given(raw=st.sampled_from(_PLAIN_TRICKY) | st.text(alphabet=list("0123456789-+.:_eExTZ onyNf~="), min_size=1,
                                                       max_size=12))
def test_plain_scalars_resolve_as_yaml_resolves_them(raw):
    """Notes are read and written without importing YAML (~35 ms of a one-off `remember`): the
    resolution of plain scalars that replaces YAML's must give YAML's value, type and tag."""
    from yaml.constructor import SafeConstructor
    from yaml.nodes import ScalarNode
    from yaml.resolver import Resolver

    from vaultmem.notes.plainyaml import ASK_YAML, plain_value

    tag = Resolver().resolve(ScalarNode, raw, (True, False))
    ours = plain_value(raw)
    if ours is ASK_YAML:
        return  # YAML decides: the same code as before
    assert (tag == "tag:yaml.org,2002:str") == isinstance(ours, str)
    theirs = SafeConstructor.yaml_constructors[tag](SafeConstructor(), ScalarNode(tag, raw))
    assert type(ours) is type(theirs) and ours == theirs
    if isinstance(ours, datetime):
        assert ours.utcoffset() == theirs.utcoffset()
    if isinstance(ours, float):
        assert repr(ours) == repr(theirs)


def test_plain_scalar_first_characters_are_yamls():
    from yaml.resolver import Resolver

    from vaultmem.notes.plainyaml import _MAYBE_NOT_STR

    assert _MAYBE_NOT_STR == {c for c in Resolver.yaml_implicit_resolvers if c}


def test_reading_and_writing_vaultmem_notes_does_not_import_yaml():
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from vaultmem.notes.note import parse_note\nfrom vaultmem.notes.writing import render_new, update_fields\n"
        "text = render_new({'id': '01J0', 'type': 'deadline', 'value': '2024-08-15', 'score': 4.5,\n"
        "    'timestamp': '2026-11-30T07:52:05+00:00', 'tags': ['todo', 'yes', 'on'], 'trust': 'user'}, 'Body.\\n')\n"
        "note = parse_note(text)\n"
        "assert note.meta['tags'] == ['todo', 'yes', 'on'] and note.meta['score'] == 4.5, note.meta\n"
        "update_fields(note, {'score': 5.0, 'status': 'superseded'})\n"
        "print('yaml' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_an_integer_too_long_for_python_is_quoted_when_written_and_refused_as_yaml_would_when_read():
    huge = "9" * 4400  # Python refuses int() past 4,300 digits; YAML resolves it as an int all the same
    text = render_new({"id": "01J", "value": huge}, "Body.\n")
    assert f'value: "{huge}"' in text and parse_note(text).meta["value"] == huge
    with pytest.raises(NoteFormatError):  # as PyYAML's own reading fails: the note is indexed as unreadable
        parse_note(f"---\nvalue: {huge}\n---\nBody.\n")
