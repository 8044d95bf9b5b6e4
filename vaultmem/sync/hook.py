"""The pre-commit hook (issue 16 item 4): `vaultmem hook install` writes a git pre-commit hook into the
vault's repository that runs `vaultmem hook run`, a check of the STAGED notes only: it refuses a commit
that holds git's conflict markers in a note, a secret (the write policy's detectors, as `doctor
--strict`), or deletes more notes than `sync.max_deletions` (config; default 50).

The hook names this interpreter by its absolute path, so it works from a pipx or venv install and from
a GUI git client whose PATH has no `vaultmem`. A pre-commit hook that is not vaultmem's is never
overwritten: install refuses, and with --force keeps it as `pre-commit.before-vaultmem`, which the
hook runs first (its failure stops the commit); uninstall puts it back.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError
from ..notes.conflicts import conflict_marker_line
from ..store.files import atomic_write
from ..store.index.records import build_record
from .gitsync import repository, run_git

if TYPE_CHECKING:
    from ..store.store import Store

__all__ = ["HookReport", "check_staged", "install", "uninstall"]

HOOK_MARK = "# vaultmem pre-commit hook"
CHAINED = "pre-commit.before-vaultmem"
_NOTE_ROLES = ("memories", "entities", "episodes", "inbox", "archive")


@dataclass
class HookReport:
    """What the staged notes hold that a commit must not: markers, secrets, too many deletions."""

    checked: int = 0
    conflict_markers: list[dict[str, Any]] = field(default_factory=list)  # {path, line}
    secrets: list[dict[str, Any]] = field(default_factory=list)  # {path, kinds}
    deleted: int = 0
    max_deletions: int = 0

    @property
    def ok(self) -> bool:
        """True when the commit may go ahead."""
        return not (self.conflict_markers or self.secrets or self.deleted > self.max_deletions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**asdict(self), "ok": self.ok}


# -- install / uninstall ------------------------------------------------------------------------------------
def _hooks_dir(vault: Store) -> Path:
    """The repository's hooks folder (core.hooksPath honoured)."""
    repo = repository(vault)
    where = run_git(repo, "rev-parse", "--git-path", "hooks").stdout.strip()
    return (repo / where).resolve()


def hook_text(vault: Store) -> str:
    """The hook script: the chained hook first, then this interpreter's `vaultmem hook run`."""
    python, root = shlex.quote(sys.executable), shlex.quote(str(vault.root))
    return (f"#!/bin/sh\n{HOOK_MARK}: refuses conflict markers, secrets and mass deletions in the staged notes.\n"
            "# Written by `vaultmem hook install`; `vaultmem hook uninstall` removes it (and restores a kept hook).\n"
            f'chained="$(dirname "$0")/{CHAINED}"\n'
            'if [ -x "$chained" ]; then "$chained" "$@" || exit $?; fi\n'
            f"exec {python} -m vaultmem hook run --vault {root}\n")


def _ours(path: Path) -> bool:
    try:
        return HOOK_MARK in path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False


def install(vault: Store, force: bool = False) -> dict[str, Any]:
    """Write the pre-commit hook; {"hook", "action": installed | updated, "chained": the kept hook or None}.

    Raises VaultmemError: another pre-commit hook is there (without force), or one is kept already.
    """
    hooks = _hooks_dir(vault)
    hook, chained = hooks / "pre-commit", hooks / CHAINED
    action = "updated" if _ours(hook) else "installed"
    if hook.exists() and action == "installed":
        if not force:
            raise VaultmemError(f"{hook} is a pre-commit hook of its own; `vaultmem hook install --force` keeps it "
                                f"as {CHAINED} and runs it before vaultmem's check")
        if chained.exists():
            raise VaultmemError(f"{hook} and {chained} both exist; move one away, then install again")
        os.replace(hook, chained)
    hooks.mkdir(parents=True, exist_ok=True)
    atomic_write(hook, hook_text(vault).encode("utf-8"))
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return {"hook": str(hook), "action": action, "chained": str(chained) if chained.exists() else None}


def uninstall(vault: Store) -> dict[str, Any]:
    """Remove vaultmem's hook and put a chained one back; {"hook", "action": removed | absent, "restored"}.

    Raises VaultmemError: the pre-commit hook there is not vaultmem's.
    """
    hooks = _hooks_dir(vault)
    hook, chained = hooks / "pre-commit", hooks / CHAINED
    if hook.exists() and not _ours(hook):
        raise VaultmemError(f"{hook} is not vaultmem's hook; it was left as it is")
    action = "removed" if hook.exists() else "absent"
    if hook.exists():
        hook.unlink()
    restored = None
    if chained.exists():
        os.replace(chained, hook)
        restored = str(hook)
    return {"hook": str(hook), "action": action, "restored": restored}


# -- the check ----------------------------------------------------------------------------------------------
def check_staged(vault: Store) -> HookReport:
    """Check what `git commit` would commit of the vault's notes (the index git commits from, so a
    partial or `commit -a` commit is checked as it will be)."""
    from ..write.policy import Policy

    _absolute_git_env()
    report = HookReport(max_deletions=int(vault.settings.sync.max_deletions))
    policy = Policy.of(vault)
    staged, report.deleted = _staged(vault)
    for rel, data in zip(staged, _blobs(vault, staged)):
        report.checked += 1
        text = data.decode("utf-8", "replace")
        line = conflict_marker_line(text)
        if line is not None:
            report.conflict_markers.append({"path": rel, "line": line})
        kind, role = vault.kind_of(vault.root / rel)
        # all of the body, however long: a secret past write.max_text_chars would still be committed
        r = build_record(data, rel, kind, role, (0, len(data)), vault.settings.defaults, max_chars=None)
        kinds = policy.note_secrets(r.title, r.body, r.value, r.source, r.tags, r.aliases)
        if kinds:
            report.secrets.append({"path": rel, "kinds": kinds})
    return report


def _absolute_git_env() -> None:
    """git hands a hook GIT_DIR / GIT_INDEX_FILE that may be relative to the repository's top; the
    checks run git from the vault's folder, where a relative one would point elsewhere."""
    for name in ("GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE"):
        if os.environ.get(name):
            os.environ[name] = os.path.abspath(os.environ[name])


def _is_note(vault: Store, rel: str) -> bool:
    return rel.endswith(".md") and vault.folder_of(vault.root / rel) in _NOTE_ROLES


def _staged(vault: Store) -> tuple[list[str], int]:
    """The staged notes added or changed (vault-relative paths) and how many notes the commit deletes
    (a rename is no deletion)."""
    out = run_git(vault.root, "diff", "--cached", "--name-status", "-z", "-M", "--relative", "--no-ext-diff").stdout
    fields = out.split("\0")
    changed, deleted, i = [], 0, 0
    while i < len(fields) - 1:
        status = fields[i]
        paths = fields[i + 1:i + (3 if status[:1] in "RC" else 2)]
        i += 1 + len(paths)
        if status == "D":
            deleted += _is_note(vault, paths[0])
        elif _is_note(vault, paths[-1]):
            changed.append(paths[-1])
    return changed, deleted


def _blobs(vault: Store, paths: list[str]) -> list[bytes]:
    """The staged bytes of these files, through one `git cat-file --batch`."""
    if not paths:
        return []
    request = "".join(f":./{p}\n" for p in paths).encode("utf-8")
    done = subprocess.run(["git", "-C", str(vault.root), "cat-file", "--batch"], input=request,
                          capture_output=True, check=False)
    out, at, blobs = done.stdout, 0, []
    for _ in paths:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) < 3 or header[1] != b"blob":
            blobs.append(b"")
            at = end + 1
            continue
        size = int(header[2])
        blobs.append(out[end + 1:end + 1 + size])
        at = end + 1 + size + 1
    return blobs
