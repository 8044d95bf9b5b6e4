"""Runs where Obsidian users are (issue 13): no POSIX-only call without a fallback.

Windows cannot be run here, so a child interpreter is stripped of what Windows lacks (fcntl,
os.register_at_fork, os.sync, os.uname) before vaultmem is imported, with a stand-in for msvcrt's
byte-range lock, and then does what a user does: init, remember, a batch, recall, the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import vaultmem.store.files as files

_WINDOWS_LIKE = r"""
import os, sys, types
import fcntl as _fcntl
# the standard library tells Windows by whether msvcrt imports: what it imports is loaded first
import subprocess, multiprocessing.connection, multiprocessing.pool, concurrent.futures.process
import numpy  # it asks uname for the Linux kernel it runs on, as it would not on Windows
for name in ("register_at_fork", "sync", "uname"):
    if hasattr(os, name):
        delattr(os, name)
sys.modules["fcntl"] = None  # `import fcntl` raises ImportError, as on Windows
msvcrt = types.ModuleType("msvcrt")  # msvcrt.locking over flock: the same exclusive, non-blocking lock
msvcrt.LK_NBLCK, msvcrt.LK_UNLCK = 2, 0
def locking(fd, mode, nbytes):
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB if mode == 2 else _fcntl.LOCK_UN)
    except BlockingIOError:
        raise PermissionError(13, "locked") from None
msvcrt.locking = locking
sys.modules["msvcrt"] = msvcrt

from vaultmem import Vault
import vaultmem.store.writelock as writelock
assert writelock.fcntl is None, "the POSIX lock was used"
vault = Vault.init(sys.argv[1])
first = vault.remember("The staging database listens on port 5433", tags=["ops"])
batch = vault.remember_many([{"text": "Deploys freeze on Fridays after 15:00"},
                             {"text": "The VPN gateway is vpn-eu-3"}])
hits = vault.recall("staging port")
assert hits and hits[0].id == first.id, hits
assert [r.action for r in batch] == ["created", "created"]
vault.close()
sys.argv = ["vaultmem", "recall", "VPN gateway", "--vault", sys.argv[1], "--json"]
from vaultmem.__main__ import main
main()
"""


def test_vaultmem_imports_and_works_without_what_windows_lacks(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH")}
    env.update(VAULTMEM_HOME=str(tmp_path / "home"), VAULTMEM_DEVICE_ID="win-like-0001")
    done = subprocess.run([sys.executable, "-c", _WINDOWS_LIKE, str(tmp_path / "vault")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "vpn-eu-3" in done.stdout


def test_folders_are_not_opened_to_be_synced_where_the_os_cannot(tmp_path, monkeypatch):
    real_open = os.open

    def windows_open(path, flags, *args):
        if os.path.isdir(path):
            raise PermissionError(13, "Permission denied", str(path))  # what Windows says for a folder
        return real_open(path, flags, *args)

    monkeypatch.setattr(files, "_FOLDERS_SYNC", False)
    monkeypatch.setattr(os, "open", windows_open)
    files.fsync_path(tmp_path)  # no error: skipped
    note = tmp_path / "note.md"
    files.atomic_write(note, b"text", durable=True)
    assert note.read_bytes() == b"text"


def test_a_batch_syncs_file_by_file_where_the_os_has_no_sync(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.delattr(os, "sync", raising=False)
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    paths = [tmp_path / f"n{i}.md" for i in range(3)]
    for path in paths:
        path.write_bytes(b"x")
    files.sync_files([*paths, tmp_path / "gone.md"])
    assert len(synced) == 4  # three files and their folder; a file gone meanwhile is skipped
