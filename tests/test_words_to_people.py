"""What a person reads is in the words of the notes (issue 30 item 6): every command's text output (not
--json), on the sample vault with English and Chinese repeats added, holds no index term (a stem such as
"latt" for "latte", a run of CJK n-grams), no hash where a name is expected, no Python repr, and a note's
id only where a person needs it to name the note. A command added to the CLI must be walked here or say
why it is not."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.surfaces.cli import app
from vaultmem.text.terms import stem

from .conftest import REPO, SAMPLE, cli_commands

REPEATS = ["Ordered an oat milk latte at Blue Bottle", "Ordered another oat milk latte before the standup",
           "Ordered an oat milk latte with pastries", "早上点了燕麦拿铁", "下午又点了燕麦拿铁", "周五点了燕麦拿铁"]
NOTE_ID = "01M4VZM6H0TGH81P9ENBTTGEQN"  # 客户张三合同编号 CT2024-0876 in the sample vault

# Each command, the invocations walked (in this order, on one vault: later ones see what earlier ones
# wrote) and the exit code each must end with. {v} is the vault, {t} a scratch folder, {id} NOTE_ID.
WALKED: dict[str, list[tuple[list[str], int]]] = {
    "init": [(["init", "{t}/fresh"], 0)],
    "remember": [(["remember", "Prefers green tea in the afternoon", "--tag", "drinks", "--explain"], 0),
                 (["remember", "记住：老张的合同编号改为 CT2024-0991", "--explain"], 0),
                 (["remember", "Maybe the office moves to Hangzhou", "--candidate"], 0)],
    "confirm": [(["confirm", "Maybe the office moves to Hangzhou"], 0)],
    "recall": [(["recall", "latte", "--explain"], 0), (["recall", "合同编号", "--explain"], 0),
               (["recall", "--tag", "contract"], 0), (["recall", "zzzqqq nothing"], 0)],
    "context": [(["context", "张三的合同", "--budget", "200"], 0), (["context", "oat milk latte"], 0)],
    "ask": [(["ask", "张三的合同编号是多少"], 0), (["ask", "what is the coffee budget?"], 0)],
    "show": [(["show", "{id}"], 0), (["show", "Coffee order"], 0), (["show", "no such note at all"], 1)],
    "why": [(["why", "{id}"], 0), (["why", "Coffee order"], 0), (["why", "no such note at all"], 1)],
    "list": [(["list", "--limit", "5"], 0), (["list", "--all-tags"], 0)],
    "reindex": [(["reindex"], 0)],
    "embed": [(["embed"], 0)],
    "doctor": [(["doctor"], 3)],
    "lint": [(["lint"], 3)],
    "watch": [(["watch", "--stop-after", "0.3"], 0)],
    "repair": [(["repair", "--dry-run"], 0)],
    "feedback": [(["feedback", "Coffee order", "useful", "--note", "right order"], 0),
                 (["feedback", "Dark mode everywhere", "outdated"], 0)],
    "correct": [(["correct", "Timezone is Asia Shanghai", "Timezone is Europe/Berlin since December"], 0)],
    "pin": [(["pin", "Uses vim as main editor"], 0)],
    "unpin": [(["unpin", "Uses vim as main editor"], 0)],
    "stats": [(["stats"], 0), (["stats", "--lambda"], 0)],
    "forget": [(["forget", "--tag", "weekly_sync", "--until", "2026-10-10", "--reason", "old", "--dry-run"], 0),
               (["forget", "Prefers tables for comparisons", "--reason", "asked to drop it"], 0)],
    "restore": [(["restore", "Prefers tables for comparisons"], 0)],
    "decay": [(["decay", "--factor", "0.5", "--tag", "weekly_sync", "--reason", "old meeting notes"], 0)],
    "gc": [(["gc", "--dry-run"], 0)],
    "consolidate": [(["consolidate", "--dry-run"], 3), (["consolidate"], 0), (["consolidate", "--dry-run"], 0)],
    "entity add": [(["entity", "add", "Blue Bottle", "--alias", "BB"], 0)],
    "import": [(["import", str(REPO / "examples" / "hermes")], 0)],
    "merge-driver": [(["merge-driver", "{t}/base.md", "{t}/ours.md", "{t}/theirs.md", "memories/Coffee order.md"], 0)],
    "hook install": [(["hook", "install"], 0)],
    "hook run": [(["hook", "run"], 0)],
    "hook uninstall": [(["hook", "uninstall"], 0)],
    "sync": [(["sync", "--dry-run"], 0), (["sync"], 0), (["sync"], 0)],
    "hooks list": [(["hooks", "list"], 0)],
    "hooks enable": [(["hooks", "enable", "count"], 0)],
    "hooks test": [(["hooks", "test", "count"], 0)],
    "hooks disable": [(["hooks", "disable", "count"], 0), (["hooks", "disable", "count"], 0)],
    "token add": [(["token", "add", "phone", "--namespace", "agent-a", "--scope", "read-write"], 0)],
    "token list": [(["token", "list"], 0)],
    "token revoke": [(["token", "revoke", "phone"], 0), (["token", "revoke", "phone"], 0)],
    "hermes install": [(["hermes", "install", "--hermes-home", "{t}/hermes"], 0)],
    "hermes status": [(["hermes", "status", "--hermes-home", "{t}/hermes"], 0)],
    "hermes uninstall": [(["hermes", "uninstall", "--hermes-home", "{t}/hermes"], 0)],
    "device show": [(["device", "show"], 0)],
    "device reset": [(["device", "reset"], 0)],
    "encrypt": [(["encrypt", "Uses vim as main editor", "--passphrase-file", str(REPO / "examples" / "passphrase.txt")], 0)],
    "rekey": [(["rekey", "--passphrase-file", str(REPO / "examples" / "passphrase.txt"),
                "--new-passphrase-file", str(REPO / "examples" / "passphrase.txt")], 0)],
    "decrypt": [(["decrypt", "--namespace", "shared", "--passphrase-file", str(REPO / "examples" / "passphrase.txt")], 0)],
    "dashboard": [(["dashboard"], 0), (["dashboard"], 0)],
    "report": [(["report", "--out", "{t}/report", "--note", "{id}"], 0), (["report", "--out", "{t}/report", "--lint"], 0)],
}
NOT_WALKED = {
    "mcp": "speaks MCP's JSON-RPC on stdio, nothing for a person to read (its tools: tests/test_mcp.py)",
    "export": "writes JSON lines for `vaultmem import`, data rather than text for a person",
    "serve": "an HTTP server: its one line for people is `Serving URL`; its answers are JSON (tests/test_http.py)",
}
# Where a note's id is meant, and in which form: beside the note just written or answered from, for the
# person to name it later; show's own id line; the id two files share, and the command that forgets one;
# a pin event's note the vault no longer has (no title left to show).
_ID = "[0-9A-HJKMNP-TV-Z]{26}"
IDS_SHOWN = {"remember": [rf"\({_ID}\)$"], "confirm": [rf"\({_ID}\)$"], "correct": [rf"\({_ID}\)"],
             "ask": [rf", {_ID}\)$"], "show": [rf"\bid[=:] ?{_ID}\b"], "why": [rf"\bid[=:] ?{_ID}\b"], "stats": [rf"{_ID} \(gone\)"],
             "doctor": [rf"^duplicate id {_ID}:", rf"vaultmem forget {_ID} "],
             "lint": [rf"^duplicate id {_ID}:", rf"vaultmem forget {_ID} "],
             "encrypt": [rf"Encrypted {_ID}\.md$"], "rekey": [rf"Encrypted {_ID}\.md$"]}  # an encrypted note's name
# Where a hash-like string is the point: the token is printed once for the person to keep.
HASHES_SHOWN = {"token add"}

ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
HEX = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b")
REPRS = re.compile(r"\{'|\['|'\]|\(\'|\bNone\b|: (?:True|False)\b|PosixPath\(|WindowsPath\(|datetime\.|frozenset\("
                   r"|Counter\(|object at 0x|<class '|dict_(?:keys|values|items)\(|\\u[0-9a-f]{4}|\\x[0-9a-f]{2}")
WORD = re.compile(r"[A-Za-z]{3,}")
CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


def test_every_command_is_walked_or_says_why_not():
    commands = {" ".join(words) for words in cli_commands()}
    assert commands == set(WALKED) | set(NOT_WALKED), "classify the new command in WALKED or NOT_WALKED"
    assert not set(WALKED) & set(NOT_WALKED)


def _words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)}


def _stems(vault: Path) -> set[str]:
    """Index terms of the vault's words that are no word of the vault, nor of vaultmem's own messages."""
    said = _words("\n".join(REPEATS))
    for path in vault.rglob("*"):
        if path.is_file() and ".git" not in path.parts and "cache" not in path.parts:
            said |= _words(path.read_text(encoding="utf-8", errors="replace"))
    return {stem(w) for w in said} - said - _message_words()


def _message_words() -> set[str]:
    """The words of vaultmem's string literals (its messages, labels, help), docstrings and comments aside."""
    found: set[str] = set()
    for source in (REPO / "vaultmem").rglob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        documented = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                                                   ast.AsyncFunctionDef))]
        docstrings = {id(n.body[0].value) for n in documented if n.body and isinstance(n.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found |= _words(node.value)
    return found


def _ngram_runs(line: str) -> list[str]:
    """CJK pieces of a line that overlap as n-grams do ("燕麦, 麦拿, 拿铁"): an index's terms, not words."""
    runs = CJK_RUN.findall(line)
    return [f"{a}, {b}" for a, b in zip(runs, runs[1:]) if 2 <= len(a) <= 3 and a[1:] == b[:len(a) - 1]]


def leaks(command: str, output: str, stems: set[str]) -> list[str]:
    """What a person should not read in one command's text output."""
    found = [f"repr {m.group()!r}" for m in REPRS.finditer(output)]
    found += [f"stem {w!r}" for w in sorted(_words(output) & stems)]
    found += [f"n-grams {run!r}" for line in output.splitlines() for run in _ngram_runs(line)]
    rest = output
    for form in IDS_SHOWN.get(command, []):
        rest = re.sub(form, "", rest, flags=re.MULTILINE)
    found += [f"note id {m.group()}" for m in ULID.finditer(rest)]
    if command not in HASHES_SHOWN:
        found += [f"hash {m.group()}" for m in HEX.finditer(output)]
    return found


@pytest.fixture
def prepared(tmp_path) -> tuple[Path, Path]:
    return prepare(tmp_path)


def prepare(tmp_path: Path) -> tuple[Path, Path]:
    """The sample vault in a git repository with a remote, the repeats added, a person's note with a dead
    link and a password, a second copy of a note; and a scratch folder."""
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("cache", "devices"))
    vault = Vault(root)
    for day, text in enumerate(REPEATS, 1):
        vault.remember(text, source="hermes", timestamp=f"2026-05-{day:02d}T10:00:00+00:00")
    vault.close()
    coffee = root / "memories" / "Coffee order.md"
    shutil.copy(coffee, coffee.with_name("Coffee order 2.md"))  # iCloud's copy: one id in two files
    (root / "memories" / "Standup notes.md").write_text(  # a person's note: a dead link, a pasted password
        "Standup moved to 09:30, ask [[Nobody Here]]\npassword: Tr0ub4dor&3horse\n", encoding="utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    note = (root / "memories" / "Coffee order.md").read_bytes()
    for side in ("base", "ours", "theirs"):
        (scratch / f"{side}.md").write_bytes(note)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", str(origin)]):
        subprocess.run(["git", "-C", str(root), *args], check=True)
    return root, scratch


def walk(root: Path, scratch: Path) -> list[tuple[str, list[str], int, str]]:
    """Run every walked invocation; (command, arguments, exit code, text printed on stdout and stderr)."""
    runner = CliRunner()
    done = []
    for command, invocations in WALKED.items():
        for args, _ in invocations:
            args = [a.format(v=root, t=scratch, id=NOTE_ID) for a in args]
            vault = [] if command.startswith(("init", "hermes", "device", "merge-driver")) else ["--vault", str(root)]
            # a device id from the environment cannot be reset: this machine's own file is
            env = {"NO_COLOR": "1", **({"VAULTMEM_DEVICE_ID": None} if command == "device reset" else {})}
            result = runner.invoke(app, [*args, *vault], env=env)
            done.append((command, args, result.exit_code, result.output))
    return done


def test_no_command_shows_a_person_stems_hashes_reprs_or_stray_ids(prepared):
    root, scratch = prepared
    stems = _stems(root)
    assert {"latt", "pastri"} <= stems  # the check would see a stem of the repeats
    expected = [code for invocations in WALKED.values() for _, code in invocations]
    problems = []
    for (command, args, code, output), wanted in zip(walk(root, scratch), expected):
        if code != wanted or not (output.strip() or command == "merge-driver"):
            problems.append(f"{' '.join(args)}: exit {code}, not {wanted}: {output}")
        problems += [f"{' '.join(args)}: {leak}" for leak in leaks(command, output, stems)]
    assert not problems, "\n".join(problems)


def test_the_check_finds_what_it_looks_for():
    stems = {"latt", "pastri"}
    said = ("3 notes sharing latt, oat, pastri\n了燕, 拿铁, 点了, 燕麦, 麦拿\n{'a': 1} None PosixPath('/x')\n"
            "from 01M4VZM6H0TGH81P9ENBTTGEQN, hash 3f2a9c0d1e4b5a6f7089")
    found = leaks("recall", said, stems)
    assert {"stem 'latt'", "stem 'pastri'", "note id 01M4VZM6H0TGH81P9ENBTTGEQN", "hash 3f2a9c0d1e4b5a6f7089",
            "repr \"{'\"", "repr 'None'", "repr 'PosixPath('"} <= set(found)
    assert any(item.startswith("n-grams") for item in found)
    fine = "created: memories/Ordered oat milk latte.md, pastries, 点了燕麦拿铁 (01M4VZM6H0TGH81P9ENBTTGEQN)"
    assert leaks("remember", fine, stems) == []
    assert leaks("correct", fine + ", supersedes 01M2ZGQ2W0J8P5Z6H08ABP48S6", stems) == [
        "note id 01M2ZGQ2W0J8P5Z6H08ABP48S6"]  # the new note's id is meant, the old one's name is wanted
    assert leaks("remember", fine + ", supersedes 01M2ZGQ2W0J8P5Z6H08ABP48S6", stems) == [
        "note id 01M4VZM6H0TGH81P9ENBTTGEQN", "note id 01M2ZGQ2W0J8P5Z6H08ABP48S6"]  # its id only at the end


# -- what the agents' surfaces say ------------------------------------------------------------------
# Fields that are references for the client to send back (a note's id, the hash a forget checks), not text
REFERENCES = {"id", "ids", "supersedes", "sha"}


def _texts(data, key: str = ""):
    """The strings of a tool's answer that a model relays to a person (references aside)."""
    if isinstance(data, dict):
        for name, value in data.items():
            yield from _texts(value, name)
    elif isinstance(data, list):
        for value in data:
            yield from _texts(value, key)
    elif isinstance(data, str) and key not in REFERENCES:
        yield data


def test_mcp_and_hermes_answers_say_the_words_of_the_notes(prepared, tmp_path):
    import json

    import anyio
    from mcp import Client

    from vaultmem.hermes import VaultmemProvider
    from vaultmem.surfaces.mcp import build_server

    root, _ = prepared
    stems = _stems(root)
    said: list[tuple[str, str]] = []
    server = build_server(Vault(root))
    calls = [("remember", {"text": "Ordered an oat milk latte at the airport"}), ("recall", {"query": "latte"}),
             ("ask", {"question": "张三的合同编号是多少"}), ("ask", {"question": "what is the coffee budget?"}),
             ("context", {"query": "燕麦拿铁"}), ("show", {"ref": "Coffee order"}), ("show", {"ref": "no such note"}),
             ("feedback", {"ref": "Coffee order", "verdict": "outdated"}),
             ("forget", {"ids": ["Coffee order"], "reason": "asked", "dry_run": True}), ("forget", {"reason": "x"})]

    async def ask_all():
        async with Client(server) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in calls]

    for (tool, _), result in zip(calls, anyio.run(ask_all)):
        text = result.content[0].text
        said += [(f"mcp {tool}", piece) for piece in
                 ([text] if result.is_error else _texts(json.loads(text)))]

    home = tmp_path / "hermes-home"
    home.mkdir()
    provider = VaultmemProvider()
    provider.save_config({"vault": str(root)}, str(home))
    provider.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="coder")
    try:
        for tool, arguments in [("vault_remember", {"content": "点了燕麦拿铁 at the airport"}),
                                ("vault_recall", {"query": "latte"}), ("vault_ask", {"question": "张三的合同编号是多少"}),
                                ("vault_ask", {"question": "what is the coffee budget?"}),
                                ("vault_feedback", {"id": "Coffee order", "verdict": "useful"}),
                                ("vault_forget", {"ids": ["Coffee order"], "reason": "asked", "dry_run": True}),
                                ("vault_recall", {"query": ""}), ("vault_nothing", {})]:
            said += [(f"hermes {tool}", piece) for piece in _texts(json.loads(provider.handle_tool_call(tool, arguments)))]
        said.append(("hermes prefetch", provider.prefetch("oat milk latte", session_id="s1")))
    finally:
        provider.shutdown()
    assert any("latte" in piece for _, piece in said) and any("燕麦拿铁" in piece for _, piece in said)
    problems = [f"{where}: {leak} in {piece[:80]!r}" for where, piece in said for leak in leaks(where, piece, stems)]
    assert not problems, "\n".join(problems)
