"""Kill points and a full disk, the way SQLite tests itself: every file-system step a write takes is,
in turn, the one where the process dies (or the disk is full); then the process starts again and
the same write is retried. Whatever the step, no note is torn, the memory ends up stored exactly
once, and every note still parses.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from vaultmem import Vault
from vaultmem.errors import VaultmemError
from vaultmem.notes.note import parse_note

CALLS = ("open", "write", "fsync", "replace", "link", "rename")


class _Killed(BaseException):
    """The process dies here (BaseException: no `except Exception` of ours may swallow it)."""


class _Switch:
    """Counts the file-system calls that touch the vault, and fails the k-th one."""

    def __init__(self, root: Path, at: int | None, fail: BaseException | None):
        self.root, self.at, self.fail, self.count = str(root), at, fail, 0

    def _touches(self, target) -> bool:
        if isinstance(target, int):
            try:
                target = os.readlink(f"/proc/self/fd/{target}")
            except OSError:
                return False
        return os.fspath(target).startswith(self.root) if isinstance(target, (str, bytes, os.PathLike)) else False

    def wrap(self, name: str, real):
        def call(*args, **kwargs):
            if args and self._touches(args[0]) and not (name == "open" and not args[1] & os.O_CREAT):
                self.count += 1
                if self.count == self.at:
                    raise self.fail
            return real(*args, **kwargs)
        return call


def _run(monkeypatch, root: Path, at: int | None, fail: BaseException | None, action) -> _Switch:
    switch = _Switch(root, at, fail)
    with monkeypatch.context() as patch:
        for name in CALLS:
            patch.setattr(os, name, switch.wrap(name, getattr(os, name)))
        try:
            action(Vault(root))
        except (_Killed, VaultmemError, OSError):
            pass
    return switch


def _memories_holding(root: Path, text: str) -> list[Path]:
    found = []
    for path in (root / "memories").glob("*.md"):
        note = parse_note(path.read_bytes())  # a torn note would not parse
        if text in note.body:
            found.append(path)
    return found


SCENARIOS = {
    "new": ("The staging database is db-staging-02", {}),
    "merge": ("The finance team pays invoice INV-2024-0042 by bank transfer", {"tags": ["billing"]}),
    "supersede": ("客户张三的合同编号是 CT2024-0991", {}),
}


@pytest.fixture
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("template") / "vault"
    vault = Vault.init(root)
    vault.add_entity("张三", aliases=["老张"])
    vault.remember("客户张三的合同编号是 CT2024-0876", tags=["contract"], lifecycle="fact")
    vault.remember("Invoice INV-2024-0042 is due on 2026-12-20", tags=["billing"])
    vault.close()
    return root


def _fresh(template: Path, where: Path) -> Path:
    shutil.copytree(template, where)
    return where


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("fail", ["kill", "disk-full"])
def test_every_step_of_a_remember_can_fail_and_the_retry_stores_it_once(template, tmp_path, monkeypatch,
                                                                         scenario, fail):
    text, fields = SCENARIOS[scenario]

    def remember(vault: Vault) -> None:
        vault.remember(text, **fields)

    steps = _run(monkeypatch, _fresh(template, tmp_path / "count"), None, None, remember).count
    assert steps >= 5  # the note, its fsyncs and rename, the day note, the logs
    error = _Killed() if fail == "kill" else OSError(errno.ENOSPC, "No space left on device")
    for at in range(1, steps + 1):
        root = _fresh(template, tmp_path / f"at-{at}")
        _run(monkeypatch, root, at, error, remember)
        again = Vault(root)  # the process starts again
        remember(again)
        held = _memories_holding(root, text.replace("客户张三", "客户[[张三]]"))
        assert len(held) == 1, f"{fail} at step {at} of {steps}: {len(held)} notes hold the memory"
        if scenario == "supersede":
            notes = [parse_note(p.read_bytes()) for p in (root / "memories").glob("*.md")]
            old = [n.meta["status"] for n in notes if n.meta.get("value") == "CT2024-0876"]
            assert old == ["superseded"], f"{fail} at step {at}"
        assert not again.doctor().duplicate_ids
