"""The surfaces on one vault at once (issue 12): the Hermes provider's threads, CLI processes, an MCP
server over stdio and another process using the library, all writing and reading. Nothing is lost or written twice, and
nobody fails with "database is locked"."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from vaultmem import Vault
from vaultmem.hermes import VaultmemProvider

from .conftest import REPO

WORDS = ("harbor lantern copper meadow violet engine canyon pillow orbit walnut falcon ribbon glacier "
         "saddle tunnel pepper marble quartz shadow timber velvet anchor blossom cobalt dune ember fjord "
         "garnet hollow island jasper kettle lagoon mosaic nectar oyster prairie quiver raven summit "
         "thistle umber vessel willow yonder zephyr basalt cedar dahlia").split()
CLI_PROCS, CLI_EACH = 3, 5
THREADS, THREAD_EACH = 4, 6
LIB_EACH = 8
MCP_EACH = 6


def _memory(marker: str, seed: int) -> str:
    """A memory no other one restates: six random words, then a marker word found nowhere else."""
    rng = random.Random(seed)
    return " ".join(rng.sample(WORDS, 6)) + f" logbook entry {marker}"


def _marker(group: str, n: int) -> str:
    return "zq" + group + "".join("abcdefghij"[int(d)] for d in f"{n:03d}")


_LIBRARY_WRITER = r"""
import sys
from vaultmem import Vault
vault = Vault(sys.argv[1])
for text in sys.argv[2:]:
    vault.remember(text, source="other-agent")
    vault.recall(text.split()[0], limit=5)
print("ok")
"""


def _mcp_client(vault_root: Path, texts: list[str], errors: list[str]) -> None:
    """An MCP client driving a real `vaultmem-mcp` child process: remember each text, recall after each."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem.surfaces.mcp", "--vault", str(vault_root)],
                                   env={name: os.environ[name] for name in ("VAULTMEM_HOME", "VAULTMEM_DEVICE_ID")},
                                   cwd=str(REPO))

    async def session() -> None:
        async with Client(params, mode="legacy") as client:
            for text in texts:
                for tool, arguments in (("remember", {"text": text}), ("recall", {"query": text.split()[4], "limit": 3})):
                    result = await client.call_tool(tool, arguments)
                    if result.is_error:
                        errors.append(f"mcp {tool}: {result.content[0].text}")

    anyio.run(session)


def test_provider_threads_cli_processes_an_mcp_server_and_another_library_process_lose_nothing(tmp_path, monkeypatch):
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    vault_root = tmp_path / "vault"
    Vault.init(vault_root)
    provider = VaultmemProvider()
    provider.save_config({"vault": str(vault_root)}, str(home))
    provider.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="coder")
    expected: dict[str, str] = {}
    env = {k: v for k, v in os.environ.items() if k not in ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH")}

    cli_texts = {p: [] for p in range(CLI_PROCS)}
    for p in range(CLI_PROCS):
        for n in range(CLI_EACH):
            marker = _marker("c" + "abc"[p], n)
            cli_texts[p].append(_memory(marker, hash(marker) % 10_000))
            expected[marker] = cli_texts[p][-1]
    lib_texts = []
    for n in range(LIB_EACH):
        marker = _marker("l", n)
        lib_texts.append(_memory(marker, 7_000 + n))
        expected[marker] = lib_texts[-1]
    mcp_texts = []
    for n in range(MCP_EACH):
        marker = _marker("m", n)
        mcp_texts.append(_memory(marker, 8_000 + n))
        expected[marker] = mcp_texts[-1]
    thread_texts = {t: [] for t in range(THREADS)}
    for t in range(THREADS):
        for n in range(THREAD_EACH):
            marker = _marker("t" + "abcd"[t], n)
            thread_texts[t].append(_memory(marker, 9_000 + 100 * t + n))
            expected[marker] = thread_texts[t][-1]

    procs = []
    for p in range(CLI_PROCS):
        lines = [f"{sys.executable} -m vaultmem remember --vault '{vault_root}' '{t}' && "
                 f"{sys.executable} -m vaultmem recall --vault '{vault_root}' '{t.split()[1]}' --limit 3 >/dev/null"
                 for t in cli_texts[p]]
        procs.append(subprocess.Popen(["bash", "-ec", "\n".join(lines)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    procs.append(subprocess.Popen([sys.executable, "-c", _LIBRARY_WRITER, str(vault_root), *lib_texts], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))

    errors: list[str] = []

    def agent_thread(t: int) -> None:
        for n, text in enumerate(thread_texts[t]):
            if n % 2:
                answer = json.loads(provider.handle_tool_call("vault_remember", {"content": text}))
                if "error" in answer:
                    errors.append(answer["error"])
            else:  # through the background turn writer: an explicit cue makes the turn memorable
                provider.sync_turn(f"Remember this: {text}", "Noted.", session_id="s1")
            provider.prefetch(text.split()[2], session_id="s1")
            found = json.loads(provider.handle_tool_call("vault_recall", {"query": text.split()[3], "limit": 3}))
            if "error" in found:
                errors.append(found["error"])

    threads = [threading.Thread(target=agent_thread, args=(t,)) for t in range(THREADS)]
    threads.append(threading.Thread(target=_mcp_client, args=(vault_root, mcp_texts, errors)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    outputs = [proc.communicate(timeout=300) for proc in procs]
    provider.on_session_end([])
    provider.shutdown()

    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
        assert "database is locked" not in err and "Traceback" not in err, err[-2000:]
    assert not errors, errors
    notes = [p.read_text(encoding="utf-8") for p in (vault_root / "memories").glob("*.md")]
    holding = {marker: sum(marker in text for text in notes) for marker in expected}
    assert {m: c for m, c in holding.items() if c != 1} == {}, "each memory in exactly one note"
    report = Vault(vault_root).doctor()
    assert report.ok, report
