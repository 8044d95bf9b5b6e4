"""`vaultmem dashboard` (issue 30 item 3): an Obsidian Bases file and a Dataview note, written once and
never over a person's edits; the `.base` is checked against the format Obsidian documents.

The schema below is written from Obsidian's own help (the obsidianmd/obsidian-help repository, which
help.obsidian.md publishes), read for this test:
- "Bases syntax" (https://help.obsidian.md/bases/syntax, en/Bases/Bases syntax.md): a base is YAML with
  top-level `filters`, `formulas`, `properties` and `views` (`summaries` too); `filters` is "either a
  single filter statement as a string, or a recursively defined filter object" that "may contain one of
  `and`, `or`, or `not`", each "a heterogeneous list of other filter objects or filter statements in
  strings"; formulas are strings of the same expression language, referring to `note.`, `file.` and
  `formula.` properties; the file properties are listed there (`file.name`, `file.mtime`, ...); each
  view has `type`, `name`, optional `filters`, `order` (the properties shown), `limit` and `groupBy` (a
  `property` and a `direction`); operators are `+ - * / %`, comparisons `== != > < >= <=`, `! && ||`;
  a date plus a duration string (`now() + "1 day"`, units y M d w h m s) is a date.
- "Views" (https://help.obsidian.md/bases/views): layouts table and cards (Obsidian 1.9), list and map
  (1.10); a view sorts by one or more properties, ascending or descending (`sort`: a list of
  {property, direction} entries, the form Obsidian writes, as groupBy's).
- "Functions" (https://help.obsidian.md/bases/functions): the functions a filter or formula may call,
  global (`if`, `date`, `now`, ...) and by type (`date.relative()`, `file.inFolder()`, ...).
The validator is ours: it parses every expression into tokens and checks each call and reference.
"""

from __future__ import annotations

import re

import pytest
import yaml
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.overview.dashboard import BACKUP_DIR, BASE_NAME, NOTE_NAME
from vaultmem.surfaces.cli import app

TOP_KEYS = {"filters", "formulas", "properties", "summaries", "views"}
VIEW_TYPES = {"table", "cards", "list", "map"}
VIEW_KEYS = {"type", "name", "filters", "order", "sort", "limit", "groupBy", "summaries"}
DIRECTIONS = {"ASC", "DESC"}
FILE_PROPERTIES = {"backlinks", "ctime", "embeds", "ext", "file", "folder", "links", "mtime", "name", "path",
                   "properties", "size", "tags"}
GLOBAL_FUNCTIONS = {"escapeHTML", "date", "duration", "file", "html", "if", "image", "icon", "link", "list", "max",
                    "min", "now", "number", "today"}
METHODS = {"isTruthy", "toString", "date", "format", "time", "relative", "isEmpty", "contains", "containsAll",
           "containsAny", "endsWith", "lower", "replace", "repeat", "reverse", "slice", "split", "startsWith",
           "title", "trim", "abs", "ceil", "floor", "round", "toFixed", "filter", "flat", "join", "map", "reduce",
           "sort", "unique", "asFile", "linksTo", "asLink", "hasLink", "hasProperty", "hasTag", "inFolder", "keys",
           "values", "matches"}
DURATION = re.compile(r"^\s*\d+(\.\d+)?\s*(y|years?|M|months?|d|days?|w|weeks?|h|hours?|m|minutes?|s|seconds?)\s*$")
_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|(?P<num>\d+(?:\.\d+)?)'
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
                    r"|(?P<op>==|!=|>=|<=|&&|\|\||[-+*/%<>!(),.]))")


def tokens(expr: str) -> list[tuple[str, str]]:
    """(kind, text) of each token of an expression; AssertionError on anything the syntax has no token for."""
    found, at = [], 0
    while at < len(expr.rstrip()):
        match = _TOKEN.match(expr, at)
        assert match and match.end() > at, f"cannot read {expr[at:]!r} in {expr!r}"
        kind = match.lastgroup
        found.append((kind, match.group(kind)))
        at = match.end()
    return found


def check_expression(expr: object, formulas: set[str]) -> None:
    assert isinstance(expr, str) and expr.strip(), f"an expression is a non-empty string: {expr!r}"
    parts = tokens(expr)
    depth = 0
    for n, (kind, value) in enumerate(parts):
        depth += {"(": 1, ")": -1}.get(value, 0) if kind == "op" else 0
        assert depth >= 0, f"unbalanced ) in {expr!r}"
        following = parts[n + 1][1] if n + 1 < len(parts) else ""
        preceding = parts[n - 1][1] if n else ""
        if kind == "name" and following == "(":
            *owner, function = value.split(".")
            known = METHODS if owner or preceding == "." else GLOBAL_FUNCTIONS
            assert function in known, f"{function}() is not a documented Bases function ({expr!r})"
        elif kind == "name" and preceding != ".":
            head, _, rest = value.partition(".")
            if head == "formula":
                assert rest.split(".")[0] in formulas, f"formula.{rest} is not defined ({expr!r})"
            elif head == "file" and rest:
                name = rest.split(".")[0]
                assert name in FILE_PROPERTIES or name in METHODS, f"file.{name} is no file property ({expr!r})"
        elif kind == "str" and preceding in ("+", "-") and value[1:2].isdigit() and not DURATION.match(value[1:-1]):
            pytest.fail(f"{value} is not a duration Bases reads ({expr!r})")  # a number and a unit
    assert depth == 0, f"unbalanced ( in {expr!r}"


def check_filter(node: object, formulas: set[str]) -> None:
    if isinstance(node, str):
        check_expression(node, formulas)
        return
    assert isinstance(node, dict) and len(node) == 1, f"a filter object has exactly one of and/or/not: {node!r}"
    (key, items), = node.items()
    assert key in ("and", "or", "not") and isinstance(items, list) and items, node
    for item in items:
        check_filter(item, formulas)


def check_property(name: object, formulas: set[str]) -> None:
    assert isinstance(name, str) and name, name
    head, _, rest = name.partition(".")
    if head == "formula":
        assert rest in formulas, f"{name} is not defined"
    elif head == "file":
        assert rest in FILE_PROPERTIES, f"{name} is no file property"


def check_base(text: str) -> dict:
    """The base's YAML against Obsidian's documented schema; returns it parsed."""
    spec = yaml.safe_load(text)
    assert isinstance(spec, dict) and set(spec) <= TOP_KEYS, set(spec) - TOP_KEYS
    formulas = spec.get("formulas") or {}
    assert isinstance(formulas, dict)
    for name, expr in formulas.items():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name), name
        check_expression(expr, set(formulas))
        assert f"formula.{name}" not in expr, f"formula {name} refers to itself"
    names = set(formulas)
    if "filters" in spec:
        check_filter(spec["filters"], names)
    for prop, config in (spec.get("properties") or {}).items():
        check_property(prop, names)
        assert isinstance(config, dict) and isinstance(config.get("displayName"), str), config
    views = spec.get("views")
    assert isinstance(views, list) and views, "a base has at least one view"
    for view in views:
        assert isinstance(view, dict) and set(view) <= VIEW_KEYS, set(view) - VIEW_KEYS
        assert view.get("type") in VIEW_TYPES and isinstance(view.get("name"), str) and view["name"], view
        if "filters" in view:
            check_filter(view["filters"], names)
        for prop in view.get("order", []):
            check_property(prop, names)
        for entry in [*view.get("sort", []), *([view["groupBy"]] if "groupBy" in view else [])]:
            assert set(entry) == {"property", "direction"} and entry["direction"] in DIRECTIONS, entry
            check_property(entry["property"], names)
        if "limit" in view:
            assert isinstance(view["limit"], int) and view["limit"] > 0
    assert len({v["name"] for v in views}) == len(views), "view names are unique"
    return spec


def test_the_validator_refuses_what_the_documented_syntax_does_not_have():
    good = 'filters:\n  and:\n    - file.inFolder("memories")\n    - \'status != "done"\'\nviews:\n  - type: table\n    name: T\n'
    check_base(good)
    for bad in ('filters:\n  and: []\nviews:\n  - type: table\n    name: T\n',
                'filters:\n  and: [x]\n  or: [y]\nviews:\n  - type: table\n    name: T\n',
                'views:\n  - type: grid\n    name: T\n',
                'views:\n  - type: table\n    name: T\n    order: [formula.nope]\n',
                'views:\n  - type: table\n    name: T\n    filters: file.inFolderz("x")\n',
                'views:\n  - type: table\n    name: T\n    filters: (status == "a"\n',
                'views:\n  - type: table\n    name: T\n    sort: [{property: score, direction: UP}]\n',
                'formulas:\n  d: date(timestamp) + "3 fortnights"\nviews:\n  - type: table\n    name: T\n',
                'views:\n  - type: table\n    name: T\n    filters: status ~= "x"\n',
                'sources: [x]\nviews:\n  - type: table\n    name: T\n'):
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            check_base(bad)


def test_the_base_is_valid_bases_syntax_with_the_five_views(sample):
    done = sample.dashboard()
    assert [(f["name"], f["action"]) for f in done.files] == [(BASE_NAME, "created"), (NOTE_NAME, "created")]
    spec = check_base((sample.memory_root / BASE_NAME).read_text(encoding="utf-8"))
    assert [v["name"] for v in spec["views"]] == ["By namespace", "Fading soon", "Needs verification",
                                                 "Recently superseded", "Pinned"]
    assert {v["type"] for v in spec["views"]} == {"table", "cards"}
    by_namespace = spec["views"][0]
    assert by_namespace["groupBy"] == {"property": "namespace", "direction": "ASC"}
    assert 'file.inFolder("memories")' in spec["filters"]["and"][1]["or"]


def test_fading_soon_uses_the_vaults_own_half_lives_and_a_notes_own(vault):
    config = vault.state / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  task: 24", "  task: 12")
                      .replace("  event: 168", "  event: 1.5"), encoding="utf-8")
    vault = Vault(vault.root)
    vault.dashboard()
    spec = check_base((vault.memory_root / BASE_NAME).read_text(encoding="utf-8"))
    formula = spec["formulas"]["half_strength_on"]
    assert formula.startswith("if(half_life, date(timestamp) + half_life,")  # a note's own half_life first
    assert 'lifecycle == "task", date(timestamp) + "12h"' in formula
    assert 'lifecycle == "event", date(timestamp) + "90m"' in formula  # 1.5 h: whole minutes
    assert 'lifecycle == "permanent", null' in formula
    note = (vault.memory_root / NOTE_NAME).read_text(encoding="utf-8")
    assert 'choice(lifecycle = "task", date(timestamp) + dur(12 hours)' in note


def test_the_note_embeds_the_base_and_queries_the_memory_folders(sample):
    sample.dashboard()
    note = (sample.memory_root / NOTE_NAME).read_text(encoding="utf-8")
    assert f"![[{BASE_NAME}]]" in note
    blocks = re.findall(r"```dataview\n(.*?)```", note, re.S)
    assert len(blocks) == 5
    assert all(re.search(r'^FROM "memories"', block, re.M) for block in blocks)
    assert note.startswith("%% vaultmem dashboard ")  # an Obsidian comment: hidden when the note is read


def test_a_dashboard_inside_a_larger_obsidian_vault_names_folders_from_its_root(tmp_path):
    (tmp_path / "notes" / ".obsidian").mkdir(parents=True)
    vault = Vault.init(tmp_path / "notes" / "agent memory")
    vault.dashboard()
    spec = check_base((vault.memory_root / BASE_NAME).read_text(encoding="utf-8"))
    assert spec["filters"]["and"][1]["or"][0] == 'file.inFolder("agent memory/memories")'
    assert 'FROM "agent memory/memories" OR "agent memory/inbox"' in (vault.memory_root / NOTE_NAME).read_text()


def test_a_second_run_changes_nothing_and_an_unedited_copy_is_brought_up_to_date(vault):
    vault.dashboard()
    first = (vault.memory_root / BASE_NAME).read_bytes()
    assert [f["action"] for f in vault.dashboard().files] == ["unchanged", "unchanged"]
    config = vault.state / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  task: 24", "  task: 6"), encoding="utf-8")
    again = Vault(vault.root).dashboard()
    assert [f["action"] for f in again.files] == ["updated", "updated"]
    assert (vault.memory_root / BASE_NAME).read_bytes() != first
    assert b'"6h"' in (vault.memory_root / BASE_NAME).read_bytes()


def test_an_edited_copy_is_kept_and_force_replaces_it_after_a_backup(vault):
    vault.dashboard()
    base = vault.memory_root / BASE_NAME
    edited = base.read_text(encoding="utf-8").replace("limit: 50", "limit: 10")
    base.write_text(edited, encoding="utf-8")
    kept = vault.dashboard()
    assert kept.files[0]["action"] == "kept" and "edited" in kept.files[0]["why"]
    assert base.read_text(encoding="utf-8") == edited and kept.files[1]["action"] == "unchanged"
    forced = vault.dashboard(force=True)
    assert forced.files[0]["action"] == "replaced"
    backup = vault.root / forced.files[0]["backup"]
    assert backup.read_text(encoding="utf-8") == edited and backup.is_relative_to(vault.state / BACKUP_DIR)
    assert "limit: 50" in base.read_text(encoding="utf-8")


def test_a_file_of_that_name_vaultmem_never_wrote_is_left_alone(vault):
    mine = vault.memory_root / NOTE_NAME
    mine.write_text("# My own dashboard\n", encoding="utf-8")
    done = vault.dashboard()
    assert done.files[1] == {"name": NOTE_NAME, "path": NOTE_NAME, "action": "kept", "why": "vaultmem did not write it"}
    assert mine.read_text(encoding="utf-8") == "# My own dashboard\n"


def test_obsidians_rewrite_of_the_base_counts_as_an_edit(vault):
    """Changing a view in Obsidian rewrites the file in its own style (the first line goes): kept."""
    vault.dashboard()
    base = vault.memory_root / BASE_NAME
    rewritten = yaml.safe_dump(yaml.safe_load(base.read_text(encoding="utf-8")), sort_keys=False)
    base.write_text(rewritten, encoding="utf-8")
    assert vault.dashboard().files[0]["action"] == "kept"
    assert base.read_text(encoding="utf-8") == rewritten


def test_the_dashboard_command_says_what_it_did_with_each_file(vault):
    runner = CliRunner()
    first = runner.invoke(app, ["dashboard", "--vault", str(vault.root)])
    assert first.exit_code == 0 and f"created: {BASE_NAME}" in first.output and f"created: {NOTE_NAME}" in first.output
    (vault.memory_root / NOTE_NAME).write_text("mine\n", encoding="utf-8")
    second = runner.invoke(app, ["dashboard", "--vault", str(vault.root)])
    assert second.exit_code == 0 and f"kept: {NOTE_NAME} (vaultmem did not write it; --force" in second.output
    forced = runner.invoke(app, ["dashboard", "--vault", str(vault.root), "--force", "--json"])
    assert forced.exit_code == 0 and '"action": "replaced"' in forced.output
