"""A running watcher's heartbeat: how a one-off command learns that the index is being kept current.

The watcher (sync/watch.py) writes `watcher.json` in the index's cache folder: its pid, host and the
time of its last beat, at most about once a second and after each batch it applies. A read that
would rescan the notes first (a CLI recall, ask, a server's rescan) skips the rescan while the
heartbeat is live: same host, the pid alive, the beat younger than FRESH_S. Anything else — no
file, a torn one, a dead pid, an old beat, another machine's file in a synced cache — is no
heartbeat, and the read scans as it would without a watcher.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .files import atomic_write, process_alive

FILE = "watcher.json"
BEAT_EVERY_S = 1.0  # a watcher with nothing to do beats this often
FRESH_S = 3.0  # older than this, a beat proves nothing (a stopped or hung watcher)


def beat(cache_dir: Path, applied: float | None = None, now: float | None = None) -> None:
    """Write this process's heartbeat (applied: when it last applied a batch, if ever)."""
    record = {"pid": os.getpid(), "host": _host(), "beat": time.time() if now is None else now,
              "applied": applied}
    atomic_write(cache_dir / FILE, json.dumps(record).encode("utf-8"), durable=False)


def read(cache_dir: Path) -> dict | None:
    """The heartbeat as written, or None when there is none that can be read."""
    try:
        record = json.loads((cache_dir / FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def live(cache_dir: Path, now: float | None = None) -> bool:
    """Whether a watcher on this host is alive and beat within FRESH_S (a beat from the future, a
    clock set back, counts as stale too)."""
    record = read(cache_dir)
    if record is None:
        return False
    stamp, pid = record.get("beat"), record.get("pid")
    if not isinstance(stamp, (int, float)) or not isinstance(pid, int) or record.get("host") != _host():
        return False
    age = (time.time() if now is None else now) - stamp
    return -0.5 <= age <= FRESH_S and process_alive(pid)


def _host() -> str:
    # not socket.gethostname(): a one-off recall reads this, and socket costs an import
    return os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")


def clear(cache_dir: Path) -> None:
    """Remove the heartbeat if it is this process's (a watcher that stops; another may have taken over)."""
    record = read(cache_dir)
    if record is not None and record.get("pid") == os.getpid():
        try:
            os.unlink(cache_dir / FILE)
        except FileNotFoundError:
            pass


__all__ = ["BEAT_EVERY_S", "FRESH_S", "beat", "clear", "live", "read"]
