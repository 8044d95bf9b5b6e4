"""A Store's hooks in the background: what a write audits is held while it has the write lock, and
handed, once the lock is released (the notes durable), to one thread per Store that runs each hook
this device enabled (hooks.py), with a timeout, on a bounded queue. A write never waits for a hook.

At most once: the events wait in memory, so a process killed with hook runs queued loses those runs
(never a note: the notes were on disk before the events were queued). A process that ends normally
waits for its queue at most `hooks.timeout` (+1 s) before it exits; runs left then are recorded.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..config import HOOK_ACTIONS
from .events import append_events
from .writelock import notice

__all__ = ["BATCH", "HookQueue", "finish_all"]

BATCH = 1000
"""Events per hook run, as JSON lines: a batch of 10,000 notes is 10 runs of a command, not 10,000
processes, and one event is a run of its own (a hook sees a write as soon as it is on disk)."""
_IDS_KEPT = 20  # note ids named in a failure record (the rest are counted)
_live: weakref.WeakSet[HookQueue] = weakref.WeakSet()


class HookQueue:
    """The hooks of one Store: `stage` what a write audits, `release` it when the write lock is let
    go; `settings` gives the current hooks section, `rows` the index rows {id: row} of note ids."""

    def __init__(self, root: Path, device_dir: Path, settings: Callable[[], Any],
                 rows: Callable[[list[str]], Mapping[str, Mapping[str, Any]]]):
        self.root, self.device_dir = root, device_dir
        self._settings, self._rows = settings, rows
        self._staged: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._queue: queue.Queue[list[dict[str, Any]]] | None = None

    def stage(self, audited: list[dict[str, Any]], held: bool) -> None:
        """Keep a write's hook events until the write lock is released (now, when it is not `held`)."""
        from .hooks import hook_events  # here: its subprocess import (~4 ms) is for a vault that has hooks

        events = hook_events(audited, time.time())
        if events:
            with self._lock:
                self._staged += events
        if not held:
            self.release()

    def release(self) -> None:
        """Queue the staged events, BATCH to a run; a full queue drops a run and records that."""
        with self._lock:
            events, self._staged = self._staged, []
        for start in range(0, len(events), BATCH):
            batch = events[start:start + BATCH]
            try:
                self._started().put_nowait(batch)
            except queue.Full:
                self._dropped(batch, f"the queue was full ({self._settings().queue} runs waiting)")

    def drain(self, timeout: float) -> bool:
        """Wait until every queued run has ended, at most `timeout` seconds; whether they all did."""
        if self._queue is None:
            return True
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    # -- the thread -------------------------------------------------------------------------------
    def _started(self) -> queue.Queue[list[dict[str, Any]]]:
        with self._lock:
            if self._queue is None:
                self._queue = queue.Queue(maxsize=self._settings().queue)
                threading.Thread(target=self._work, args=(self._queue,), name="vaultmem-hooks", daemon=True).start()
                _live.add(self)
            return self._queue

    def _work(self, waiting: queue.Queue[list[dict[str, Any]]]) -> None:
        while True:
            batch = waiting.get()
            try:
                self._deliver(batch)
            except Exception as exc:  # the thread must outlive anything: the next write's hooks still run
                self._record([spec["name"] for spec in self._runnable()], batch, f"not run: {exc}")
            finally:
                waiting.task_done()

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        from .hooks import run_hook

        specs = self._runnable()
        if not specs:
            return
        events = self._completed(batch)
        timeout = float(self._settings().timeout)
        for spec in specs:
            chosen = [ev for ev in events if _wants(spec, ev["action"])]
            if chosen:
                outcome = run_hook(spec, chosen, self.root, timeout)
                if not outcome.ok:
                    self._record([str(spec["name"])], chosen, outcome.why, outcome.stderr)

    def _runnable(self) -> list[Mapping[str, Any]]:
        """The configured hooks this device enabled as they are now (a changed one is off)."""
        from .hooks import digest, enabled_digests

        enabled = enabled_digests(self.root)
        return [spec for spec in self._settings().run if spec["name"] in enabled
                and enabled[spec["name"]].get("digest") == digest(spec, self.root)]

    def _completed(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events with the path, title and namespace the index has for each note."""
        rows = self._rows([ev["id"] for ev in batch])
        out = []
        for ev in batch:
            row = rows.get(ev["id"], {})
            out.append({**ev, "path": ev["path"] or row.get("path", ""), "title": ev["title"] or row.get("title", ""),
                        "namespace": row.get("namespace") or ""})
        return out

    # -- what went wrong --------------------------------------------------------------------------
    def _dropped(self, batch: list[dict[str, Any]], why: str) -> None:
        names = [str(spec["name"]) for spec in self._runnable()
                 if any(_wants(spec, ev["action"]) for ev in batch)]
        self._record(names, batch, f"not run: {why}")

    def _record(self, names: list[str], events: list[dict[str, Any]], why: str, stderr: str = "") -> None:
        """A failure in this device's hooks log, and a line on stderr (the notes are written)."""
        if not names:
            return
        stamp = time.time()
        ids = [ev["id"] for ev in events[:_IDS_KEPT]]
        append_events(self.device_dir, "hooks", [{"event": "hook_failed", "hook": name, "why": why, "stderr": stderr,
                                                  "events": len(events), "ids": ids, "ts": stamp} for name in names])
        notice(f"hook {', '.join(names)} failed: {why} (the notes are written; `vaultmem hooks list` shows it)")

    def finish(self) -> None:
        """At the process's end: let the queued runs end, at most hooks.timeout + 1 s; record the rest."""
        self.release()
        if self.drain(float(self._settings().timeout) + 1.0) or self._queue is None:
            return
        left: list[dict[str, Any]] = []
        while True:
            try:
                left += self._queue.get_nowait()
            except queue.Empty:
                break
        if left:
            self._dropped(left, "the process ended first")


def _wants(spec: Mapping[str, Any], action: str) -> bool:
    """Whether a hook is run for this action (its `actions`, or every one)."""
    return action in spec.get("actions", HOOK_ACTIONS)


@atexit.register
def finish_all() -> None:
    """Let every Store's queued hook runs end (HookQueue.finish): at exit, and before a one-off command's os._exit."""
    for hooks in list(_live):
        hooks.finish()
