"""A vault on disk: layout, path safety, atomic writes, id <-> path, the index: the Store every layer
above takes (the Vault facade is a Store with the public operations on top)."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ..config import CONFIG_TEMPLATE, HOOK_ENV
from ..settings import Settings, load_settings
from ..errors import (AmbiguousNote, ConfigError, InvalidValue, NoteNotFound, UnsafePath, VaultmemError, VaultNotFound,
                      WriteConflict)
from ..notes.names import safe_filename
from .caller import Caller
from .crypto import Keyring
from .events import append_accesses, append_events, device_id
from .hookqueue import HookQueue
from .files import atomic_write
from .index.index import Index
from .index.scan import RefreshStats, ScanRoot
from .index.sidecar import usable_cache
from .writelock import lock_timeout, notice
from .index.records import Record, build_record, content_hash

__all__ = ["CONFLICT_RETRIES", "KIND_BY_FOLDER", "MEMORY_FOLDERS", "NAME_ATTEMPTS", "STATE_DIR", "Store", "find_templates", "framed", "inside",
           "retry_conflicts"]

STATE_DIR = ".vaultmem"
CONFLICT_RETRIES = 5
"""How often a read-edit-write is made again over a file someone keeps saving meanwhile."""
NAME_ATTEMPTS = 10_000  # `title.md` … `title 10000.md`: then a note gets no name and an error says so
_T = TypeVar("_T")
MEMORY_FOLDERS = ("memories", "inbox", "archive")
KIND_BY_FOLDER = {"memories": "memory", "inbox": "memory", "archive": "memory",
                  "entities": "entity", "episodes": "episode"}

# In each note folder (the vault root may be a person's, and is left alone): a command killed mid-write
# leaves a hidden temp file there until the next refresh removes it; git must not commit it meanwhile.
_IGNORE_TEMPS = b"# temp files of a write that was killed (vaultmem removes them at its next refresh)\n.*.tmp\n"
def inside(root: Path, candidate: Path) -> bool:
    """Whether a path, with symlinks resolved, stays inside root."""
    try:
        candidate.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


SAVE_WAITS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4)  # seconds between reads of a note caught mid-save (~1 s in all)
# the same for a save that landed in the file just replaced: our text stands on disk meanwhile, and an
# editor that reloads it would save over the person's line, so the first looks come quickly
RESCUE_WAITS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.05, 0.1, 0.2, 0.3, 0.3)
_pause = time.sleep  # (a test makes the save land here)


def framed(data: bytes) -> bool:
    """Whether a note's bytes hold a whole frontmatter block, opened and closed (note.has_frontmatter)."""
    from ..notes.note import has_frontmatter

    return has_frontmatter(data.decode("utf-8", "replace"))


def _mid_save(data: bytes, known_sha: str | None) -> bool:
    """Whether bytes read from a note look like a save caught half-way (see Store.read_current)."""
    if not data:
        return True
    return known_sha is not None and not framed(data) and content_hash(data) != known_sha


@contextlib.contextmanager
def _held_open(path: Path) -> Iterator[int | None]:
    """The note's current file, open for reading while it is replaced (None where an open file cannot
    be replaced, Windows; or when it is gone): an in-place save that lands in it stays readable."""
    if os.name != "posix":
        yield None
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _read_fd(fd: int) -> bytes:
    """The whole file behind fd, from its start."""
    chunks, at = [], 0
    while chunk := os.pread(fd, 1 << 20, at):
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


def _settled(read: Callable[[], bytes], known_sha: str | None, waits: tuple[float, ...]) -> bytes:
    """read(), read again after each pause of `waits` while it looks like a save caught half-way."""
    data = read()
    for pause in waits:
        if not _mid_save(data, known_sha):
            break
        _pause(pause)
        data = read()
    return data


def find_templates() -> Path | None:
    """The Obsidian templates shipped with vaultmem (in the wheel, or the source checkout)."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "templates", package.parent / "templates"):
        if candidate.is_dir():
            return candidate
    return None


def _made_folder(path: Path, what: str) -> None:
    """mkdir -p, or a VaultmemError saying what is in the way (a file a sync tool or a copy left there)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise VaultmemError(f"{path} is a file, where vaultmem keeps its {what} folder: move it away and run the "
                            "command again") from None


class Store:
    """A memory vault on disk, without the public operations (see vault.Vault). Safe to share
    between threads; several processes may open the same vault."""

    working_set: Any = None  # a long-lived process's recall.workingset.WorkingSet (Vault.use_working_set)
    _caller: Caller | None = None  # None: the process's own (Caller.from_env), read at each call

    def __init__(self, path: str | os.PathLike[str], *, namespace: str | None = None, trust: str | None = None):
        """Open the vault at path. namespace: confine this Store to an agent's namespace (store/caller.py;
        else $VAULTMEM_NAMESPACE confines it, and without either it is the owner's); trust: the most
        its writes are trusted. Raises VaultNotFound, ConfigError."""
        if namespace is not None or trust is not None:
            self._caller = Caller(namespace=namespace, trust=trust)
        self.root = Path(path).expanduser().resolve()
        if not (self.root / STATE_DIR).is_dir():
            if self.root.exists() and not self.root.is_dir():
                raise VaultNotFound(f"{self.root} is not a directory; a vault is a folder")
            if not self.root.is_dir():
                raise VaultNotFound(f"{self.root} does not exist; create it with `vaultmem init {path}`")
            raise VaultNotFound(f"{self.root} is not a vaultmem vault (no {STATE_DIR}/); run `vaultmem init {path}`")
        self.state = self.root / STATE_DIR
        self.settings: Settings = load_settings(self.state / "config.yaml", self.state / "cache" / "config.json")
        self._safe_dirs: set[str] = set()
        self._reused: dict[str, tuple[Any, Any]] = {}
        self._reused_lock = threading.RLock()
        self._root_prefix = os.path.join(str(self.root), "")
        self.memory_root = self._checked(self.root / str(self.settings.memory_root))
        self.folders = {role: self._checked(self.memory_root / name)
                        for role, name in self.settings.folders.roles().items()}
        self.device = device_id()
        self.device_dir = self.state / "devices" / self.device
        self._index: Index | None = None
        self._index_lock = threading.Lock()
        # made here (its thread starts with the first hook event), so every as_caller view shares it
        self.hooks = HookQueue(self.root, self.device_dir, lambda: self.settings.hooks, self._hook_rows)
        self.keyring = Keyring()  # encrypted notes' passphrase (store/crypto.py), shared by every view
        self._told_read_only = False

    def _checked(self, path: Path, creating: bool = False) -> Path:
        """The path, if it stays inside the vault with symlinks resolved; raises UnsafePath.

        A batch writes thousands of notes into a few folders: a folder found safe once is
        remembered, and a plain name in it only needs one lstat (is it a symlink?), or none when
        the file is being created (creating: the write fails if anything has the name).
        """
        parent = str(path.parent)
        if parent in self._safe_dirs and path.name not in ("", ".", "..") and (creating or not os.path.islink(path)):
            return path
        if not inside(self.root, path):
            raise UnsafePath(f"{path} is outside the vault {self.root}")
        if path.is_dir():
            self._safe_dirs.add(str(path))
        elif inside(self.root, path.parent):
            self._safe_dirs.add(parent)
        return path

    @classmethod
    def init(cls, path: str | os.PathLike[str]) -> Store:
        """Lay out a vault (folders, config, .gitignore, templates); an existing one is left as it is."""
        root = Path(path).expanduser()
        state = root / STATE_DIR
        _made_folder(state / "cache", "index")
        _made_folder(state / "devices", "devices' logs")
        config_path = state / "config.yaml"
        if not config_path.exists():
            atomic_write(config_path, CONFIG_TEMPLATE.encode("utf-8"))
        gitignore = state / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, b"# the index is rebuilt from the notes; never commit it\ncache/\n")
        vault = cls(root)
        for role, folder in vault.folders.items():
            folder.mkdir(parents=True, exist_ok=True)
            if role in KIND_BY_FOLDER and not (folder / ".gitignore").exists():
                atomic_write(folder / ".gitignore", _IGNORE_TEMPS)
        vault._copy_templates()
        return vault

    def _copy_templates(self) -> None:
        source = find_templates()
        if source is None:
            return
        for template in sorted(source.glob("*.md")):
            target = self.folders["templates"] / template.name
            if not target.exists():
                import shutil  # here: a one-off command never needs it (~6 ms to import)

                shutil.copyfile(template, target)

    # -- who is asking ----------------------------------------------------------------------------
    @property
    def caller(self) -> Caller:
        """Who this Store's operations are for (store/caller.py): the namespaces they may read and
        write, and the most its writes are trusted."""
        return self._caller if self._caller is not None else Caller.from_env()

    def as_caller(self, caller: Caller) -> Store:
        """A view of this vault for another caller (an HTTP token, an MCP client's agent): the same
        index, settings and working set, shared between threads; only `caller` differs."""
        self.index  # noqa: B018 -- opened once, here, so every view shares it
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._caller = caller
        return view

    def sees(self, namespace: str) -> bool:
        """Whether this Store's caller may read or change a note of this namespace."""
        return self.caller.sees(namespace, str(self.settings.defaults.namespace))

    def visible(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The index rows of notes this Store's caller may see (all of them for the owner)."""
        if not self.caller.confined:
            return rows
        allowed = set(self.caller.readable(str(self.settings.defaults.namespace)))
        return [r for r in rows if r["namespace"] in allowed]

    def namespaces(self, given: str | list[str] | tuple[str, ...] | None = None) -> list[str] | None:
        """The namespaces an operation reads for what its caller asked (None: every one); see Caller."""
        return self.caller.namespaces(given, str(self.settings.defaults.namespace))

    # -- index ---------------------------------------------------------------------------------
    @property
    def index(self) -> Index:
        """The index sidecar (opened on first use)."""
        with self._index_lock:
            if self._index is None:
                roots = [ScanRoot(self.folders[role], KIND_BY_FOLDER[role], role)
                         for role in ("memories", "entities", "episodes", "inbox", "archive")]
                idx = self.settings.index
                cache = usable_cache(self.state / "cache", self.root)  # elsewhere in a read-only vault
                self._index = Index(cache, self.root, roots, self.state / "devices", self.settings.defaults,
                                    self.settings.write.max_text_chars, idx.compact_min, idx.compact_ratio,
                                    lock_timeout(idx.lock_timeout))
                self._index.released = self.hooks.release
            return self._index

    def refresh(self, progress: Callable[[int, int], None] | None = None, force: bool = False,
                wait: bool = True) -> RefreshStats:
        """Re-read notes changed on disk since the last refresh (all of them with force); with wait
        False, skip it while another writer is at work (a read then answers from what is indexed)."""
        return self.index.refresh(progress, force, wait)

    def freshen(self) -> RefreshStats:
        """What a one-off read does before it answers (a CLI recall, ask, context): a full refresh
        while one costs at most `index.sweep_budget` seconds, else one at most every
        `index.sweep_every` seconds and, between them, only the folders' look (created, renamed and
        deleted notes; recall checks its own hits for edits in place). Skipped while another writer is
        at work, or while a live watcher keeps the index current."""
        cfg = self.settings.index
        return self.index.freshen(float(cfg.sweep_budget), float(cfg.sweep_every))

    def reused(self, name: str, key: Any, build: Callable[[], Any]) -> Any:
        """A helper the write pipeline builds once (the policy, the rule tables, the entity
        matcher) and reuses while `key` holds: a long-lived agent remembers without rebuilding."""
        with self._reused_lock:
            cached = self._reused.get(name)
            if cached is None or cached[0] != key:
                cached = self._reused[name] = (key, build())
            return cached[1]

    def configure(self, section: str, **values: Any) -> Settings:
        """Change some of one section's settings for this process (config.yaml stays as it is), by
        field name: `configure("ranking", fusion="rrf")`, `configure("ranking", lambda_mode="adaptive")`.
        Checked as config.yaml is (ConfigError); what was built from the old settings (the policy, the
        rule tables) is built again. The folders are laid out when the vault opens: edit config.yaml."""
        if section == "folders":
            raise ConfigError("the folders are read when the vault opens: change them in .vaultmem/config.yaml")
        with self._reused_lock:
            self.settings = self.settings.with_values(section, **values)
            self._reused.clear()
            if self._index is not None:  # what the open index was given
                idx = self.settings.index
                self._index.defaults = self.settings.defaults
                self._index.max_chars = self.settings.write.max_text_chars
                self._index.compact_min, self._index.compact_ratio = idx.compact_min, idx.compact_ratio
        return self.settings

    def close(self) -> None:
        """Release this thread's index connection."""
        if self._index is not None:
            self._index.close()

    # -- paths and notes -----------------------------------------------------------------------
    def relpath(self, path: Path) -> str:
        """A vault path as the index stores it (POSIX, relative to the vault root)."""
        text = str(path)
        if text.startswith(self._root_prefix):  # the common case, without pathlib's slow parsing
            return text[len(self._root_prefix):].replace(os.sep, "/")
        return path.relative_to(self.root).as_posix()

    def safe_path(self, ref: str) -> Path:
        """A path given by a user, checked to stay inside the vault."""
        candidate = Path(ref)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        if ".." in Path(ref).parts or not inside(self.root, candidate):
            raise UnsafePath(f"{ref!r} is outside the vault {self.root}")
        return candidate

    def folder_of(self, path: Path) -> str | None:
        """The role (memories, inbox, …) of the folder holding a path, or None."""
        for role, folder in self.folders.items():
            if path == folder or folder in path.parents:
                return role
        return None

    def record_for(self, path: Path, data: bytes | None = None, sketch: list[int] | None = None,
                   note: Any = None) -> Record:
        """Parse a note file of this vault into an index record (data: its bytes, if at hand;
        sketch and note: its body's near-duplicate keys and its parsed note.Note, if known)."""
        if data is None:
            data = path.read_bytes()
        st = path.stat()
        kind, role = self.kind_of(path)
        return build_record(data, self.relpath(path), kind, role, (st.st_mtime_ns, st.st_size), self.settings.defaults,
                            sketch, note, max_chars=self.settings.write.max_text_chars)

    def kind_of(self, path: Path) -> tuple[str, str]:
        """(kind, folder role) of a note in this vault, as the index files it (memory elsewhere)."""
        role = self.folder_of(path) or "memories"
        return KIND_BY_FOLDER.get(role, "memory"), role

    def resolve(self, ref: str) -> dict[str, Any]:
        """The index row of a note named by id, vault path or title (refreshing once if unknown).

        Raises NoteNotFound, AmbiguousNote, UnsafePath.
        """
        for attempt in range(2):
            rows = self._lookup(ref)
            # a note this caller may not see is not found: it learns nothing of it (store/caller.py)
            rows = [r for r in rows if (self.root / r["path"]).exists() and self.sees(r["namespace"])]
            if len(rows) == 1:
                return rows[0]
            if len(rows) > 1:
                raise AmbiguousNote(ref, [r["path"] for r in rows])
            if attempt == 0:
                self.refresh(wait=False)  # renamed or created by hand since the last refresh
        raise NoteNotFound(ref)

    def _lookup(self, ref: str) -> list[dict[str, Any]]:
        if ref.endswith(".md") or "/" in ref or os.sep in ref:
            rel = self.relpath(self.safe_path(ref).resolve()) if inside(self.root, self.safe_path(ref)) else ref
            return self.index.select_notes("path = ?", (rel,))
        rows = self.index.select_notes("id = ?", (ref,))
        # a title as typed ("… 22:00") names the note whose file name holds its look-alikes ("… 22∶00")
        return rows or self.index.select_notes("title IN (?, ?)", (ref, safe_filename(ref)))

    def write_text(self, path: Path, content: str | bytes, *, expected_sha: str | None,
                   durable: bool = True) -> os.stat_result:
        """Replace a note's text, refusing if it changed on disk since it was read (expected_sha).

        expected_sha None means the note must not exist yet. Returns the written file's stat.
        Raises WriteConflict.
        """
        # a new note is never written through a symlink: the no-replace move fails on any existing name
        self._checked(path, creating=expected_sha is None)
        data = content.encode("utf-8") if isinstance(content, str) else content
        if expected_sha is None:
            try:
                return atomic_write(path, data, durable=durable, exclusive=True)
            except FileExistsError:
                raise WriteConflict(path) from None

        def unchanged() -> None:
            try:
                current = content_hash(path.read_bytes())
            except FileNotFoundError:
                raise WriteConflict(path) from None
            if current != expected_sha:
                raise WriteConflict(path)

        unchanged()  # fail early, before the write and its fsync
        with _held_open(path) as old:
            st = atomic_write(path, data, durable=durable, before_replace=unchanged)  # and again just before the move
            if old is not None:
                self._rescue_late_save(path, old, expected_sha, content_hash(data), durable)
        return st

    def _rescue_late_save(self, path: Path, old: int, expected_sha: str, written_sha: str, durable: bool) -> None:
        """An editor that opened the note before our move and saved in place after our last check wrote
        into the file we replaced: its text is put back over ours (if ours is still there) and the
        write is a WriteConflict, so the caller decides again on the person's text. Raises WriteConflict."""
        data = _settled(lambda: _read_fd(old), expected_sha, RESCUE_WAITS)
        if content_hash(data) == expected_sha or _mid_save(data, expected_sha):
            return  # untouched (or emptied and never written again: there is no text to keep)

        def ours_still_there() -> None:
            try:
                if content_hash(path.read_bytes()) != written_sha:
                    raise WriteConflict(path)
            except FileNotFoundError:
                raise WriteConflict(path) from None

        with contextlib.suppress(WriteConflict):  # saved again since: that newer save stands
            atomic_write(path, data, durable=durable, before_replace=ours_still_there)
        raise WriteConflict(path, "was saved by an editor while it was replaced; the saved text was put back")

    def check_folder(self, folder: Path) -> None:
        """Make sure notes may be created in this folder (inside the vault, symlinks resolved); raises
        UnsafePath. For a writer that creates them elsewhere (files.create_files in a worker)."""
        if str(folder) not in self._safe_dirs:
            self._checked(folder)

    def create_note(self, folder: Path, name: str, data: bytes, *, durable: bool = True,
                    mode: int | None = None) -> os.stat_result:
        """Write a new note `name` into a vault folder, never over an existing file (WriteConflict).

        The batch writer's path: the folder is checked once, the name must be a plain file name.
        `mode`: the file's permission bits (a note moved to another folder keeps its own).
        """
        if not name or name in (".", "..") or "/" in name or os.sep in name or "\x00" in name:
            raise UnsafePath(f"{name!r} is not a plain file name")
        where = str(folder)
        if where not in self._safe_dirs:
            self._checked(folder / name, creating=True)
        try:
            return atomic_write(f"{where}{os.sep}{name}", data, durable=durable, exclusive=True, mode=mode)
        except FileExistsError:
            raise WriteConflict(folder / name) from None

    def create_numbered(self, folder: Path, stem: str, data: bytes, *, durable: bool = True, first: int = 0,
                        skip: Callable[[str], bool] | None = None, mode: int | None = None
                        ) -> tuple[str, os.stat_result]:
        """Write a new note under the first free readable name from the `first`-th on (`stem.md`,
        `stem 2.md` …) that `skip` does not rule out; never over an existing file. The one loop for
        "the next free numbered name". Returns (the name, the file's stat)."""
        from ..notes.names import numbered_name

        for attempt in range(first, NAME_ATTEMPTS):
            name = numbered_name(stem, attempt)
            if skip is not None and skip(name):
                continue
            try:
                return name, self.create_note(folder, name, data, durable=durable, mode=mode)
            except WriteConflict:  # taken, or made by someone meanwhile: the next number
                continue
        raise VaultmemError(f"no free file name for {stem!r} in {folder}")

    def read_current(self, path: Path, known_sha: str | None = None) -> bytes:
        """A note's bytes as they are now, waiting out an editor's save in place.

        An editor that saves in place truncates the file, then writes it: read in between, a note
        is empty, or has lost its frontmatter, or its closing line. Such a read of a note that is
        not as the index knew it (known_sha; None: an empty read) is read again for up to ~1 s.
        What comes back may still be such a text: the caller must not take it for the note.
        Raises FileNotFoundError.
        """
        return _settled(path.read_bytes, known_sha, SAVE_WAITS)

    def edit_note(self, path: Path, edit: Callable[[Any], str], *, durable: bool = True,
                  retries: int = CONFLICT_RETRIES) -> str:
        """Rewrite a note from its current text: read it, `edit(note.Note) -> new text`, write it
        unless it changed on disk meanwhile (a person saving in Obsidian), then read it again.

        Returns the text written. Raises WriteConflict when it kept changing through every retry,
        or when it reads empty or without its frontmatter (a save that has not ended: its text is
        not the note, and an edit over it would throw the note away).
        """
        from ..notes.note import parse_note

        def once() -> str:
            data = self.read_current(path, "")
            if not framed(data):
                raise WriteConflict(path, "is empty or has lost its frontmatter (being saved?); it was left as it is")
            new_text = edit(parse_note(data, self.relpath(path)))
            self.write_text(path, new_text, expected_sha=content_hash(data), durable=durable)
            return new_text

        return retry_conflicts(once, retries)

    def audit(self, events: Iterable[dict]) -> None:
        """Append events to this device's audit log, each naming the caller it was for (a surface, a
        token's name; store/caller.py) when that is not the vault's owner at the command line. An event
        without a `ts` gets the time it is logged (`vaultmem why` and `--as-of` date what happened by it)."""
        extra = self.caller.audit_fields()
        if extra:
            events = [{**event, **{k: v for k, v in extra.items() if k not in event}} for event in events]
        stamp = time.time()
        events = [event if "ts" in event else {**event, "ts": stamp} for event in events]
        append_events(self.device_dir, "audit", events)
        if self.settings.hooks.run and HOOK_ENV not in os.environ:  # a hook's own writes fire none: no loops
            self.hooks.stage(events, held=self.index.writer_busy)

    # -- hooks ------------------------------------------------------------------------------------

    def _hook_rows(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """{id: index row (path, title, namespace)} of these notes, for their hook events."""
        rows: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):  # SQLite's bound on a statement's parameters
            part = ids[start:start + 500]
            rows.update((r["id"], r) for r in self.index.select_notes(
                f"id IN ({', '.join('?' * len(part))})", tuple(part), columns=("id", "path", "title", "namespace")))
        return rows

    def record_access(self, ids: Iterable[str], now: float | None = None) -> None:
        """Append access events (reinforcement) for these notes; never touches the notes. In a
        read-only vault they are skipped (said once): reading must not need a write."""
        stamp = time.time() if now is None else now
        try:
            append_accesses(self.device_dir, ids, stamp)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            if not self._told_read_only:
                notice("the vault is read-only: recalls are not recorded as uses")
                self._told_read_only = True


def retry_conflicts(attempt: Callable[[], _T], retries: int = CONFLICT_RETRIES) -> _T:
    """`attempt()` made again while it raises WriteConflict, at most `retries` times in all; the last
    WriteConflict propagates. The one loop for every read-edit-write of a file a person may be saving:
    each attempt must read the file afresh (their text wins) and write only if it is unchanged."""
    if retries < 1:
        raise InvalidValue(f"retries must be at least 1, not {retries}")
    for _ in range(retries - 1):
        try:
            return attempt()
        except WriteConflict:
            continue
    return attempt()

