"""The `git` executable, run for the vault: sync (sync/gitsync.py), a memory's story (overview/story.py) and
recall --as-of (recall/asof.py) read the history through it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..errors import VaultmemError

__all__ = ["GitError", "git_reason", "read_blobs", "run_git"]


class GitError(VaultmemError):
    """git is missing, the vault is in no repository, or a git command failed."""


def run_git(repo: Path, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`git -C repo args…` (text in and out, never a prompt); GitError with git's own reason when it
    fails and `check`, or when git is not installed."""
    if shutil.which("git") is None:
        raise GitError("vaultmem sync needs git: install it (https://git-scm.com) and run sync again")
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {git_reason(done)}")
    return done


def git_reason(done: subprocess.CompletedProcess) -> str:
    """The line of a failed git's output that says why: its `fatal:` or `error:` line, else its last."""
    said = (done.stderr or done.stdout).strip().splitlines()
    return next((line for line in said if line.startswith(("fatal:", "error:"))), said[-1] if said else "")


def read_blobs(repo: Path, shas: set[str]) -> dict[str, bytes]:
    """Each blob's bytes, read through one `git cat-file --batch`."""
    if not shas:
        return {}
    order = sorted(shas)
    out = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], input="".join(f"{s}\n" for s in order).encode(),
                         capture_output=True, check=True).stdout
    blobs, at = {}, 0
    for sha in order:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs[sha] = out[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
    return blobs


