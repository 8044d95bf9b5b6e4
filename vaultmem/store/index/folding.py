"""The per-device event logs folded into the index: uses (access), feedback, pins and decay factors
per note, read from `.vaultmem/devices/<device>/events-*.jsonl` from where the last fold stopped
(`logpos`). A mixin of Index: it runs on the sidecar's connection and write lock."""

from __future__ import annotations

from typing import Any

from ..events import FOLDED, log_files, read_new_lines
from .sidecar import heals
from .sqlrows import fold_event, transaction

__all__ = ["EventFolding"]


class EventFolding:
    """Index's event folding (see the module docstring); needs `_conn`, `_write_lock`, `_meta`,
    `_set_meta` and `devices_dir` from the Index it is mixed into."""

    @heals
    def fold_events(self) -> None:
        """Fold new access, feedback, pin and decay events of every device's logs into per-note counts.

        A line that is no valid event is skipped (doctor names it), and a log that cannot be read
        (a folder or a dangling link by that name) waits: neither may stop every command.
        """
        conn = self._conn()
        offsets = dict(conn.execute("SELECT file, offset FROM logpos"))
        pending = []
        for path in log_files(self.devices_dir, "events"):
            key = path.relative_to(self.devices_dir).as_posix()
            if path.is_file() and path.stat().st_size > offsets.get(key, 0):
                pending.append((key, path))
        if not pending:
            return
        with self._write_lock(), transaction(conn):
            for key, path in pending:
                start = conn.execute("SELECT offset FROM logpos WHERE file = ?", (key,)).fetchone()
                try:
                    events, end = read_new_lines(path, start[0] if start else 0)
                except OSError:
                    continue
                for ev in events:
                    if ev.get("event") in FOLDED:  # read_new_lines checked their fields
                        fold_event(conn, key, ev)
                conn.execute("INSERT OR REPLACE INTO logpos VALUES (?, ?)", (key, end))
            conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'version'")
            self._set_meta(conn, access_version=int(self._meta(conn, "access_version", "0")) + 1)

    def usage(self, note_id: str) -> tuple[int, float, int, int, float]:
        """(uses, last use, up votes, down votes, sum of ln(decay factors)) folded for one note id;
        zeros when it has none."""
        self.fold_events()
        conn = self._conn()
        used = conn.execute("SELECT uses, last FROM access WHERE id = ?", (note_id,)).fetchone() or (0, 0.0)
        votes = conn.execute("SELECT good, bad, scale FROM feedback WHERE id = ?", (note_id,)).fetchone() or (0, 0, 0.0)
        return used[0], used[1], votes[0], votes[1], votes[2]

    def pin_events(self) -> list[dict[str, Any]]:
        """Every device's folded pin and unpin events, oldest first: {id, event, ts, ratio, age_hours, log}."""
        self.fold_events()
        rows = self._conn().execute("SELECT id, event, ts, ratio, age_hours, file FROM pins ORDER BY ts, rowid")
        return [dict(zip(("id", "event", "ts", "ratio", "age_hours", "log"), row)) for row in rows]
