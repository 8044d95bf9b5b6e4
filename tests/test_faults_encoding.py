"""Input that is not UTF-8 text, and a cache that is not a folder: one clear error, nothing written.

Issue 28 item 5. What a user meets at the command line (the fast path and the full CLI), and the same
through the API (a JSON `\\ud800` escape reaches it as a lone surrogate). Text is UTF-8 whatever the
locale says: notes and JSON lines are UTF-8, and no decoder can tell which 8-bit code page a byte came
from, so the error names the byte and where it is, and never guesses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from vaultmem.errors import NotText
from vaultmem.surfaces.cli import app
from vaultmem.sync.exchange import import_source

from .conftest import REPO

LATIN1 = "café memory".encode("latin-1")  # é is 0xe9 at byte offset 3: no UTF-8


def files(vault) -> dict[str, bytes]:
    """Every file of the vault but the rebuildable cache: notes, config, device logs (the audit log)."""
    return {p.relative_to(vault.root).as_posix(): p.read_bytes() for p in sorted(vault.root.rglob("*"))
            if p.is_file() and ".vaultmem/cache" not in p.relative_to(vault.root).as_posix()}


def vaultmem(*args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """The real command, as a user runs it (the fast path for the plain forms of recall and remember)."""
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], input=stdin, capture_output=True, cwd=REPO,
                          timeout=120)


def cli(*args: str, stdin: bytes | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


def one_error(stderr: bytes | str) -> str:
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    lines = text.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "unexpected" not in text, text
    return lines[0]


def test_invalid_utf8_on_stdin_names_the_byte_and_writes_nothing(sample):
    before = files(sample)
    fast = vaultmem("remember", "-", "--entity", "Zed", "--vault", str(sample.root), stdin=LATIN1)
    full = cli("remember", "-", "--entity", "Zed", "--candidate", "--vault", str(sample.root), stdin=LATIN1)
    assert fast.returncode == 1 and full.exit_code == 1
    for said in (one_error(fast.stderr), one_error(full.output)):
        assert "stdin is not UTF-8 text: byte 0xe9 at byte offset 3 (line 1)" in said and "iconv" in said
    assert files(sample) == before  # not even the entity note the memory names


def test_a_command_line_argument_that_is_not_utf8_names_its_byte(sample):
    before = files(sample)
    done = vaultmem("remember", b"caf\xe9 arg", "--vault", str(sample.root))
    tagged = vaultmem("remember", "plain words", "--tag", b"t\xe9g", "--vault", str(sample.root))
    assert done.returncode == 1 and "text is not UTF-8 text: byte 0xe9 at byte offset 3" in one_error(done.stderr)
    assert tagged.returncode == 1 and "tags is not UTF-8 text: byte 0xe9 at byte offset 1" in one_error(tagged.stderr)
    assert files(sample) == before


def test_a_lone_surrogate_through_the_api_is_refused_before_any_note(vault):
    with pytest.raises(NotText, match=r"memory: text is not UTF-8 text: a lone surrogate U\+D800 at character 2"):
        vault.remember(json.loads('"a \\ud800 b"'), entity=["Zed"])
    with pytest.raises(NotText, match="item 2: tags"):
        vault.remember_many([{"text": "first"}, {"text": "second", "tags": ["ok", "\udce9"]}])
    assert not [p for p in vault.root.rglob("*.md") if "templates" not in p.parts]


def test_a_binary_batch_file_and_a_latin1_batch_on_stdin_write_nothing(sample, tmp_path):
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"text": "fine"}\n\x7fELF\x02\x01\x01\x00\xd0\xcf\x11\xe0')
    before = files(sample)
    from_file = cli("remember", "--batch", str(binary), "--vault", str(sample.root))
    piped = cli("remember", "--batch", "-", "--vault", str(sample.root),
                stdin=b'{"text": "first line is fine"}\n{"text": "' + LATIN1 + b'"}\n')
    assert from_file.exit_code == 1 and f"{binary} is not UTF-8 text: byte 0xd0 at byte offset 25 (line 2)" in \
        one_error(from_file.output)
    assert piped.exit_code == 1 and "stdin is not UTF-8 text: byte 0xe9 at byte offset 44 (line 2)" in \
        one_error(piped.output)
    assert files(sample) == before  # the good first lines neither


def test_a_batch_that_is_a_directory_says_so(sample, tmp_path):
    done = cli("remember", "--batch", str(tmp_path), "--vault", str(sample.root))
    assert done.exit_code == 1 and f"{tmp_path} is a directory; --batch takes a JSON-lines file" in one_error(done.output)
    missing = cli("remember", "--batch", str(tmp_path / "nope.jsonl"), "--vault", str(sample.root))
    assert missing.exit_code == 1 and "no such file" in one_error(missing.output)


def test_a_batch_from_a_pipe_is_read(vault):
    """`--batch <(generate)` names a pipe, not a regular file: it is read, not refused as missing."""
    done = subprocess.run(f"{sys.executable} -m vaultmem remember --batch <(printf '%s\\n' "
                          f"'{{\"text\": \"the Lisbon office opens at 9\"}}') --vault '{vault.root}'",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and "1 created" in done.stdout, done.stderr


def test_importing_a_binary_export_or_a_latin1_hermes_file_writes_nothing(sample, tmp_path):
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff")
    hermes = tmp_path / "hermes"
    hermes.mkdir()
    (hermes / "MEMORY.md").write_bytes("The office opens at 9\n§\n".encode() + LATIN1)
    before = files(sample)
    for source, byte in ((binary, "0x89"), (hermes, "0xe9")):
        done = cli("import", str(source), "--vault", str(sample.root))
        assert done.exit_code == 1 and f"is not UTF-8 text: byte {byte}" in one_error(done.output)
    assert files(sample) == before


def test_an_export_with_one_bad_line_at_the_end_restores_nothing(sample, vault, tmp_path):
    good = tmp_path / "export.jsonl"
    assert cli("export", "--vault", str(sample.root), "--out", str(good)).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    record = {"schema": "vaultmem-export/1", "path": "memories/x.md", "kind": "memory", "id": "X", "text": "@"}
    bad.write_bytes(good.read_bytes() + json.dumps(record).encode().replace(b"@", b"caf\xe9") + b"\n")
    with pytest.raises(NotText, match=r"line \d+\)"):
        import_source(vault, bad)
    assert not list(vault.folders["memories"].glob("*.md"))


def test_a_cache_that_is_a_file_is_one_clear_error_everywhere(sample):
    cache = sample.root / ".vaultmem" / "cache"
    shutil.rmtree(cache)
    cache.write_text("a sync tool put a file here\n")
    before = files(sample)
    said = [one_error(vaultmem("recall", "deploy", "--vault", str(sample.root)).stderr)]
    for command in (["remember", "hello there"], ["doctor"], ["stats"], ["list"], ["init"]):
        done = cli(*command, "--vault", str(sample.root)) if command != ["init"] else cli("init", str(sample.root))
        assert done.exit_code == 1
        said.append(one_error(done.output))
    assert all(f"{cache} is a file, where vaultmem keeps its index folder: move it away" in s for s in said), said
    assert files(sample) == before and cache.read_text() == "a sync tool put a file here\n"


def test_a_lock_file_that_is_a_folder_is_named(sample):
    lock = sample.root / ".vaultmem" / "cache" / "write.lock"
    lock.mkdir(parents=True)
    done = cli("recall", "deploy", "--vault", str(sample.root))
    assert done.exit_code == 1 and f"{lock} is a folder, where vaultmem keeps its index lock file" in \
        one_error(done.output)
