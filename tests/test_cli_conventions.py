"""The command line behaves like the tools it sits beside (git, llm, sqlite-utils): global options,
help, version, completion, stdin, pipes, colour, JSON errors, and one option table for both parsers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import typer.main
from typer.testing import CliRunner

import vaultmem
from vaultmem import Vault
from vaultmem.surfaces import console
from vaultmem.surfaces.cli import app

from .conftest import cli_commands

runner = CliRunner()


def run(*args, env=None, input=None):
    return runner.invoke(app, list(args), env=env, input=input)


def cli(*args, input=None, env_extra=None, cwd=None):
    """The real `python -m vaultmem` (the fast path included), as a shell runs it."""
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, env=env,
                          input=input, timeout=120, cwd=cwd)


@pytest.fixture
def root(tmp_path):
    path = tmp_path / "v"
    Vault.init(path)
    return str(path)


def test_the_vault_may_come_before_the_command_on_both_paths(root, tmp_path):
    assert cli("--vault", root, "remember", "Deploy window is Tuesday 22:00", "--tag", "ops").returncode == 0
    fast = cli("--vault", root, "recall", "deploy window", "--json")
    assert fast.returncode == 0, fast.stderr
    assert "Deploy window" in json.loads(fast.stdout)[0]["content"]
    assert json.loads(run("--vault", root, "list", "--json").output)[0]["tags"] == ["ops"]
    assert "memories by status" in run("-V", root, "stats").output
    assert cli(f"--vault={root}", "remember", "-", input="Standup is at 09:30\n").returncode == 0
    # the command's own --vault wins over the one before it, and both over the environment
    other = tmp_path / "other"
    Vault.init(other)
    cli("--vault", root, "remember", "zebra crossing memo", "--vault", str(other))
    assert json.loads(cli("recall", "zebra crossing memo", "--json", env_extra={"VAULTMEM_VAULT": str(other)}).stdout)
    assert json.loads(cli("--vault", root, "recall", "zebra crossing memo", "--json",
                          env_extra={"VAULTMEM_VAULT": str(other)}).stdout) == []


def test_version_short_help_and_bare_command():
    version = cli("--version")
    assert (version.returncode, version.stdout) == (0, f"vaultmem {vaultmem.__version__}\n")
    assert run("recall", "-h").output == run("recall", "--help").output
    assert run("-h").output == run("--help").output
    bare = cli()
    assert bare.returncode == 0 and bare.stdout.startswith("Usage: vaultmem") and "Commands:" in bare.stdout
    assert bare.stderr == ""
    sub = cli("entity")
    assert sub.returncode == 0 and "add" in sub.stdout


def test_shell_completion_is_offered():
    assert "--install-completion" in run("--help").output
    shown = cli("--show-completion", "bash")
    assert shown.returncode == 0 and "complete -o default -F _vaultmem_completion vaultmem" in shown.stdout


@pytest.mark.parametrize("words", cli_commands(), ids=" ".join)
def test_help_shows_readable_metavars_and_an_example(words):
    text = run(*words, "--help").output
    options = [line for line in text.splitlines() if line.lstrip().startswith("-")]
    # options show a word for their value (TAG, PATH, N); typer's own <type> is left to arguments
    assert options and not any(re.search(r"\s<\w+(\[\w+\])?>", line) for line in options), text
    assert "Example" in text and f"vaultmem {' '.join(words)}" in text


def test_stdin_is_read_for_a_dash_on_both_paths(root):
    fast = cli("remember", "-", "--vault", root, "--json", input="记住：周报用中文\n")
    assert fast.returncode == 0, fast.stderr
    assert json.loads(fast.stdout)["action"] == "created"
    typed = run("remember", "-", "--tag", "ops", "--vault", root, "--json", input="Backups run at 02:00")
    assert json.loads(typed.output)["tags"] == ["ops"]
    contents = {m.content.strip() for m in Vault(root).list()}
    assert {"记住：周报用中文", "Backups run at 02:00"} <= contents
    empty = cli("remember", "-", "--vault", root, input="  \n")
    assert empty.returncode == 1 and empty.stderr.startswith("Error: nothing to remember")


@pytest.fixture
def full(root):
    """A vault whose list and recall print far more than a pipe holds (64 KiB)."""
    Vault(root).remember_many([{"text": f"Pipe filler memory number {i} " + "words " * 60, "tags": ["fill"]}
                               for i in range(300)])
    return root


@pytest.mark.parametrize("args", [["list", "--json"], ["recall", "--tag", "fill", "--limit", "300", "--json"],
                                  ["recall", "pipe filler", "--limit", "300"]])
def test_a_reader_that_leaves_early_ends_the_command_quietly(full, args):
    command = [sys.executable, "-m", "vaultmem", *args, "--vault", full]
    piped = subprocess.run(["bash", "-c", '"$@" | head -1 >/dev/null; echo "${PIPESTATUS[0]}"', "bash", *command],
                           capture_output=True, text=True, timeout=120)
    assert piped.stderr == ""
    assert piped.stdout.strip() == "0"


def test_ids_print_one_id_a_line(root):
    made = json.loads(run("remember", "Prefers tea", "--tag", "pref", "--vault", root, "--json").output)
    assert cli("recall", "tea", "--ids", "--vault", root).stdout == made["id"] + "\n"
    assert run("list", "--ids", "--vault", root).output == made["id"] + "\n"
    shown = subprocess.run(["bash", "-c", f'{sys.executable} -m vaultmem show "$({sys.executable} -m vaultmem '
                            f'recall tea --ids --vault {root} | head -1)" --vault {root}'],
                           capture_output=True, text=True, timeout=120)
    assert shown.stdout.startswith("Prefers tea\n")


class _Terminal:
    """A stream that says it is a terminal."""

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    console.say("a title \x1b]52;c;evil\x07", style="title")
    assert terminal.text == "\x1b[1ma title \\x1b]52;c;evil\\x07\x1b[0m\n"  # the note's own escapes stay inert
    monkeypatch.setenv("NO_COLOR", "1")
    terminal.text = ""
    console.say("plain", style="title")
    assert terminal.text == "plain\n"


def test_no_colour_when_output_is_not_a_terminal(root):
    run("remember", "Deploy window is Tuesday 22:00", "--vault", root)
    out = cli("recall", "deploy", "--explain", "--vault", root, env_extra={"TERM": "xterm"})
    assert out.returncode == 0 and "\x1b" not in out.stdout + out.stderr


def test_stats_is_a_table(root):
    run("remember", "Prefers tea", "--lifecycle", "preference", "--vault", root)
    lines = run("stats", "--vault", root).output.splitlines()
    assert "memories by lifecycle" in lines
    row = lines[lines.index("memories by lifecycle") + 1]
    assert re.fullmatch(r"  preference +1", row), row
    assert not any("{" in line for line in lines)


@pytest.mark.parametrize("args, kind, code", [
    (["show", "NOPE", "--vault", "{root}", "--json"], "NoteNotFound", 1),
    (["recall", "x", "--json", "--vault", "{root}/missing"], "VaultNotFound", 1),
    (["remember", "x", "--json", "--lifecycle", "forever", "--vault", "{root}"], "VaultmemError", 1),
    (["recall", "x", "--limit", "0", "--json", "--vault", "{root}"], "usage", 2),
    (["list", "--limit", "zero", "--json", "--vault", "{root}"], "usage", 2),
])
def test_with_json_an_error_is_a_json_object_on_stderr(root, args, kind, code):
    done = cli(*[a.replace("{root}", root) for a in args])
    assert done.returncode == code and done.stdout == ""
    error = json.loads(done.stderr)
    assert error["kind"] == kind and error["exit_code"] == code and error["error"]


def test_an_unknown_lifecycle_is_refused_with_the_configured_names(root, tmp_path):
    refused = cli("remember", "Keep this forever", "--lifecycle", "forever", "--vault", root)
    assert refused.returncode == 1
    assert refused.stderr == ("Error: --lifecycle must be one of task, note, event, preference, fact, permanent "
                              "(half_life_hours in .vaultmem/config.yaml names them)\n")
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"text": "fine"}\n{"text": "not fine", "lifecycle": "forever"}\n', encoding="utf-8")
    typed = run("remember", "--batch", str(batch), "--vault", root)
    assert typed.exit_code == 1 and typed.output.startswith("Error: item 2: lifecycle must be one of task,")
    assert Vault(root).list() == []  # neither the bad item nor the good one before it
    config = tmp_path / "v" / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  permanent: null\n",
                                                                 "  permanent: null\n  sprint: 336\n"))
    assert cli("remember", "Sprint goal: ship search", "--lifecycle", "sprint", "--vault", root).returncode == 0


@pytest.mark.parametrize("args", [["recall", "x"], ["remember", "x"], ["stats"], ["entity", "add", "A"]])
def test_a_vault_that_is_a_file_or_a_broken_config_is_one_sentence(tmp_path, root, args):
    afile = tmp_path / "afile"
    afile.write_text("not a vault")
    broken = tmp_path / "v" / ".vaultmem" / "config.yaml"
    for vault, message in [(str(afile), "is not a directory; a vault is a folder"),
                           (root, "not valid YAML")]:
        broken.write_text("ranking: [\n", encoding="utf-8")
        done = cli(*args, "--vault", vault)
        assert done.returncode == 1, done
        assert done.stderr.startswith("Error: ") and message in done.stderr and done.stderr.count("\n") == 1
    broken.write_text("write:\n  near_duplicate: high\n", encoding="utf-8")
    done = cli(*args, "--vault", root)
    assert (done.returncode, done.stderr) == (1, f"Error: {broken}: write.near_duplicate must be a number from 0 "
                                                 "to 1, not 'high'\n")


@pytest.mark.parametrize("name, options", [("remember", console.REMEMBER_OPTIONS),
                                           ("recall", console.RECALL_OPTIONS)])
def test_the_fast_path_and_the_typer_command_share_every_option(name, options):
    command = typer.main.get_command(app).commands[name]
    typed = {p.name: p for p in command.params if p.param_type_name == "option"}
    assert set(options) <= set(typed)
    for key, spec in options.items():
        assert tuple(typed[key].opts) == spec.flags, key
        assert typed[key].default == (spec.default if not spec.many else None), key
    parser = console._parser(name, ("x", "?"), options)
    flags = {flag for action in parser._actions for flag in action.option_strings}
    assert flags >= {flag for spec in options.values() for flag in spec.flags}
    assert set(typed) - set(options) <= {"batch"}  # the one option the fast path leaves to typer


def test_an_unknown_batch_field_is_refused_with_the_allowed_ones(tmp_path):
    import subprocess
    import sys

    from vaultmem import Vault
    from vaultmem.write.items import BATCH_FIELDS

    Vault.init(tmp_path / "v")
    batch = tmp_path / "m.jsonl"
    batch.write_text('{"text": "x", "colour": 1}\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "vaultmem", "remember", "--vault", str(tmp_path / "v"), "--batch",
                           str(batch)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "unknown field(s) colour; the fields are " + ", ".join(sorted(BATCH_FIELDS)) in done.stderr
    assert not list((tmp_path / "v" / "memories").glob("*.md"))
