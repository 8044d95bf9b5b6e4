"""No single bad file stops every command: hostile notes, logs and configs from a shared vault.

Each bad file becomes an error of that file (doctor names it) while every other note still recalls.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from vaultmem import Vault
from vaultmem.config import MAX_CONFIG_BYTES, load_config
from vaultmem.errors import ConfigError, NoteFormatError
from vaultmem.notes.note import parse_note

from .conftest import REPO, snapshot_files, write_note


def alias_bomb(levels: int) -> str:
    """YAML whose nested aliases ("billion laughs") expand to 9 ** levels values."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\ntags: [*l{levels - 1}]\n"


def bomb_note(levels: int) -> str:
    return f"---\n{alias_bomb(levels)}---\nboom [[Somewhere]]\n"


def remember_good(vault: Vault) -> str:
    return vault.remember("The contract id is CT2024-0876").id


def unparsable(vault: Vault) -> dict[str, str]:
    return {item["path"]: item["error"] for item in vault.doctor().unparsable}


def node_budget(monkeypatch, nodes: int = 10_000) -> list[int]:
    """Count the YAML nodes the bomb check visits, failing the moment it passes `nodes`: a check that
    walked the expansion of alias_bomb(9) (9 ** 9 values) fails at once instead of running for hours."""
    from vaultmem.notes import plainyaml

    visits = [0]
    children = plainyaml._children

    def counted(node):
        visits[0] += 1
        assert visits[0] <= nodes, f"the YAML check visited more than {nodes} nodes: it expands the aliases"
        return children(node)

    monkeypatch.setattr(plainyaml, "_children", counted)
    return visits


# --- 1. YAML alias bombs and deep nesting in a note ------------------------------------------


def test_an_alias_bomb_is_a_format_error_of_the_note(monkeypatch):
    visits = node_budget(monkeypatch)
    with pytest.raises(NoteFormatError, match="aliases expand it by more than 100,000 characters"):
        parse_note(bomb_note(9), "memories/bomb.md")  # 9 ** 9 values: hours of walking for its links
    assert visits[0] > 0  # refused by the check, each node measured once


def test_a_vault_with_an_alias_bomb_recalls_the_rest_and_doctor_names_it(vault):
    good = remember_good(vault)
    write_note(vault, "memories/bomb.md", bomb_note(6))
    assert [hit.id for hit in vault.recall("contract")] == [good]
    assert "YAML bomb" in unparsable(vault)["memories/bomb.md"]
    assert vault.get("memories/bomb.md").meta == {}  # show: the note as text, no expanded properties


@pytest.mark.parametrize("frontmatter", ["a: &a [*a]", "a: &a {b: *a}", "a: &a [x, [y, *a]]"],
                         ids=["list", "mapping", "nested"])
def test_an_alias_that_holds_itself_is_a_format_error(frontmatter):
    with pytest.raises(NoteFormatError, match="refers to the collection that holds it"):
        parse_note(f"---\n{frontmatter}\n---\nbody\n", "memories/loop.md")


@pytest.mark.parametrize("frontmatter", [
    "a: " + "[" * 70 + "]" * 70,  # libyaml reads it; too deep for what walks the values
    "a: " + "[" * 2500 + "]" * 2500,  # enough marks to nest past libyaml's C stack: PyYAML reads it
    "a:\n" + "".join(" " * i + "-\n" for i in range(100)),  # block lists
], ids=["flow-70", "flow-2500", "block-100"])
def test_deep_nesting_is_a_format_error(frontmatter):
    with pytest.raises(NoteFormatError, match="nested"):
        parse_note(f"---\n{frontmatter}\n---\nbody\n", "memories/deep.md")


def test_nesting_deep_enough_to_overflow_libyaml_does_not_kill_the_process(vault):
    write_note(vault, "memories/deep.md", "---\na: " + "[" * 100_000 + "]" * 100_000 + "\n---\nbody\n")
    remember_good(vault)
    code = ("import sys; from vaultmem import Vault; v = Vault(sys.argv[1]); "
            "print(len(v.recall('contract')), [p['path'] for p in v.doctor().unparsable])")
    done = subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]  # libyaml's composer died of a stack overflow
    assert done.stdout.split() == ["1", "['memories/deep.md']"]


def test_a_body_of_a_hundred_thousand_open_brackets_indexes_at_once(vault):
    # a wikilink pattern that let '[' into a link's name scanned to the end from every '[': minutes
    write_note(vault, "memories/brackets.md", "---\ntags: [x]\n---\n" + "[" * 100_000 + "\n")
    write_note(vault, "memories/half.md", "---\na: " + "[" * 100_000 + "\n---\nbody\n")  # unparsable, cut
    remember_good(vault)
    code = "import sys; from vaultmem import Vault; v = Vault(sys.argv[1]); v.refresh(); print(len(v.recall('contract')))"
    done = subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == ["1"], done.stderr[-500:]


@pytest.mark.parametrize("frontmatter, expected", [
    ("base: &b hello\nother: *b\n", {"base": "hello", "other": "hello"}),  # a plain alias is fine
    ("d: &d {k: v}\nm:\n  <<: *d\n  j: w\n", {"d": {"k": "v"}, "m": {"k": "v", "j": "w"}}),
    ("dates: [" + ", ".join(["x-1:2"] * 800) + "]\n", {"dates": ["x-1:2"] * 800}),  # many marks, no depth
], ids=["alias", "merge", "marks"])
def test_aliases_and_long_lists_within_bounds_still_parse(frontmatter, expected):
    assert parse_note(f"---\n{frontmatter}---\nbody\n").meta == expected


# --- 4. config.yaml and its cache ------------------------------------------------------------


def config_file(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text, message", [
    ("ranking:\n  limit: -3\n", "ranking.limit must be a positive integer, not -3"),
    ("ranking:\n  limit: 2024-01-01\n", "ranking.limit must be a positive integer, not 2024-01-01"),
    ("ranking:\n  bm25_k1: 2024-01-01\n", "ranking.bm25_k1 must be a number of 0 or more, not 2024-01-01"),
    ("ranking:\n  fuzzy_weight: 2024-01-01\n", "ranking.fuzzy_weight must be a number, not 2024-01-01"),
    ("write:\n  near_duplicate: high\n", "write.near_duplicate must be a number from 0 to 1, not 'high'"),
    ("write:\n  near_duplicate: 1.5\n", "write.near_duplicate must be a number from 0 to 1, not 1.5"),
    ("ranking: [1, 2]\n", "ranking must be a mapping of settings, not a list"),
    ("ranking:\n  weights: 3\n", "ranking.weights must be a mapping of settings, not 3"),
    ("write:\n  link_entities: maybe\n", "write.link_entities must be true or false, not 'maybe'"),
    ("write:\n  merge_types: [id, 2024-01-01]\n", "write.merge_types must be a list of text, not a list holding 2024"),
    ("memory_root: 5\n", "memory_root must be text, not 5"),
    ("ranking:\n  fusion: best\n", "ranking.fusion must be weighted or rrf, not 'best'"),
    ("ranking:\n  rrf_k: .nan\n", "ranking.rrf_k must be a number of 0 or more, not nan"),
    ("ranking:\n  fuzzy_weight: .inf\n", "ranking.fuzzy_weight must be a number, not inf"),
    ("ranking:\n  fuzzy_weight: 1" + "0" * 400 + "\n", "ranking.fuzzy_weight must be a number, not 1000"),
    ("half_life_hours:\n  mine: -1\n", "half_life_hours.mine must be a number of 0 or more, or null, not -1"),
    ("half_life_hours:\n  mine: soon\n", "half_life_hours.mine must be a number of 0 or more, or null, not 'soon'"),
    ("defaults:\n  score: 11\n", "defaults.score must be a number from 0 to 10, not 11"),
])
def test_a_wrong_value_is_one_sentence_naming_the_setting(tmp_path, text, message):
    with pytest.raises(ConfigError) as raised:
        load_config(config_file(tmp_path, text))
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert str(raised.value).startswith(str(tmp_path / "config.yaml"))


def test_values_of_the_defaults_kinds_load(tmp_path):
    config = load_config(config_file(tmp_path, "ranking:\n  limit: 3\n  rrf_k: 60.5\nhalf_life_hours:\n"
                                               "  mine: 12\n  forever: null\nwrite:\n  merge_types: []\n"))
    assert config["ranking"]["limit"] == 3 and config["ranking"]["rrf_k"] == 60.5
    assert config["half_life_hours"]["mine"] == 12 and config["half_life_hours"]["forever"] is None
    assert config["half_life_hours"]["task"] == 24 and config["write"]["merge_types"] == []


def test_invalid_yaml_is_one_line_naming_the_line(tmp_path):
    with pytest.raises(ConfigError) as raised:
        load_config(config_file(tmp_path, "ranking:\n  limit: 3\n bad: x\n"))
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{tmp_path / 'config.yaml'}, line 3: not valid YAML: ")


def test_a_config_alias_bomb_is_refused_at_once(tmp_path, monkeypatch):
    visits = node_budget(monkeypatch)
    with pytest.raises(ConfigError, match="YAML bomb"):
        load_config(config_file(tmp_path, alias_bomb(9)))
    assert visits[0] > 0


def test_a_config_over_the_size_bound_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="larger than 256 KiB"):
        load_config(config_file(tmp_path, "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1)))


def cache_entry(vault: Vault) -> dict:
    Vault(vault.root)  # writes the cache
    return json.loads((vault.state / "cache" / "config.json").read_text())


def with_limit(entry: dict, limit: int, **extra) -> dict:
    """The cache entry, holding another ranking.limit, with a digest that fits."""
    from vaultmem.config import _digest

    config = {**entry["config"], "ranking": {**entry["config"]["ranking"], "limit": limit}}
    return {**entry, "config": config, "digest": _digest(entry["key"], config), **extra}


@pytest.mark.parametrize("damage", [
    lambda entry: {**entry, "config": {**entry["config"], "ranking": "nonsense"}},  # its digest no longer fits
    lambda entry: {**entry, "config": [1, 2]},
    lambda entry: {"key": entry["key"], "config": with_limit(entry, 3)["config"]},  # another version's: no digest
    lambda entry: with_limit(entry, 3, pad="x" * 5 * MAX_CONFIG_BYTES),  # too large to be ours: never read
], ids=["changed", "shape", "undigested", "huge"])
def test_a_huge_or_corrupt_config_cache_is_ignored(vault, damage):
    config = vault.state / "config.yaml"
    config.write_text(config.read_text().replace("  limit: 10", "  limit: 7"))
    (vault.state / "cache" / "config.json").write_text(json.dumps(damage(cache_entry(vault))))
    assert Vault(vault.root).settings.ranking.limit == 7


def test_a_whole_config_cache_is_used(vault):
    (vault.state / "cache" / "config.json").write_text(json.dumps(with_limit(cache_entry(vault), 4)))
    assert Vault(vault.root).settings.ranking.limit == 4  # config.yaml was not read again


# --- 2. out-of-range times and scores in one note --------------------------------------------


@pytest.mark.parametrize("properties, problem", [
    ("timestamp: 0001-01-01T00:00:00", "timestamp 0001-01-01T00:00:00 is out of range"),
    ("timestamp: 0001-01-01", "timestamp 0001-01-01T00:00:00 is out of range"),
    ("timestamp: '0001-01-01T00:00:00'", "timestamp 0001-01-01T00:00:00 is out of range"),
    ("timestamp: 9999-12-31T23:59:59-12:00", "timestamp 9999-12-31T23:59:59-12:00 is out of range"),
    ("score: 1" + "0" * 400, "score 1000000000000000000000000000000000000000 is not a number from 0 to 10"),
    ("score: .nan", "score nan is not a number from 0 to 10"),
    ("score: -.inf", "score -inf is not a number from 0 to 10"),
], ids=["year-1", "date-year-1", "quoted", "year-9999-offset", "huge-score", "nan-score", "inf-score"])
def test_an_out_of_range_value_is_an_error_of_that_note_only(vault, properties, problem):
    good = remember_good(vault)
    write_note(vault, "memories/bad.md", f"---\nid: BAD1\n{properties}\n---\nbad contract note\n")
    vault.refresh(force=True)  # reindex
    assert {hit.id for hit in vault.recall("contract")} == {good, "BAD1"}  # degraded, still found
    assert {m.id for m in vault.list()} == {good, "BAD1"}
    assert vault.stats()["unparsable"] == 1
    assert unparsable(vault) == {"memories/bad.md": f"memories/bad.md: {problem} (years 1 to 9999)"
                                 if "timestamp" in problem else f"memories/bad.md: {problem}"}


def test_a_score_out_of_range_ranks_as_the_nearest_score(vault):
    write_note(vault, "memories/high.md", "---\nscore: 1e300\n---\nhigh contract note\n")
    write_note(vault, "memories/low.md", "---\nscore: -4\n---\nlow contract note\n")
    scores = {hit.title: hit.score for hit in vault.recall("contract note")}
    assert scores == {"high": 10.0, "low": 0.0}


# --- 6. a vault that is a file; a --since that is no date -------------------------------------


def test_a_vault_that_is_a_file_is_not_a_directory(tmp_path):
    from vaultmem.surfaces.cli import app
    from typer.testing import CliRunner

    afile = tmp_path / "passwd"
    afile.write_text("root:x:0:0\n")
    result = CliRunner().invoke(app, ["list", "--vault", str(afile)])
    assert result.exit_code == 1 and f"{afile} is not a directory" in result.output
    fast = subprocess.run([sys.executable, "-m", "vaultmem", "recall", "x", "--vault", str(afile)],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert fast.returncode == 1 and fast.stderr == f"Error: {afile} is not a directory; a vault is a folder\n"


def test_list_since_garbage_is_a_clear_error(vault):
    from vaultmem.surfaces.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["list", "--since", "garbage", "--vault", str(vault.root)])
    assert result.exit_code == 1
    assert result.output == "Error: invalid date 'garbage': use YYYY-MM-DD or ISO 8601\n"


def test_dates_past_the_range_are_open_bounds(vault):
    good = remember_good(vault)
    assert [hit.id for hit in vault.recall("contract", since=None)] == [good]
    hits = vault.recall("contract", since="0001-01-01", until="9999-12-31")  # as the CLI passes them
    assert [hit.id for hit in hits] == [good]
    assert [m.id for m in vault.list(since="0001-01-01")] == [good]


# --- 3. a bad line in another device's event log --------------------------------------------


@pytest.mark.parametrize("line", [
    '{"event": "access", "id": "%s", "ts": NaN}',
    '{"event": "access", "id": "%s", "ts": Infinity}',
    '{"event": "access", "id": "%s", "ts": 1e400}',
    '{"event": "access", "id": "%s", "ts": 1' + "0" * 400 + "}",
    '{"event": "access", "id": "%s", "ts": "yesterday"}',
    '{"event": "access", "id": "%s", "ts": [1]}',
    '{"event": "access", "id": "%s", "ts": -5}',
    '{"event": "access", "id": ["%s"], "ts": 1}',
    '<<<<<<< HEAD %s',
    '["%s"]',
    '[' * 100_000 + '"%s"' + ']' * 100_000,
], ids=["nan", "infinity", "overflow", "huge-int", "text", "list", "negative", "id-list", "merge-marker",
        "not-object", "deep"])
def test_a_bad_event_line_is_skipped_and_named_by_doctor(vault, line):
    good = remember_good(vault)
    log = vault.state / "devices" / "laptop-9" / "events-2026-11.jsonl"
    log.parent.mkdir(parents=True)
    stamp = 1.9e9  # after the note was written
    log.write_text(json.dumps({"event": "access", "id": good, "ts": stamp}) + "\n" + line % good + "\n"
                   + json.dumps({"event": "access", "id": good, "ts": stamp}) + "\n")
    vault.refresh(force=True)
    hit = vault.recall("contract", now=stamp, record_access=False)[0]
    assert (hit.id, hit.effective, hit.decay) == (good, hit.score + 2 * 0.5, 1.0)  # 2 good uses, read just now
    [bad] = vault.doctor().bad_log_lines
    assert (bad["path"], bad["line"]) == (".vaultmem/devices/laptop-9/events-2026-11.jsonl", 2)


def test_a_log_that_cannot_be_read_waits(vault):
    good = remember_good(vault)
    (vault.state / "devices" / "laptop-9" / "events-2026-11.jsonl").mkdir(parents=True)  # a folder by that name
    assert [hit.id for hit in vault.recall("contract")] == [good]
    assert vault.doctor().bad_log_lines[0]["problem"].startswith("cannot be read")


# --- 5. terminal escape sequences in a shared vault's notes ----------------------------------

ATTACK = "\x1b[2J\x1b]0;pwned\x07\x9b31m\r\x7f"


@pytest.fixture
def hostile(vault):
    """A vault with a note whose name, properties and body hold terminal control sequences, and a
    note doctor reports under a name that holds one."""
    write_note(vault, f"memories/evil{ATTACK}.md", f"---\nid: EVIL\nsource: \"{ATTACK!r}\"\nnote: \"\\e[5m\"\n---\n"
               f"contract terms {ATTACK}\ttabbed\n")
    write_note(vault, f"memories/broken{ATTACK}.md", "---\nkey: [unclosed\n---\ncontract\n")
    vault.refresh()
    return vault


@pytest.mark.parametrize("command", [["recall", "contract", "--explain"], ["show", "EVIL"], ["list"], ["doctor"]])
def test_control_characters_never_reach_the_terminal(hostile, command):
    from vaultmem.surfaces.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, [*command, "--vault", str(hostile.root)])
    assert result.exit_code in (0, 3), result.output
    assert not any(ch in result.output for ch in "\x1b\x07\x9b\r\x7f")
    assert "\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\x0d\\x7f" in result.output  # shown, escaped
    if command[0] == "show":
        assert "\ttabbed" in result.output


def test_the_fast_recall_escapes_them_too_and_json_is_escaped(hostile):
    fast = subprocess.run([sys.executable, "-m", "vaultmem", "recall", "contract", "--vault", str(hostile.root)],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert fast.returncode == 0 and "\\x1b[2J" in fast.stdout and "\x1b" not in fast.stdout
    from vaultmem.surfaces.cli import app
    from typer.testing import CliRunner

    out = CliRunner().invoke(app, ["recall", "contract", "--json", "--vault", str(hostile.root)]).output
    assert not any(ch in out for ch in "\x1b\x07\x9b\r\x7f")
    assert json.loads(out)[0]["content"].startswith(f"contract terms {ATTACK}")


# --- 7. a regex in config.yaml that backtracks for ever (issue 28 item 3) ---------------------

HANG = 120  # seconds: each command below takes well under one; on c0f8b21 each spun until killed
BACKTRACKS = "a" * 32 + "!"  # the text (a+)+$ fails on in 2 ** 31 ways


def with_rule(vault: Vault, section: str = "policy") -> None:
    """Give config.yaml a rule whose regex is (a+)+$, in policy.patterns or in extraction.rules."""
    config = vault.state / "config.yaml"
    empty, rule = {"policy": ("  patterns: []", "  patterns: [{name: evil, regex: '(a+)+$'}]"),
                   "extraction": ("  rules: []", "  rules: [{type: evil, regex: '(a+)+$'}]")}[section]
    config.write_text(config.read_text(encoding="utf-8").replace(empty, rule, 1), encoding="utf-8")


def bounded(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a command in a process group of its own; one still running after HANG seconds is killed with
    its children (a git hook's interpreter too) and fails the test."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd or REPO,
                            start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{shlex.join(args)[:120]} still ran after {HANG} s: a regex of config.yaml backtracks")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def vaultmem_cli(*args: str) -> subprocess.CompletedProcess:
    return bounded(sys.executable, "-m", "vaultmem", *args)


def refused_with_one_line(done: subprocess.CompletedProcess, rule: str = "policy.patterns rule 'evil'") -> bool:
    return done.returncode == 1 and done.stderr.startswith(f"Error: {rule}: refused: ") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("section, rule", [("policy", "policy.patterns rule 'evil'"),
                                           ("extraction", "extraction.rules[0] (evil)")])
def test_remember_with_a_regex_that_backtracks_for_ever_is_one_error_and_writes_nothing(vault, section, rule):
    with_rule(vault, section)
    before = snapshot_files(vault.root)
    done = vaultmem_cli("remember", BACKTRACKS, "--vault", str(vault.root))
    assert refused_with_one_line(done, rule), done.stderr
    assert snapshot_files(vault.root) == before


def test_lint_with_a_regex_that_backtracks_for_ever_is_one_error(vault):
    write_note(vault, "memories/A run of a.md", f"---\nid: 01J0000000000000000000RUNA\ntype: fact\n---\n{BACKTRACKS}\n")
    with_rule(vault)
    before = snapshot_files(vault.root)
    done = vaultmem_cli("lint", "--vault", str(vault.root))
    assert refused_with_one_line(done), done.stderr
    assert snapshot_files(vault.root) == before


def test_the_pre_commit_hook_with_a_regex_that_backtracks_for_ever_refuses_the_commit_at_once(vault):
    git = [shutil.which("git"), "-C", str(vault.root), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    assert bounded(*git, "init", "-q", "-b", "main").returncode == 0
    assert vaultmem_cli("hook", "install", "--vault", str(vault.root)).returncode == 0
    write_note(vault, "memories/A run of a.md", f"---\nid: 01J0000000000000000000RUNA\ntype: fact\n---\n{BACKTRACKS}\n")
    with_rule(vault)
    assert bounded(*git, "add", "-A").returncode == 0
    refused = bounded(*git, "commit", "-q", "-m", "a run of a")
    assert refused.returncode == 1 and "Error: policy.patterns rule 'evil': refused: " in refused.stderr
    assert bounded(*git, "rev-parse", "-q", "--verify", "HEAD").returncode != 0  # nothing committed
