"""The docs a new user meets run as written: the README's tour, its other commands, the sample
vault's Welcome note and every example in the CLI's help, each checked for what it does."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.surfaces.cli import app
from vaultmem.write.items import BATCH_FIELDS

from .conftest import cli_commands

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
WELCOME = (REPO / "sample-vault" / "Welcome.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(text: str, after: str = "") -> list[tuple[str, str]]:
    """(language, body) of each fenced code block of text, from the heading `after` on."""
    return BLOCK.findall(text[text.index(after):] if after else text)


def _command_lines(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.strip()]


def _run_steps(lines: list[str], cwd: Path, home: Path, env_extra: dict | None = None) -> list[dict]:
    """Run lines in one bash (exports carry over) as a user would; each step's stdout, stderr, exit code.

    `vaultmem` is this interpreter's `python -m vaultmem`, so the code under test is what runs.
    """
    out = home / "steps"
    out.mkdir(parents=True, exist_ok=True)
    script = [f'vaultmem() {{ {shlex.quote(sys.executable)} -m vaultmem "$@"; }}']
    for number, line in enumerate(lines):
        # the line on its own, so a trailing comment cannot swallow the redirections
        script += ["{", line, f'}} >{out}/{number}.out 2>{out}/{number}.err; echo $? >{out}/{number}.rc']
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1", **(env_extra or {})}
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, check=True, timeout=600)
    return [{"line": line, "out": (out / f"{n}.out").read_text(encoding="utf-8"),
             "err": (out / f"{n}.err").read_text(encoding="utf-8"), "rc": int((out / f"{n}.rc").read_text())}
            for n, line in enumerate(lines)]


def _step(steps: list[dict], starts: str) -> dict:
    found = [s for s in steps if s["line"].startswith(starts)]
    assert len(found) == 1, f"one tour line starts with {starts!r}"
    return found[0]


def test_the_readme_tour_runs_as_written_and_each_step_does_what_it_says(tmp_path):
    lang, body = _blocks(README, "## Five-minute tour")[0]
    assert lang == "bash"
    home = tmp_path / "home"
    steps = _run_steps(_command_lines(body), REPO, home)
    for s in steps:
        assert s["rc"] == 0, s
        assert "Traceback" not in s["err"], s
    vault = Vault(home / "notes" / "agent-memory")
    by_text = {m.content.strip(): m for m in vault.list()}

    entity = (vault.root / "entities" / "张三.md").read_text(encoding="utf-8")
    assert "老张" in entity and "Zhang San" in entity
    old = next(m for text, m in by_text.items() if "CT2024-0876" in text)
    new = next(m for text, m in by_text.items() if "CT2024-0991" in text)
    assert old.status == "superseded" and "contract" in old.tags
    assert "supersedes" in _step(steps, 'vaultmem remember "记住')["out"]
    prefers = by_text["Prefers concise answers"]
    assert prefers.lifecycle == "preference" and prefers.score == 8
    deploy = next(m for text, m in by_text.items() if text.startswith("部署窗口"))
    assert "ops" in deploy.tags  # the text came through stdin
    fee = by_text["ACK may add a management fee"]
    assert fee.status == "active" and fee.path.startswith("memories/")  # staged, then confirmed

    assert "CT2024-0991" in _step(steps, "vaultmem recall CT2024")["out"].splitlines()[0]
    assert "CT2024-0991" in _step(steps, "vaultmem recall --tag contract")["out"]  # the supersede kept the tag
    recent = _step(steps, 'vaultmem recall "最近的部署"')["out"]
    assert recent.startswith("1. 部署窗口") and "final=" in recent
    context = _step(steps, 'vaultmem context')["out"]
    assert "[from" in context and "CT2024-0991" in context
    assert _step(steps, "vaultmem ask")["out"].startswith("CT2024-0991")
    shown = _step(steps, "vaultmem show")["out"]
    assert shown.splitlines()[0] == new.title and f"id={new.id}" in shown
    listed = _step(steps, "vaultmem list")["out"]
    assert new.title in listed and "superseded" in listed
    assert _step(steps, "vaultmem remember --batch")["out"].strip() == \
        "8 memories: 7 created, 0 merged, 1 unchanged"
    assert by_text["The staging database is db-staging-02, reachable only over the VPN"].tags == ["ops", "database"]
    assert by_text["A blog post claims the vendor will raise prices in Q1"].status == "candidate"
    assert "memories by status" in _step(steps, "vaultmem stats")["out"]
    assert _step(steps, "vaultmem doctor")["out"].strip().endswith("ok")

    lang, code = _blocks(README, "From Python:")[0]
    assert lang == "python"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOME": str(home)})
    assert ran.returncode == 0, ran.stderr
    assert "Deploy window is Tuesday 22" in ran.stdout.splitlines()[0]


def _sample_copy(where: Path) -> Path:
    target = where / "sample-vault"
    shutil.copytree(REPO / "sample-vault", target, ignore=shutil.ignore_patterns("cache", "devices"))
    return target


def test_the_first_block_recalls_from_the_sample_vault(tmp_path):
    """Its second half, after the install (the fresh-clone check runs the install itself)."""
    setup = _command_lines(_blocks(README)[0][1])
    assert len(setup) == 2 and setup[0].startswith("pip install -e . && vaultmem ")
    _sample_copy(tmp_path)
    [step] = _run_steps([setup[0].split(" && ", 1)[1]], tmp_path, tmp_path / "home")
    assert step["rc"] == 0, step
    assert step["out"].startswith("1. 客户张三合同编号 CT2024-0876") and "final=" in step["out"]


def test_the_welcome_notes_command_runs_on_the_sample_vault(tmp_path):
    lines = [line for _, body in _blocks(WELCOME) for line in _command_lines(body) if line.startswith("vaultmem")]
    assert lines
    _sample_copy(tmp_path)
    for step in _run_steps(lines, tmp_path, tmp_path / "home"):
        assert step["rc"] == 0, step
        assert "CT2024-0876" in step["out"] and "final=" in step["out"]




def _example(words) -> tuple[list[str], list[str]]:
    """The example lines of a command's help: the commands, and the output they show."""
    helped = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "200"})
    assert helped.exit_code == 0
    text = helped.output.split("Example", 1)
    assert len(text) == 2, f"{' '.join(words)}: no example in its help"
    body = text[1].split("\n\n", 1)[0].splitlines()[1:]
    commands = [line.strip() for line in body if line.strip().startswith("vaultmem ")]
    shown = [line.strip().rstrip("…").strip() for line in body if line.strip() and line.strip() not in commands]
    return commands, shown


COMMANDS = cli_commands()


def test_every_command_is_in_this_list():
    assert {" ".join(w) for w in COMMANDS} >= {"init", "remember", "recall", "context", "ask", "show", "list",
                                               "reindex", "stats", "doctor", "confirm", "mcp", "entity add",
                                               "hermes install", "hermes status", "hermes uninstall",
                                               "device show", "device reset", "sync", "export", "import"}


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_help_example_runs_as_written_on_the_sample_vault(tmp_path, words):
    commands, shown = _example(words)
    assert commands and all(c.split()[1:1 + len(words)] == list(words) for c in commands)
    _sample_copy(tmp_path)
    shutil.copytree(REPO / "examples", tmp_path / "examples")  # examples run from a clone
    home = tmp_path / "home"
    home.mkdir()
    # an MCP server ends when its input closes: here at once, after its start
    lines = [c + " </dev/null" for c in commands]
    if words[0] in ("sync", "hook"):  # these work in a git repository: the sample vault is made one first
        subprocess.run(["git", "init", "-q", str(tmp_path / "sample-vault")], check=True)
    # the device id from this test's home, as a user's is ("" is unset): `device reset` may change it
    for step in _run_steps(lines, tmp_path, home, {"VAULTMEM_VAULT": "sample-vault", "VAULTMEM_DEVICE_ID": ""}):
        assert step["rc"] == 0, step
        assert "Error" not in step["err"], step
        for fragment in shown:
            assert fragment in step["out"], (fragment, step["out"])


def _options(line: str) -> list[str]:
    """A README command line's arguments, substitutions and comments taken out."""
    line = re.sub(r'"\$\(.*?\)"', "X", line).split("  #")[0]
    return shlex.split(line)[1:]


def test_every_vaultmem_command_in_the_readme_names_options_that_exist():
    lines = [line.split("| ")[-1] if "| vaultmem" in line else line for _, body in _blocks(README)
             for line in _command_lines(body)]
    lines = [line for line in lines if line.startswith("vaultmem ")]
    assert len(lines) > 20
    for line in lines:
        result = CliRunner().invoke(app, [*_options(line), "--help"])
        assert result.exit_code == 0, (line, result.output)


def test_the_batch_fields_table_is_the_one_the_writer_checks():
    table = README[README.index("### Batches"):].split("\n\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)
    assert sorted(rows) == sorted(BATCH_FIELDS)


def test_the_example_batch_uses_only_documented_fields():
    items = [json.loads(line) for line in (REPO / "examples" / "memories.jsonl").read_text(encoding="utf-8")
             .splitlines() if line.strip()]
    assert items and all(set(item) <= BATCH_FIELDS for item in items)


def test_the_readme_counts_the_sample_vaults_memories_as_stats_does(sample):
    """Issue 28 item 7: the README said 67 where `vaultmem stats --vault sample-vault` says 68."""
    said = re.search(r"`sample-vault/` \((\d+) memories", README)
    assert said, "the README's first paragraph no longer counts the sample vault's memories"
    sample.refresh()
    assert int(said[1]) == sample.stats()["by_kind"]["memory"]
