"""`vaultmem sync` (issue 16 item 1): the vault's memories through git, with the `git` executable.

The first sync sets the vault up for memory sync: `.gitattributes` sends the memory notes to
vaultmem's merge driver and keeps line endings LF, the clone's `.git/config` names the driver (git
keeps drivers per clone: a fresh clone has none until its first sync, and `doctor` says so), and
`.gitignore` keeps Obsidian's per-machine workspace files out. Then it commits what changed (a
message naming the device and the counts), pulls with a merge (never a rebase, whose swapped sides
would invert "ours" and "theirs" for the driver), pushes, and refreshes the index. Device logs never
conflict: each device appends only to its own folder, and sync commits them so recalls do not
leave the work tree dirty.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import VaultmemError

if TYPE_CHECKING:
    from ..store.store import Store as Vault

DRIVER = "vaultmem"
ATTRIBUTES_MARK = "# vaultmem: memory notes merge field by field (vaultmem merge-driver)"
IGNORED = (".obsidian/workspace*.json", ".obsidian/cache", ".trash/")
_NOTE_ROLES = ("memories", "inbox", "archive", "entities")


class GitError(VaultmemError):
    """git is missing, the vault is in no repository, or a git command failed."""


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    if shutil.which("git") is None:
        raise GitError("vaultmem sync needs git: install it (https://git-scm.com) and run sync again")
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return done


def repository(vault: Vault) -> Path:
    """The work tree the vault is in; GitError when there is none (or no git)."""
    done = _git(vault.root, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise GitError(f"{vault.root} is not in a git repository: run `git init` there (and add a remote to "
                       "share it), then `vaultmem sync`")
    return Path(done.stdout.strip())


def driver_command() -> str:
    """The merge driver as git runs it: this interpreter, so a GUI client without the venv on PATH works."""
    return f'"{sys.executable}" -m vaultmem merge-driver %O %A %B %P'


def driver_configured(repo: Path) -> bool:
    """Whether this clone's .git/config names vaultmem's merge driver."""
    return bool(_git(repo, "config", "--get", f"merge.{DRIVER}.driver", check=False).stdout.strip())


def attributes_text(vault: Vault) -> str:
    """The .gitattributes lines vaultmem needs, relative to the vault root."""
    lines = [ATTRIBUTES_MARK]
    for role in _NOTE_ROLES:
        if role in vault.folders:
            lines.append(f"{vault.relpath(vault.folders[role])}/**/*.md merge={DRIVER}")
    lines.append("*.md text eol=lf")
    return "\n".join(lines) + "\n"


def set_up(vault: Vault, repo: Path, dry_run: bool = False) -> list[str]:
    """Write what memory sync needs that is missing; the names of what was (or would be) set up."""
    from ..store.files import atomic_write

    done = []
    attributes = vault.root / ".gitattributes"
    held = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    if ATTRIBUTES_MARK not in held:
        done.append(".gitattributes")
        if not dry_run:
            atomic_write(attributes, (held + ("\n" if held and not held.endswith("\n") else "") +
                                      attributes_text(vault)).encode("utf-8"))
    ignore = vault.root / ".gitignore"
    kept = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    missing = [line for line in IGNORED if line not in kept.splitlines()]
    if missing:
        done.append(".gitignore")
        if not dry_run:
            atomic_write(ignore, (kept + ("\n" if kept and not kept.endswith("\n") else "") +
                                  "\n".join(missing) + "\n").encode("utf-8"))
    if not driver_configured(repo):
        done.append(f"merge.{DRIVER}.driver")
        if not dry_run:
            _git(repo, "config", f"merge.{DRIVER}.name", "vaultmem memory notes")
            _git(repo, "config", f"merge.{DRIVER}.driver", driver_command())
            _git(repo, "config", f"merge.{DRIVER}.recursive", "text")
    return done


def _changes(vault: Vault, repo: Path) -> dict[str, int]:
    """What a commit would hold under the vault: notes added, changed and removed, and other files."""
    rel = os.path.relpath(vault.root, repo)
    lines = _git(repo, "status", "--porcelain", "--untracked-files=all", "--", rel).stdout.splitlines()
    counts = {"new": 0, "changed": 0, "removed": 0, "other": 0}
    for line in lines:
        code, path = line[:2], line[3:].strip('"')
        if not path.endswith(".md"):
            counts["other"] += 1
        elif "?" in code or "A" in code:
            counts["new"] += 1
        elif "D" in code:
            counts["removed"] += 1
        else:
            counts["changed"] += 1
    return counts


def _upstream(repo: Path) -> bool:
    return _git(repo, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", check=False).returncode == 0


def sync(vault: Vault, dry_run: bool = False) -> dict[str, Any]:
    """Set up, commit, pull (merge), push, refresh; what was done, as a dict for --json."""
    repo = repository(vault)
    report: dict[str, Any] = {"repository": str(repo), "device": vault.device, "dry_run": dry_run,
                              "set_up": set_up(vault, repo, dry_run)}
    changes = _changes(vault, repo)
    report["changes"] = changes
    upstream = _upstream(repo)
    report["remote"] = upstream
    if dry_run:
        return report
    rel = os.path.relpath(vault.root, repo)
    _git(repo, "add", "--all", "--", rel)
    staged = _git(repo, "diff", "--cached", "--quiet", "--", rel, check=False).returncode != 0
    if staged:
        message = (f"vaultmem sync from {vault.device}: {changes['new']} new, {changes['changed']} changed, "
                   f"{changes['removed']} removed notes")
        # a machine with no git identity still syncs: the commit names the device
        identity = [] if _has_identity(repo) else ["-c", "user.name=vaultmem", "-c", f"user.email=vaultmem@{vault.device}"]
        _git(repo, *identity, "commit", "-q", "-m", message)
        report["commit"] = message
    if upstream:
        pulled = _git(repo, "pull", "--no-rebase", "--no-edit", "-q", check=False)
        if pulled.returncode != 0:
            raise GitError("git pull could not merge: `git status` shows what is left; resolve it, commit, and "
                           f"run `vaultmem sync` again ({(pulled.stderr or pulled.stdout).strip()[-300:]})")
        _git(repo, "push", "-q")
        report["pulled"] = report["pushed"] = True
    elif remotes := _git(repo, "remote").stdout.split():
        _git(repo, "push", "-q", "-u", remotes[0], "HEAD")  # the first push sets the upstream
        report["pushed"] = True
    vault.refresh()
    return report


def sync_warnings(vault: Vault) -> list[str]:
    """Git keeps merge drivers per clone: a vault set up for sync whose clone lacks the driver would
    merge its notes line by line (conflict markers) without a word. `doctor` reports this."""
    attributes = vault.root / ".gitattributes"
    try:
        if f"merge={DRIVER}" not in attributes.read_text(encoding="utf-8"):
            return []
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    try:
        if driver_configured(repository(vault)):
            return []
    except GitError as error:
        return [f".gitattributes names vaultmem's merge driver but {error}"]
    return ["this clone has no vaultmem merge driver in .git/config (git keeps drivers per clone), so git would "
            "merge notes line by line: run `vaultmem sync` once here"]


def _has_identity(repo: Path) -> bool:
    return bool(_git(repo, "config", "user.email", check=False).stdout.strip())


__all__ = ["GitError", "attributes_text", "driver_command", "driver_configured", "repository", "set_up", "sync",
           "sync_warnings"]
