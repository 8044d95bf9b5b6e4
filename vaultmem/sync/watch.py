"""Keep the index current while notes change on disk: `vaultmem watch` and `Vault.watch()`.

The file system's events are only the source. Each becomes a `Change` (kind, path, where a move
went), and `sort_change` files it into the pending `Batch`: the vault paths to bring in line (a
note, or a folder that was created, moved or deleted) and the folders whose listing changed. Paths
outside the note folders, and hidden ones (`.vaultmem`, `.obsidian`, `.git`, an editor's temp or
swap file), are no note; a hidden file still marks its folder as changed, which catch_up watches.
A batch is applied once no change came for QUIET_S, or LONGEST_S after its first change, as one
`Index.refresh_paths` (the index's own incremental machinery, not a second indexer): an atomic
save (temp file, rename), a burst of saves and a `git pull` of 1,000 notes each cost one batch.

Tests feed `Watcher.handle` scripted changes and never sleep; the observer (watchdog) only turns
the operating system's events into Changes on a queue. While the watcher runs it keeps a heartbeat
(store/heartbeat.py), so one-off reads skip their rescan.
"""

from __future__ import annotations

import datetime as dt
import errno
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import VaultmemError, WatchLimit
from ..store import heartbeat
from ..store.index.scan import RefreshStats, root_of
from ..store.store import Store

QUIET_S = 0.1  # a batch waits for this long a pause in the changes ...
LONGEST_S = 0.5  # ... but no longer than this after its first change (a long `git pull`)
RETRY_S = (1.0, 5.0, 30.0)  # after a batch failed, the full refresh that retries it waits this long
_KINDS = {"created", "modified", "deleted", "moved", "closed"}  # not opened / closed_no_write: reads, ours too
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """One change on disk: kind (created, modified, deleted, moved, closed), absolute path, and for
    a move the path it went to."""

    kind: str
    path: str
    dest: str = ""
    is_dir: bool = False


@dataclass
class Batch:
    """Changes waiting to be applied: vault paths to bring in line, folders whose listing changed,
    whether only a full refresh will do, and when its first and last change came (monotonic)."""

    paths: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    full: bool = False
    first: float = 0.0
    last: float = 0.0

    def __bool__(self) -> bool:
        return bool(self.paths or self.folders or self.full)


@dataclass(frozen=True)
class Update:
    """One batch applied to the index (what `vaultmem watch --json` prints, a line each)."""

    at: float  # wall time it was applied
    paths: list[str]
    full: bool
    stats: RefreshStats
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON fields: at (ISO 8601), paths, full, added, updated, removed, ms."""
        stamp = dt.datetime.fromtimestamp(self.at, dt.timezone.utc).astimezone().isoformat(timespec="milliseconds")
        return {"at": stamp, "paths": self.paths, "full": self.full, "added": self.stats.added,
                "updated": self.stats.updated, "removed": self.stats.removed, "ms": round(self.seconds * 1000, 1)}


class Layout:
    """Where a store's notes are, as the sorting of changes needs it (plain strings: a pull sorts thousands)."""

    def __init__(self, store: Store):
        index = store.index
        self.vault = str(store.root)
        self.roots = index.roots
        self.root_paths = [str(root.path) for root in index.roots]
        self.memory_root = str(store.memory_root)

    def rel(self, path: str) -> str | None:
        """The vault path of an absolute one, None outside the vault."""
        if not path.startswith(self.vault + os.sep):
            return None
        return path[len(self.vault) + 1:].replace(os.sep, "/")

    def holds_roots(self, path: str) -> bool:
        """Whether a folder is the vault, or above a note folder (its move takes the notes along)."""
        return path == self.vault or any(root.startswith(path + os.sep) for root in self.root_paths)


def sort_change(change: Change, layout: Layout, batch: Batch) -> bool:
    """File a change into the batch; False when it concerns no note folder."""
    if change.kind not in _KINDS:
        return False
    counted = False
    for path in (change.path, change.dest):
        if not path:
            continue
        if change.is_dir and layout.holds_roots(path):
            batch.full = counted = True  # the note folders themselves moved, went or came
            continue
        rel = layout.rel(path)
        if rel is None:
            continue
        folder_rel, _, name = rel.rpartition("/")
        a_root = change.is_dir and path in layout.root_paths
        if not a_root and root_of(layout.vault, layout.roots, folder_rel) is None:
            continue  # outside the note folders, or under a hidden folder in them
        batch.folders.add(os.path.dirname(path))
        counted = True
        if name.startswith("."):
            continue  # a temp or swap file: its folder changed, no note did
        if change.is_dir:
            batch.folders.add(path)
            batch.paths.add(rel)
        elif name.endswith(".md"):
            batch.paths.add(rel)
    return counted


def apply_batch(store: Store, batch: Batch, clock: Callable[[], float] = time.perf_counter) -> Update:
    """Bring the index in line with a batch: one refresh of its paths (a full one when it says so)."""
    started = clock()
    if batch.full:
        stats = store.index.refresh()
    else:
        stats = store.index.refresh_paths(sorted(batch.paths), sorted(batch.folders))
    return Update(time.time(), sorted(batch.paths), batch.full, stats, clock() - started)


class _Overflow(logging.Handler):
    """Hears watchdog say the kernel's event queue overflowed (events were lost): a full refresh follows."""

    def __init__(self, watcher: Watcher):
        super().__init__(logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.watcher.lost_events()


class Watcher:
    """Keeps one vault's index current while it runs; a handle for long-lived hosts (thread-safe).

    `start()` watches the note folders (and refreshes once, for what changed while nobody watched),
    `stop()` ends it; as a context manager it starts and stops. on_update(Update) is called after
    each batch, on_error(exception) when one failed (it is retried after a pause), both from the
    watcher's own thread. `handle(changes)` applies changes at once, without a running observer.
    """

    def __init__(self, store: Store, *, on_update: Callable[[Update], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None, quiet: float = QUIET_S,
                 longest: float = LONGEST_S, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self.layout = Layout(store)
        self.on_update = on_update
        self.on_error = on_error
        self.quiet, self.longest, self.clock = quiet, longest, clock
        self.last_update: Update | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._ending: threading.Thread | None = None  # a thread told to stop from its own callback, still ending
        self._observer: Any = None
        self._watches: dict[str, Any] = {}
        self._overflow: _Overflow | None = None
        self._failures = 0

    # -- the plain part: changes in, index updates out ----------------------------------------
    def handle(self, changes: Iterable[Change]) -> Update | None:
        """Apply these changes now as one batch; None when none concerns a note folder."""
        batch = Batch()
        for change in changes:
            sort_change(change, self.layout, batch)
        return self._apply(batch) if batch else None

    def add(self, change: Change, batch: Batch, now: float) -> None:
        """File a change into the pending batch, noting when it came."""
        empty = not batch
        if sort_change(change, self.layout, batch):
            if empty:
                batch.first = now
            batch.last = now

    def due(self, batch: Batch, now: float) -> bool:
        """Whether the pending batch is to be applied now (a pause after it, or waited long enough)."""
        return bool(batch) and (now - batch.last >= self.quiet or now - batch.first >= self.longest)

    def wait(self, batch: Batch, now: float, next_beat: float) -> float:
        """Seconds until the batch is due or the next heartbeat, whichever is first."""
        due_at = min(batch.last + self.quiet, batch.first + self.longest) if batch else next_beat
        return max(0.0, min(due_at, next_beat) - now)

    def lost_events(self) -> None:
        """The source lost events (a kernel queue overflow): the next batch is a full refresh."""
        self._queue.put(Change("lost", ""))

    def _apply(self, batch: Batch) -> Update | None:
        try:
            update = apply_batch(self.store, batch)
        except Exception as exc:  # a vault or index problem: said, retried, never the end of the watcher
            self._failures += 1
            if self.on_error is not None:
                self.on_error(exc)
            else:
                _LOG.warning("watcher: %s", exc, exc_info=True)
            return None
        self._failures = 0
        self.last_update = update
        if self.on_update is not None:
            self.on_update(update)
        return update

    # -- the running part: observer, thread, heartbeat ----------------------------------------
    @property
    def running(self) -> bool:
        """Whether the watcher's thread runs (one stopped from its own callback runs until its heartbeat is gone)."""
        thread = self._thread or self._ending
        return thread is not None and thread.is_alive()

    def start(self) -> Watcher:
        """Watch the note folders from now on; raises WatchLimit when the system allows no more watches."""
        with self._lock:
            if self.running:
                return self
            from watchdog.observers import Observer

            self._queue = queue.SimpleQueue()  # a new one: nothing of an earlier run (its stop) is left in it
            self._observer = Observer()
            self._watch_folders()
            try:
                self._observer.start()
            except OSError as exc:
                self._observer = None
                raise _limit_error(exc) from None
            self._overflow = _Overflow(self)
            logging.getLogger("watchdog.observers").addHandler(self._overflow)
            self._thread = threading.Thread(target=self._run, name="vaultmem-watch", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching (pending changes are applied first); the heartbeat goes with it."""
        with self._lock:
            thread, observer = self._thread, self._observer
            self._thread = self._observer = None
            if observer is not None:
                observer.stop()
            if thread is not None:
                self._queue.put(None)
                if thread is not threading.current_thread():
                    thread.join(timeout)
                else:  # stop() from on_update: the thread ends after it returns, clearing its heartbeat
                    self._ending = thread
            if observer is not None:
                observer.join(timeout)
            if self._overflow is not None:
                logging.getLogger("watchdog.observers").removeHandler(self._overflow)
            self._watches.clear()

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _watch_folders(self) -> None:
        """Watch each note folder that exists (recursively) and the memory root (for folders that come back)."""
        from watchdog.events import (DirCreatedEvent, DirDeletedEvent, DirMovedEvent, FileClosedEvent,
                                     FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent)

        kinds = [FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent,
                 DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
        handler = _Handler(self._queue_change)
        wanted = {path: path != self.layout.memory_root for path in (self.layout.memory_root, *self.layout.root_paths)}
        for path, recursive in wanted.items():
            if path in self._watches or not os.path.isdir(path):
                continue
            try:
                self._watches[path] = self._observer.schedule(handler, path, recursive=recursive, event_filter=kinds)
            except OSError as exc:
                raise _limit_error(exc) from None

    def _queue_change(self, change: Change) -> None:
        self._queue.put(change)

    def _run(self) -> None:
        """The watcher's thread: one full refresh, then batches as changes come, and the heartbeat."""
        cache = self.store.index.cache_dir
        batch = Batch(full=True, first=self.clock(), last=self.clock() - self.quiet)  # what changed unwatched
        next_beat = 0.0
        try:
            while True:
                try:
                    change = self._queue.get(timeout=self.wait(batch, self.clock(), next_beat))
                    while change is not None:
                        self._take(change, batch)
                        change = self._queue.get_nowait()
                except queue.Empty:
                    change = False
                now = self.clock()
                if change is None or self.due(batch, now):
                    batch = self._apply_pending(batch, now)
                    next_beat = 0.0
                if change is None:
                    return
                if now >= next_beat and not (batch.full or self._failures):
                    self._beat(cache)
                    next_beat = now + heartbeat.BEAT_EVERY_S
        except Exception as exc:  # a bug: the watcher stops, saying why (`running` turns False)
            if self.on_error is not None:
                self.on_error(exc)
            else:
                _LOG.exception("watcher stopped")
        finally:
            heartbeat.clear(cache)
            self.store.close()  # this thread's index connection

    def _beat(self, cache) -> None:
        """The heartbeat; one that cannot be written (the cache folder deleted by hand) is skipped,
        and reads scan meanwhile."""
        try:
            heartbeat.beat(cache, self.last_update.at if self.last_update else None)
        except OSError:
            pass

    def _take(self, change: Change, batch: Batch) -> None:
        if change.kind == "lost":
            if not batch:
                batch.first = batch.last = self.clock()
            batch.full = True
            return
        self.add(change, batch, self.clock())
        if change.is_dir:
            for path in {change.path, change.dest} & set(self.layout.root_paths):
                self._rewatch(path)

    def _rewatch(self, path: str) -> None:
        """A note folder went, came back or moved (a checkout, a `mv`): its old watch goes, a new one
        starts if the folder is there (watchdog keeps one watch per path, so it must go first)."""
        old = self._watches.pop(path, None)
        if old is not None:
            try:
                self._observer.unschedule(old)
            except (KeyError, OSError):  # its emitter ended with the folder
                pass
        self._watch_folders()

    def _apply_pending(self, batch: Batch, now: float) -> Batch:
        """Apply the batch; after a failure it stays pending (new changes join it), tried again after a pause."""
        if not batch:
            return batch
        if self._apply(batch) is not None:
            return Batch()
        pause = RETRY_S[min(self._failures, len(RETRY_S)) - 1]
        batch.first, batch.last = now + pause - self.longest, now + pause - self.quiet
        return batch


class _Handler:
    """watchdog's event handler: each event becomes a Change on the watcher's queue (nothing else here)."""

    def __init__(self, put: Callable[[Change], None]):
        self.put = put

    def dispatch(self, event: Any) -> None:
        if event.event_type in _KINDS:
            self.put(Change(event.event_type, os.fsdecode(event.src_path), os.fsdecode(event.dest_path or ""),
                            event.is_directory))


def _limit_error(exc: OSError) -> VaultmemError | OSError:
    """The inotify limits as one sentence with the fix; any other OSError as it is."""
    if exc.errno == errno.ENOSPC:
        return WatchLimit("the system's limit of watched folders (inotify watches) is reached; raise it with "
                          "`sudo sysctl fs.inotify.max_user_watches=524288` (add the setting to /etc/sysctl.conf "
                          "to keep it)", "fs.inotify.max_user_watches")
    if exc.errno == errno.EMFILE:
        return WatchLimit("the system's limit of file watchers (inotify instances) is reached; raise it with "
                          "`sudo sysctl fs.inotify.max_user_instances=1024`, or stop other watchers",
                          "fs.inotify.max_user_instances")
    return exc


__all__ = ["Batch", "Change", "Layout", "Update", "Watcher", "apply_batch", "sort_change"]
