"""Every commit's changed paths under the vault, kept in the cache folder (`githistory.json`) so that a
note's commits (why) and the notes changed since a moment (recall --as-of) are looked up, not asked of git.

`git log -- PATH` costs the same whatever PATH is: git diffs every commit's tree against its parent's, and a
folder of 100,000 notes makes that ~5 ms a commit, ~50 s for 10,000 commits. The file is made by one
`git log --raw --no-renames` over the whole history, once; when HEAD moves it reads only the new commits
(`old..HEAD`, when the old HEAD is an ancestor of the new), else the whole history again (an amend, a
reset, a rebase). It is written whole to a temp file and moved into place: two processes never see half
of it, and when two build at once the later move wins, both correct. Deleting it costs a rebuild.

Paths are relative to the vault root. Renames are not followed: git reports a move as a removal and an
addition, and a note's earlier paths come from what vaultmem logged of its moves (overview/story.py).
A merge commit's own changes (a conflict resolved in it) are not listed: `git log --raw` shows none.
"""

from __future__ import annotations

import json
import shutil
from json.decoder import scanstring
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .files import atomic_write
from .gitcmd import GitError, run_git

__all__ = ["HISTORY_FILE", "Change", "GitHistory", "git_history"]

HISTORY_FILE = "githistory.json"
_VERSION = 2
_FORMAT = "--format=%x1e%H%x1f%ct%x1f%an%x1f%s"
_NO_BLOB = "0" * 40


@dataclass(frozen=True)
class Change:
    """One commit's change to one path: the commit (its place in history, oldest 0), status A, M or D,
    and the blobs before and after ('' for none)."""

    order: int
    sha: str
    ts: float
    author: str
    subject: str
    path: str
    status: str
    old: str
    new: str


@dataclass
class GitHistory:
    """The commits (oldest first: sha, commit time, author, subject) and, one line a path, its changes
    (commit's index, status, old blob, new blob), as of commit `head`; `top` is the repository's work tree.

    A path's line is `<its newest change's commit index>\t[path, changes]`, newest first: why parses only its
    note's lines (found by a byte search), as-of only the lines down to the oldest commit after its moment."""

    top: Path
    head: str = ""
    commits: list[list[Any]] = field(default_factory=list)
    lines: bytes = b""

    def entries(self, path: str) -> list[list[Any]]:
        """One path's changes ([commit index, status, old blob, new blob]), oldest first."""
        at = self.lines.find(b"\t" + _key(path))
        if at < 0:
            return []
        return json.loads(self.lines[at + 1:self.lines.index(b"\n", at)])[1]

    def changes(self, paths: list[str] | set[str]) -> list[Change]:
        """The changes of these paths, oldest first."""
        found = []
        for path in dict.fromkeys(paths):
            for index, status, old, new in self.entries(path):
                sha, ts, author, subject = self.commits[index]
                found.append(Change(index, sha, float(ts), author, subject, path, status, old, new))
        found.sort(key=lambda c: (c.order, c.status != "D"))  # in one commit, a move's removal first
        return found

    def changed_after(self, moment: float) -> set[str]:
        """The paths a commit made after `moment` (its commit time) changed."""
        late = {index for index, (_, ts, _, _) in enumerate(self.commits) if ts > moment}
        oldest = min(late, default=len(self.commits))
        found: set[str] = set()
        at = 0
        while at < len(self.lines):
            tab, end = self.lines.index(b"\t", at), self.lines.index(b"\n", at)
            if int(self.lines[at:tab]) < oldest:  # the lines below changed only before
                break
            path, entries = json.loads(self.lines[tab + 1:end])
            if any(e[0] in late for e in entries):
                found.add(path)
            at = end + 1
        return found


def _key(path: str) -> bytes:
    """How a path's line starts after its tab: `["path",`."""
    return json.dumps([path], ensure_ascii=False)[:-1].encode("utf-8") + b","


def _line_key(line: bytes) -> bytes:
    """A line's `["path",`, its path read as the JSON string it is (a path may hold `",[[` or any quote)."""
    start = line.index(b"\t") + 3  # past the tab, `[` and the opening quote
    path, _ = scanstring(line[start:].decode("utf-8"), 0)
    return _key(path)


def _line(path: str, entries: list[list[Any]]) -> bytes:
    return (f"{entries[-1][0]}\t" + json.dumps([path, entries], ensure_ascii=False, separators=(",", ":")) +
            "\n").encode("utf-8")


def git_history(root: Path, cache_dir: Path) -> GitHistory:
    """The history of the repository the vault at `root` is in, brought up to its HEAD (and saved in
    `cache_dir` when it moved). Raises GitError when git is missing or the vault is in no repository."""
    if shutil.which("git") is None:
        raise GitError("git is not installed")
    done = run_git(root, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise GitError(f"{root} is not in a git repository")
    top = Path(done.stdout.strip())
    head = run_git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).stdout.strip()
    kept = _load(cache_dir / HISTORY_FILE, top)
    if not head or kept.head == head:
        return kept if head else GitHistory(top)
    if kept.head and _is_ancestor(root, kept.head, head):
        _add(kept, _read_log(root, f"{kept.head}..{head}"))
    else:
        kept = GitHistory(top)
        _add(kept, _read_log(root, head))
    kept.head = head
    _save(cache_dir / HISTORY_FILE, kept)
    return kept


def _is_ancestor(root: Path, old: str, new: str) -> bool:
    return run_git(root, "merge-base", "--is-ancestor", old, new, check=False).returncode == 0


def _read_log(root: Path, revisions: str) -> list[tuple[list[Any], list[list[str]]]]:
    """The commits of `revisions` that changed a path under the vault, oldest first, each with its
    changes ([path, status, old blob, new blob])."""
    done = run_git(root, "log", "--raw", "--no-renames", "-z", "--no-abbrev", "--no-color", "--relative", _FORMAT,
                   revisions, check=False)
    if done.returncode != 0:
        raise GitError(f"git log failed in {root}: {done.stderr.strip()[:200]}")
    found = []
    for chunk in done.stdout.split("\x1e")[1:]:
        head, _, rest = chunk.partition("\0")
        sha, ct, author, subject = (head.split("\x1f") + ["", "", "", ""])[:4]
        fields = rest.lstrip("\n").split("\0")
        changed = [_entry(meta, path) for meta, path in zip(fields[::2], fields[1::2]) if meta.startswith(":")]
        if changed:
            found.append(([sha, int(ct or 0), author, subject], changed))
    found.reverse()
    return found


def _entry(meta: str, path: str) -> list[str]:
    """[path, status, old blob, new blob] of a raw line (`:mode mode old new status`)."""
    parts = meta.split()
    old, new, status = (parts[2:5] if len(parts) >= 5 else ["", "", "M"])
    return [path, status[:1], "" if old == _NO_BLOB else old, "" if new == _NO_BLOB else new]


def _add(history: GitHistory, commits: list[tuple[list[Any], list[list[str]]]]) -> None:
    """Append the commits; the lines of the paths they changed move to the top, the rest keep their order."""
    held = {_line_key(line): line for line in history.lines.split(b"\n") if line}
    touched: dict[str, list[list[Any]]] = {}
    for commit, changed in commits:
        index = len(history.commits)
        history.commits.append(commit)
        for path, status, old, new in changed:
            if path not in touched:
                line = held.pop(_key(path), b"")
                touched[path] = json.loads(line[line.index(b"\t") + 1:])[1] if line else []
            touched[path].append([index, status, old, new])
    fresh = sorted(touched.items(), key=lambda item: -item[1][-1][0])
    history.lines = b"".join(_line(path, entries) for path, entries in fresh) + \
        b"".join(line + b"\n" for line in held.values())


def _load(path: Path, top: Path) -> GitHistory:
    """The saved history, or an empty one when there is none, it is unreadable, or of another format."""
    try:
        data = path.read_bytes()
        first, _, lines = data.partition(b"\n")
        head = json.loads(first)
        if head.get("version") == _VERSION and isinstance(head["commits"], list) and head["size"] == len(lines):
            return GitHistory(top, str(head["head"]), head["commits"], lines)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return GitHistory(top)


def _save(path: Path, history: GitHistory) -> None:
    """Write it whole; a cache folder that cannot be written keeps the old file (the next call reads again)."""
    first = json.dumps({"version": _VERSION, "head": history.head, "size": len(history.lines),  # a cut file is redone
                        "commits": history.commits}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        atomic_write(path, first + b"\n" + history.lines, durable=False)
    except OSError:
        pass
