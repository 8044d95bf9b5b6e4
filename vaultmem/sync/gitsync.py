"""`vaultmem sync` (issue 16 item 1): the vault's memories through git, with the `git` executable.

The first sync sets the vault up for memory sync: `.gitattributes` sends the memory notes to
vaultmem's merge driver and keeps line endings LF, the clone's `.git/config` names the driver (git
keeps drivers per clone: a fresh clone has none until its first sync, and `doctor` says so), and
`.gitignore` keeps Obsidian's per-machine workspace files out. Then it commits what changed (a
message naming the device and the counts), pulls with a merge (never a rebase, whose swapped sides
would invert "ours" and "theirs" for the driver), pushes, and refreshes the index. Device logs never
conflict: each device appends only to its own folder, and sync commits them so recalls do not
leave the work tree dirty. Last, the git history cache (store/githistory.py) reads the new commits.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.gitcmd import GitError, read_blobs, run_git
from ..store.gitcmd import git_reason as _reason
from ..store.githistory import git_history

if TYPE_CHECKING:
    from ..store.store import Store as Vault

DRIVER = "vaultmem"
SYNC_LOCK = "vaultmem-sync.lock"  # in the git folder: one sync at a time per clone
ATTRIBUTES_MARK = "# vaultmem: memory notes merge field by field (vaultmem merge-driver)"
IGNORED = (".obsidian/workspace*.json", ".obsidian/cache", ".trash/")
_NOTE_ROLES = ("memories", "inbox", "archive", "entities", "episodes")


def repository(vault: Vault) -> Path:
    """The work tree the vault is in; GitError when there is none (or no git)."""
    done = run_git(vault.root, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise GitError(f"{vault.root} is not in a git repository: run `git init` there (and add a remote to "
                       "share it), then `vaultmem sync`")
    return Path(done.stdout.strip())


def driver_command() -> str:
    """The merge driver as git runs it: this interpreter, so a GUI client without the venv on PATH works.
    Git hands the line to a shell: the path is quoted for one as the pre-commit hook's is (a space, a `$`
    or a quote in it stays part of the path)."""
    return f"{shlex.quote(sys.executable)} -m vaultmem merge-driver %O %A %B %P"


def driver_configured(repo: Path) -> bool:
    """Whether this clone's .git/config names vaultmem's merge driver."""
    return bool(run_git(repo, "config", "--get", f"merge.{DRIVER}.driver", check=False).stdout.strip())


def attributes_text(vault: Vault) -> str:
    """The .gitattributes lines vaultmem needs, relative to the vault root."""
    lines = [ATTRIBUTES_MARK]
    for role in _NOTE_ROLES:
        if role in vault.folders:
            lines.append(f"{vault.relpath(vault.folders[role])}/**/*.md merge={DRIVER}")
    lines.append("*.md text eol=lf")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SetUp:
    """What memory sync needs that a vault lacks: the files to write (their whole new bytes), the lines
    its .gitignore gains among them, and whether this clone's .git/config lacks the driver."""

    files: dict[Path, bytes]
    ignored: tuple[str, ...]
    driver: bool

    def names(self) -> list[str]:
        """What it sets up, as the report names it."""
        return [path.name for path in self.files] + ([f"merge.{DRIVER}.driver"] if self.driver else [])


def missing_set_up(vault: Vault, repo: Path) -> SetUp:
    """What set_up would write; nothing is written."""
    files = {}
    attributes = vault.root / ".gitattributes"
    held = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    if ATTRIBUTES_MARK not in held:
        added = attributes_text(vault)
    else:  # set up by an older vaultmem: the folders it did not name yet (episodes) join
        added = "".join(line + "\n" for line in attributes_text(vault).splitlines() if line not in held.splitlines())
    if added:
        files[attributes] = _appended(held, added)
    ignore = vault.root / ".gitignore"
    kept = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    missing = tuple(line for line in IGNORED if line not in kept.splitlines())
    if missing:
        files[ignore] = _appended(kept, "".join(line + "\n" for line in missing))
    return SetUp(files, missing, not driver_configured(repo))


def _appended(text: str, lines: str) -> bytes:
    return (text + ("\n" if text and not text.endswith("\n") else "") + lines).encode("utf-8")


def set_up(vault: Vault, repo: Path, plan: SetUp) -> None:
    """Write what memory sync needs that is missing (missing_set_up's plan)."""
    from ..store.files import atomic_write

    for path, data in plan.files.items():
        atomic_write(path, data)
    if plan.driver:
        run_git(repo, "config", f"merge.{DRIVER}.name", "vaultmem memory notes")
        run_git(repo, "config", f"merge.{DRIVER}.driver", driver_command())
        run_git(repo, "config", f"merge.{DRIVER}.recursive", "text")


def _changes(vault: Vault, repo: Path, pending: SetUp | None = None) -> dict[str, int]:
    """What a commit would hold under the vault: notes added, changed and removed, and other files.

    A dry run passes the set-up it did not write (`pending`): counted as the sync will count them once
    written, its files among the changes and the untracked files its .gitignore lines will hide left
    out, so that the dry run says what the sync then does."""
    rel = os.path.relpath(vault.root, repo)
    codes = _status(repo, rel)
    if pending is not None:
        if pending.ignored:
            patterns = tuple(_from_top(rel, line) for line in pending.ignored)
            hidden = _untracked(repo, rel) - _untracked(repo, rel, patterns)
            codes = {path: code for path, code in codes.items() if path not in hidden}
        for path in pending.files:
            codes.setdefault(Path(os.path.relpath(path, repo)).as_posix(), "??")
    counts = {"new": 0, "changed": 0, "removed": 0, "other": 0}
    for path, code in codes.items():
        if not path.endswith(".md"):
            counts["other"] += 1
        elif "?" in code or "A" in code:
            counts["new"] += 1
        elif "D" in code:
            counts["removed"] += 1
        else:
            counts["changed"] += 1
    return counts


def _status(repo: Path, rel: str) -> dict[str, str]:
    """Each changed or untracked path under rel (from the repository's top) with its two-letter status."""
    fields = run_git(repo, "status", "--porcelain", "-z", "--untracked-files=all", "--", rel).stdout.split("\0")
    codes, entries = {}, iter(fields)
    for entry in entries:
        if entry:
            codes[entry[3:]] = entry[:2]
            if entry[0] in "RC":  # a rename or copy: the path it came from follows
                next(entries, None)
    return codes


def _untracked(repo: Path, rel: str, excludes: tuple[str, ...] = ()) -> set[str]:
    """The untracked files under rel that git does not ignore, and none that the extra patterns match."""
    options = [f"--exclude={pattern}" for pattern in excludes]
    listed = run_git(repo, "ls-files", "-z", "--others", "--exclude-standard", *options, "--", rel).stdout
    return set(filter(None, listed.split("\0")))


def _from_top(rel: str, line: str) -> str:
    """A line of the vault's .gitignore as a pattern from the repository's top that matches what the line
    matches: one with a slash before its end is anchored to the vault, one without matches at any depth in it."""
    if rel == ".":
        return line
    top = Path(rel).as_posix()
    anchored = "/" in line.rstrip("/")
    return f"/{top}/{line.lstrip('/')}" if anchored else f"/{top}/**/{line}"


def _staged_notes(repo: Path, folders: list[str]) -> dict[str, int]:
    """What the commit holds, as a memory's life names it: notes created; merged (a vaultmem write
    bumped the note's `version`: a restatement folded in); superseded (its `status` became
    superseded); edited (any other change: a person's, or a property set by feedback or pin); moved;
    removed. Read from one `git diff --cached` of the memory and entity folders (the day's episode
    notes, templates and other files are not counted)."""
    counts = dict.fromkeys(("created", "merged", "superseded", "edited", "moved", "removed"), 0)
    diff = run_git(repo, "diff", "--cached", "-U0", "--no-color", "--no-ext-diff", "-M", "--", *folders).stdout
    for part in diff.split("\ndiff --git ")[0 if diff.startswith("diff --git ") else 1:]:
        head, _, changes = part.partition("\n@@")
        first = head.split("\n", 1)[0]
        if not first.rstrip('"').endswith(".md"):
            continue
        if "\nnew file mode" in head:
            counts["created"] += 1
        elif "\ndeleted file mode" in head:
            counts["removed"] += 1
        elif "\n+status: superseded" in "\n" + changes:
            counts["superseded"] += 1
        elif "\n+version:" in "\n" + changes:
            counts["merged"] += 1
        elif "\nrename from " in head and not changes:
            counts["moved"] += 1
        else:
            counts["edited"] += 1
    return {kind: n for kind, n in counts.items() if n or kind in ("created", "edited", "removed")}


@dataclass(frozen=True)
class Target:
    """Where a sync pulls from and pushes to: the remote, its branch, and whether that is the upstream the
    person set (branch.<name>.remote and .merge) or a first push that will set it."""

    remote: str
    branch: str
    upstream: bool

    @property
    def name(self) -> str:
        """As git names it: origin/main."""
        return f"{self.remote}/{self.branch}"


def _current_branch(repo: Path) -> str | None:
    """The branch checked out; None when HEAD is detached."""
    done = run_git(repo, "symbolic-ref", "--short", "-q", "HEAD", check=False)
    return done.stdout.strip() or None


def _upstream(repo: Path, branch: str | None) -> Target | None:
    """The upstream the person set for `branch` (`git branch -u`, a clone, a first `push -u`), whatever its name."""
    if branch is None:
        return None
    remote = run_git(repo, "config", "--get", f"branch.{branch}.remote", check=False).stdout.strip()
    merge = run_git(repo, "config", "--get", f"branch.{branch}.merge", check=False).stdout.strip()
    if not remote or not merge:
        return None
    return Target(remote, merge.removeprefix("refs/heads/"), upstream=True)


def _first_push(repo: Path, branch: str | None, remote: str) -> Target:
    """Where a branch without an upstream goes: a branch of its name on `remote`. GitError, with nothing
    written to the remote, when the remote holds the vault on another branch and none of this name (a
    clone on `master` beside a remote on `main` would otherwise start a second history there)."""
    if branch is None:
        raise GitError(f"{repo} is on no branch (a detached HEAD): check out the branch to sync "
                       "(`git switch main`), then run `vaultmem sync` again")
    listed = run_git(repo, "ls-remote", "--symref", remote, "HEAD", "refs/heads/*").stdout.splitlines()
    branches = [line.split("\t")[1].removeprefix("refs/heads/") for line in listed
                if "\trefs/heads/" in line and not line.startswith("ref:")]
    if not branches or branch in branches:
        return Target(remote, branch, upstream=False)
    default = next((line.split()[1].removeprefix("refs/heads/") for line in listed
                    if line.startswith("ref: ") and line.endswith("\tHEAD")), None)
    other = default if default in branches else branches[0] if len(branches) == 1 else None
    held = f"its default branch is {other}" if other else f"it has the branches {', '.join(sorted(branches))}"
    follow = other or "BRANCH"
    raise GitError(f"this clone's branch {branch} has no upstream and {remote} has no branch {branch} "
                   f"({held}); nothing was pushed. To sync with {remote}/{follow}: `git fetch {remote} && "
                   f"git branch -u {remote}/{follow}`; to start a branch {branch} there instead: "
                   f"`git push -u {remote} {branch}`")


def sync(vault: Vault, dry_run: bool = False) -> dict[str, Any]:
    """Set up, commit, pull (merge), push, refresh; what was done, as a dict for --json. One sync at a
    time per clone (a lock in the git folder): a watcher's and a person's sync wait for each other."""
    from ..store.writelock import WriteLock

    repo = repository(vault)
    git_dir = Path(run_git(repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    lock = WriteLock(git_dir / SYNC_LOCK, timeout=600)
    lock.acquire()
    try:
        return _sync(vault, repo, git_dir, dry_run)
    finally:
        lock.release()


def _sync(vault: Vault, repo: Path, git_dir: Path, dry_run: bool) -> dict[str, Any]:
    plan = missing_set_up(vault, repo)
    if not dry_run:
        set_up(vault, repo, plan)
    report: dict[str, Any] = {"repository": str(repo), "device": vault.device, "dry_run": dry_run,
                              "set_up": plan.names()}
    changes = _changes(vault, repo, plan if dry_run else None)
    report["changes"] = changes
    branch = _current_branch(repo)
    upstream = _upstream(repo, branch)
    report["remote"] = upstream is not None
    if dry_run:
        return report
    remotes = [] if upstream else run_git(repo, "remote").stdout.split()
    target = upstream or (_first_push(repo, branch, remotes[0]) if remotes else None)
    # a machine with no git identity still syncs: the commit names the device
    identity = [] if _has_identity(repo) else ["-c", "user.name=vaultmem", "-c", f"user.email=vaultmem@{vault.device}"]
    if cleared := clear_stale_locks(git_dir):
        report["cleared"] = cleared
    elif held := _git_locks(git_dir):
        raise GitError(f"another git is at work in {repo} (it holds {held[0]}): let it finish, "
                       "then run `vaultmem sync` again")
    if (git_dir / "MERGE_HEAD").exists():  # a merge an earlier sync (or a person) left unfinished
        report["settled"] = _finish_merge(vault, repo, identity)
    rel = os.path.relpath(vault.root, repo)
    run_git(repo, "add", "--all", "--", rel)
    staged = run_git(repo, "diff", "--cached", "--quiet", "--", rel, check=False).returncode != 0
    if staged:
        kinds = _staged_notes(repo, [os.path.relpath(vault.folders[role], repo) for role in _NOTE_ROLES
                                     if role in vault.folders and role != "episodes"])
        report["committed"] = kinds
        message = f"vaultmem sync from {vault.device}: " + ", ".join(f"{n} {kind}" for kind, n in kinds.items()) + \
            " notes"
        run_git(repo, *identity, "commit", "-q", "-m", message)
        report["commit"] = message
    if upstream:
        # git would start the driver once per note (a Python start each); told it fails instead, git
        # leaves those notes' three versions in its index and _finish_merge merges them all in this
        # process, by the same rules: a pull of a thousand changed notes takes seconds, not minutes
        pulled = run_git(repo, *identity, "-c", f"merge.{DRIVER}.driver=exit 1", "pull", "--no-rebase", "--no-edit",
                      "-q", check=False)
        if pulled.returncode != 0:
            if not (git_dir / "MERGE_HEAD").exists():
                raise GitError(f"git pull failed: {_reason(pulled)}")
            report["settled"] = report.get("settled", []) + _finish_merge(vault, repo, identity)
        report["pulled"] = True
    if target:  # to the upstream's branch by name: git's own `push` refuses one named unlike the local branch
        run_git(repo, "push", "-q", *([] if target.upstream else ["-u"]), target.remote,
                f"HEAD:refs/heads/{target.branch}")
        report.update(pushed=True, pushed_to=target.name, branch=branch, remote_branch=target.branch)
    vault.refresh()
    with contextlib.suppress(GitError):  # a cache: why and recall --as-of bring it up to date themselves
        git_history(vault.root, vault.index.cache_dir)
    return report


def clear_stale_locks(git_dir: Path) -> list[str]:
    """Remove the lock files a killed git left (`index.lock`, `HEAD.lock`, a branch's or a remote
    branch's `.lock`, `packed-refs.lock` …): while one is there, every later git command that needs it
    refuses to run. The paths removed; none while a git may still be at work.

    At work means: some process has one of the locks open, or a git process works in this repository
    (git closes the index lock while a hook runs, so an open file alone does not tell). Where /proc is
    missing (macOS, Windows) only locks older than ten minutes count as stale."""
    locks = _git_locks(git_dir)
    if not locks:
        return []
    proc = Path("/proc")
    if proc.is_dir():
        if _git_at_work(proc, {str(p) for p in locks}, git_dir):
            return []
    else:
        now = time.time()
        locks = [p for p in locks if now - p.stat().st_mtime >= 600]
    cleared = []
    for lock in locks:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
            cleared.append(str(lock))
    return cleared


def _git_locks(git_dir: Path) -> list[Path]:
    """The lock files of git's own state: its top-level files (index, HEAD, packed-refs, config …)
    and its refs. Never a walk of objects/, which holds every object of the history."""
    found = [*git_dir.glob("*.lock"), *(git_dir / "refs").rglob("*.lock")]
    return [p for p in found if p.name != SYNC_LOCK and p.is_file()]


def _git_at_work(proc: Path, locks: set[str], git_dir: Path) -> bool:
    work_tree = git_dir.parent
    for entry in proc.iterdir():
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        try:
            if (entry / "comm").read_text().strip().startswith("git"):
                cwd = Path(os.readlink(entry / "cwd"))
                if cwd == work_tree or work_tree in cwd.parents or cwd == git_dir:
                    return True
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in locks:
                    return True
        except OSError:  # gone meanwhile, or another user's process
            continue
    return False


def _finish_merge(vault: Vault, repo: Path, identity: list[str]) -> list[dict[str, str]]:
    """Settle what git's merge left unmerged, losing no text, and commit the merge; what was settled.

    A driver never sees these: a note one machine deleted (or renamed) and the other changed keeps
    the changed text (a deletion is not worth a lost edit; forget archives, it does not delete); a
    note both created, or one git merged line by line (no driver configured when it merged), is merged
    by the driver's rules; a note both renamed differently stays under both names, one id in two files,
    which repair folds into one. Anything else (a file that is not a note, with a true conflict) is left
    to a person: GitError says so."""
    from ..store.files import atomic_write
    from .mergedriver import merge_notes

    listed = run_git(repo, "ls-files", "-u", "-z").stdout.split("\0")
    stages: dict[str, dict[int, str]] = {}
    for entry in filter(None, listed):
        info, path = entry.split("\t", 1)
        _mode, sha, stage = info.split()
        stages.setdefault(path, {})[int(stage)] = sha
    blobs = read_blobs(repo, {sha for held in stages.values() for sha in held.values()})
    settled: list[dict[str, str]] = []
    left: list[str] = []
    twins = False
    for path, held in sorted(stages.items()):
        blob = {stage: blobs[sha] for stage, sha in held.items()}
        target = repo / path
        if 2 in blob and 3 in blob:
            merged, clean = merge_notes(blob.get(1, b""), blob[2], blob[3], path)
            atomic_write(target, merged, durable=False)  # synced once, below
            if not clean:  # not a note: git's text merge, markers and all, for a person to settle
                left.append(path)
                continue
            settled.append({"path": path, "how": "merged"})
        elif 2 in blob or 3 in blob:
            side = 2 if 2 in blob else 3
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, blob[side], durable=False)
            settled.append({"path": path, "how": "kept the changed copy" if 1 in blob else "kept"})
            twins = True
        else:  # deleted on both sides
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            settled.append({"path": path, "how": "deleted"})
    if hasattr(os, "sync"):  # one flush for every note written above, not an fsync each
        os.sync()
    if left:
        raise GitError("git pull left conflicts vaultmem cannot settle in "
                       f"{', '.join(left[:5])}{' …' if len(left) > 5 else ''}: resolve them, commit, "
                       "and run `vaultmem sync` again")
    done = [entry["path"] for entry in settled]
    if done:  # one git add for them all: a pull of a thousand notes is not a thousand processes
        run_git(repo, "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul", stdin="\0".join(done) + "\0")
    if twins:
        from .repair import repair

        vault.refresh()
        if repair(vault).repaired:
            run_git(repo, "add", "--all", "--", os.path.relpath(vault.root, repo))
    run_git(repo, *identity, "commit", "-q", "--no-edit")
    return settled


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
    return bool(run_git(repo, "config", "user.email", check=False).stdout.strip())


__all__ = ["GitError", "SYNC_LOCK", "SetUp", "Target", "attributes_text", "clear_stale_locks", "driver_command",
           "driver_configured", "missing_set_up", "read_blobs", "repository", "run_git", "set_up", "sync", "sync_warnings"]
