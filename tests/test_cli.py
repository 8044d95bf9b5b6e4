"""The command line as a user meets it: help everywhere, JSON for scripts, clean errors, exit codes."""

import json

import pytest
from typer.testing import CliRunner

from vaultmem.surfaces.cli import app


runner = CliRunner()
COMMANDS = ["init", "remember", "recall", "context", "ask", "show", "list", "reindex", "stats", "doctor", "confirm", "mcp",
            "entity", "entity add"]
RESULT_FIELDS = {"action", "id", "path", "title", "supersedes", "type", "value", "score", "status", "tags",
                 "redacted"}
HIT_FIELDS = {"id", "path", "title", "content", "tags", "source", "lifecycle", "timestamp", "score", "effective",
              "final"}


def run(*args, env=None, input=None):
    return runner.invoke(app, list(args), env=env, input=input)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = run(*command.split(), "--help")
    assert result.exit_code == 0
    assert "Usage" in result.output and len(result.output) > 100


def test_top_level_help_lists_every_command():
    result = run("--help")
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command.split()[0] in result.output


def test_init_remember_recall_round_trip(tmp_path):
    root = str(tmp_path / "v")
    assert run("init", root).exit_code == 0
    made = run("remember", "客户张三的合同编号是 CT2024-0876", "--tag", "contract", "--vault", root, "--json")
    assert made.exit_code == 0, made.output
    created = json.loads(made.output)
    assert created["action"] == "created"
    again = json.loads(run("remember", "客户张三的合同编号是 CT2024-0876", "--vault", root, "--json").output)
    assert again["action"] == "unchanged" and again["id"] == created["id"]
    found = run("recall", "CT2024", "--vault", root, "--json")
    hits = json.loads(found.output)
    assert hits[0]["id"] == created["id"] and HIT_FIELDS <= set(hits[0])


def test_the_vault_comes_from_the_environment(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    assert run("remember", "from env", env={"VAULTMEM_VAULT": root}).exit_code == 0
    result = run("recall", "env", "--json", env={"OBSIDIAN_VAULT_PATH": root})
    assert json.loads(result.output)[0]["content"] == "from env"


@pytest.mark.parametrize("args, message", [
    (["recall", "x"], "no vault given"),
    (["recall", "x", "--vault", "/definitely/not/here"], "does not exist"),
    (["show", "../../etc/passwd", "--vault", "{vault}"], "outside the vault"),
    (["show", "NOPE", "--vault", "{vault}"], "no note matches"),
    (["remember", "--batch", "missing.jsonl", "--vault", "{vault}"], "no such file"),
    (["recall", "x", "--since", "yesterday-ish", "--vault", "{vault}"], "invalid date"),
    (["forget", "--reason", "gone", "--vault", "{vault}"],
     "say what to forget: give ID, --tag, --query, --since, --until or --source"),
    (["forget", "--reason", " ", "--tag", "x", "--vault", "{vault}"], "give --reason TEXT"),
])
def test_errors_are_one_sentence_and_a_nonzero_exit(tmp_path, args, message):
    root = str(tmp_path / "v")
    run("init", root)
    result = run(*[a.replace("{vault}", root) for a in args])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_explain_prints_channels_decay_and_final(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    run("remember", "The CPU alert fires above 90% for 5 minutes", "--vault", root)
    out = run("recall", "CPU alert", "--explain", "--vault", root).output
    for word in ("lexical=", "tags=", "graph=", "strength=", "decay=", "effective=", "final="):
        assert word in out


def test_batch_from_stdin(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    lines = "\n".join(json.dumps({"text": f"batch memory {i}", "tags": ["imp"]}) for i in range(5))
    result = run("remember", "--batch", "-", "--vault", root, "--json", input=lines + "\n" + lines)
    data = json.loads(result.output)
    assert (data["total"], data["created"], data["unchanged"]) == (10, 5, 5)
    assert [r["action"] for r in data["results"]] == ["created"] * 5 + ["unchanged"] * 5
    assert data["results"][0]["tags"] == ["imp"] and data["results"][0]["path"].startswith("memories/")
    assert len(result.output.splitlines()) == 4 + 2 + 10 + 2  # one result a line, scripts can also grep it


def test_a_write_result_as_json_has_every_field_but_an_unasked_explanation():
    from dataclasses import asdict

    from vaultmem.write.pipeline import WriteResult

    plain = WriteResult("created", "01J", "memories/x.md", "x", None, "id", "CT1", 6.5, "active", ["a"], ["password"])
    expected = asdict(plain)
    del expected["explain"]
    assert plain.to_dict() == expected and list(plain.to_dict()) == list(expected)
    explained = WriteResult("merged", "01J", "memories/x.md", "x", explain={"decision": "merged"})
    assert explained.to_dict() == asdict(explained)


def test_show_list_stats_reindex(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    made = json.loads(run("remember", "Prefers tea", "--tag", "pref", "--vault", root, "--json").output)
    shown = json.loads(run("show", made["id"], "--vault", root, "--json").output)
    assert shown["content"].strip() == "Prefers tea"
    listed = json.loads(run("list", "--tag", "pref", "--vault", root, "--json").output)
    assert [m["id"] for m in listed] == [made["id"]]
    tags = json.loads(run("list", "--all-tags", "--vault", root, "--json").output)
    assert tags == {"pref": 1}
    stats = json.loads(run("stats", "--vault", root, "--json").output)
    assert stats["by_kind"]["memory"] == 1
    re = json.loads(run("reindex", "--vault", root, "--json").output)
    assert re["scanned"] >= 1


def test_doctor_exit_code_reports_problems(tmp_path):
    root = tmp_path / "v"
    run("init", str(root))
    assert run("doctor", "--vault", str(root)).exit_code == 0
    (root / "memories" / "bad.md").write_text("---\nid: [\n---\nbody\n", encoding="utf-8")
    result = run("doctor", "--vault", str(root), "--json")
    assert result.exit_code == 3
    assert json.loads(result.output)["unparsable"][0]["path"] == "memories/bad.md"


def _subprocess(*args, env_extra=None):
    import os
    import subprocess
    import sys

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_the_fast_recall_path_matches_the_full_cli_and_skips_typer(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    run("remember", "The CPU alert fires above 90% for 5 minutes", "--tag", "ops", "--vault", root)
    run("remember", "CPU quota for the batch cluster is 64 cores", "--vault", root)
    args = ["recall", "CPU alert", "--tag", "ops", "--limit", "5", "--no-refresh", "--vault", root, "--json"]
    full = json.loads(run(*args).output)
    fast = _subprocess(*args)
    assert fast.returncode == 0, fast.stderr
    fast_hits = json.loads(fast.stdout)
    assert [(h["id"], h["channels"]["lexical"]) for h in fast_hits] == [(h["id"], h["channels"]["lexical"])
                                                                        for h in full]
    probe = _subprocess("recall", "CPU", "--vault", root, "--json", env_extra={"PYTHONVERBOSE": "1"})
    assert "import 'typer'" not in probe.stderr
    assert "import 'rapidfuzz'" not in probe.stderr


def test_the_fast_path_hands_bad_arguments_to_the_full_cli(tmp_path):
    result = _subprocess("recall", "x", "--limit", "zero", "--vault", str(tmp_path))
    assert result.returncode == 2
    assert "Invalid value" in result.stderr or "invalid" in result.stderr.lower()
    missing = _subprocess("recall", "x", "--vault", str(tmp_path / "nope"))
    assert missing.returncode == 1 and missing.stderr.startswith("Error:") and "Traceback" not in missing.stderr


def test_an_unexpected_failure_is_still_one_line(tmp_path, monkeypatch):
    from vaultmem import Vault

    root = str(tmp_path / "v")
    run("init", root)

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Vault, "recall", broken)
    result = run("recall", "x", "--vault", root)
    assert result.exit_code == 1
    assert result.output.strip() == "Error: unexpected RuntimeError: disk on fire (VAULTMEM_DEBUG=1 shows the traceback)"


def test_remember_json_says_what_happened_and_explain_says_why(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    assert run("entity", "add", "张三", "--alias", "老张", "--vault", root).exit_code == 0
    first = json.loads(run("remember", "记住：老张的合同编号是 CT2024-0771", "--vault", root, "--json").output)
    assert set(first) == RESULT_FIELDS
    assert (first["action"], first["type"], first["value"], first["supersedes"]) == \
        ("created", "contract_id", "CT2024-0771", None)
    second = json.loads(run("remember", "张三的合同编号改为 CT2024-0876", "--vault", root, "--json").output)
    assert second["action"] == "created" and second["supersedes"] == first["id"]
    again = json.loads(run("remember", "张三的合同编号改为 CT2024-0876", "--vault", root, "--json").output)
    assert again["action"] == "unchanged" and again["id"] == second["id"]
    explained = run("remember", "Remember: the VPN gateway is vpn.example.com", "--vault", root, "--explain")
    assert explained.exit_code == 0
    assert "importance +5" in explained.output and "decision: new note" in explained.output
    recalled = json.loads(run("recall", "合同编号", "--include-superseded", "--vault", root, "--json").output)
    assert {h["id"] for h in recalled} >= {first["id"], second["id"]}


def test_a_blocked_tag_exits_non_zero_and_a_secret_is_never_echoed(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    refused = run("remember", "db login", "--tag", "password", "--vault", root)
    assert refused.exit_code == 1 and refused.output.startswith("Error: tag 'password' is blocked")
    made = run("remember", "The staging password: Tr0ub4dor&3x", "--vault", root, "--json")
    assert made.exit_code == 0 and "Tr0ub4dor&3x" not in made.output
    assert json.loads(made.output)["redacted"] == ["password"]
    fast = _subprocess("remember", "root 密码是qaz123WSX", "--vault", root)
    assert fast.returncode == 0 and "qaz123WSX" not in fast.stdout + fast.stderr


def test_confirm_promotes_a_candidate_from_the_inbox(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    staged = json.loads(run("remember", "ACK may add a management fee", "--source", "web", "--vault", root,
                            "--json").output)
    assert staged["status"] == "candidate" and staged["path"].startswith("inbox/")
    assert json.loads(run("recall", "management fee", "--vault", root, "--json").output) == []
    done = run("confirm", staged["id"], "--vault", root, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["path"].startswith("memories/")
    assert [h["id"] for h in json.loads(run("recall", "management fee", "--vault", root, "--json").output)] == \
        [staged["id"]]
    again = run("confirm", staged["id"], "--vault", root)
    assert again.exit_code == 1 and "not a candidate" in again.output


def test_the_fast_remember_path_skips_typer_and_numpy(tmp_path):
    root = str(tmp_path / "v")
    run("init", root)
    run("remember", "The first memory builds the index", "--vault", root)  # (building it needs numpy)
    probe = _subprocess("remember", "Deploy window is Friday 22:00", "--tag", "ops", "--vault", root, "--json",
                        env_extra={"PYTHONVERBOSE": "1"})
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout)["action"] == "created"
    assert "import 'typer'" not in probe.stderr and "import 'numpy'" not in probe.stderr
    assert "import 'yaml'" not in probe.stderr  # notes are read and written without it


def test_the_fast_paths_leave_without_teardown_and_lose_nothing(tmp_path):
    """A one-off remember or recall ends with os._exit once its output is flushed: the note, the
    day note and the index transaction must all be there for the next process, and errors keep
    their exit code and message."""
    root = str(tmp_path / "v")
    run("init", root)
    made = _subprocess("remember", "Deploy window is Friday 22:00 for CT2024-0876", "--vault", root, "--json")
    assert made.returncode == 0, made.stderr
    result = json.loads(made.stdout)  # the whole JSON document was flushed
    assert result["action"] == "created" and (tmp_path / "v" / result["path"]).is_file()
    assert list((tmp_path / "v" / "episodes").glob("*.md"))
    found = _subprocess("recall", "deploy window", "--no-refresh", "--vault", root, "--json")
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in json.loads(found.stdout)] == [result["id"]]  # the index row was committed
    again = _subprocess("remember", "Deploy window is Friday 22:00 for CT2024-0876", "--vault", root, "--json")
    assert json.loads(again.stdout)["action"] == "unchanged"
    refused = _subprocess("remember", "the admin secret", "--tag", "password", "--vault", root)
    assert refused.returncode == 1 and refused.stderr.startswith("Error:") and refused.stdout == ""


def test_a_fast_path_started_with_its_output_closed_still_writes_and_exits_cleanly(tmp_path):
    import subprocess
    import sys

    root = str(tmp_path / "v")
    run("init", root)
    command = [sys.executable, "-m", "vaultmem", "remember", "Deploy window is Friday 22:00", "--vault", root]
    closed = subprocess.run(["bash", "-c", '"$@" >&-', "bash", *command], capture_output=True, text=True, timeout=120)
    assert closed.returncode == 0 and "Traceback" not in closed.stderr
    assert len(list((tmp_path / "v" / "memories").glob("*.md"))) == 1


def test_show_prints_the_properties_as_the_note_says_them_not_python_reprs(sample):
    """Issue 28 item 6: lists in brackets as the note has them, times in ISO 8601 (--json too)."""
    shown = run("show", "01M4VZM6H0TGH81P9ENBTTGEQN", "--vault", str(sample.root))
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    for line in ("  timestamp: 2026-10-14T09:15:00+08:00", "  tags: [contract, client_zhangsan, 合同]",
                 "  version: [laptop-3f2a:1]", "  supersedes: [[客户张三合同编号 CT2024-0771]]", "  score: 8.0"):
        assert line in lines
    assert "['" not in shown.output and "datetime" not in shown.output
    data = json.loads(run("show", "01M4VZM6H0TGH81P9ENBTTGEQN", "--vault", str(sample.root), "--json").output)
    assert data["meta"]["timestamp"] == data["timestamp"] == "2026-10-14T09:15:00+08:00"
    assert data["meta"]["tags"] == ["contract", "client_zhangsan", "合同"]


def test_show_prints_an_obsidian_style_note_yaml_ish_too(vault):
    from .conftest import write_note

    write_note(vault, "memories/hand.md", "---\nid: HAND\ntags:\n  - alpha\n  - beta\ndone: true\ndue: 2026-11-03\n"
                                          "owner:\ncreated: 2026-11-01 09:30:00\n---\nA hand-written note.\n")
    vault.refresh()
    lines = run("show", "HAND", "--vault", str(vault.root)).output.splitlines()
    for line in ("  tags: [alpha, beta]", "  done: true", "  due: 2026-11-03", "  owner:",
                 "  created: 2026-11-01T09:30:00"):
        assert line in lines
