"""The per-device event logs folded into the index: uses (access), feedback, pins and decay factors
per note, read from `.vaultmem/devices/<device>/events-*.jsonl` from where the last fold stopped
(`logpos`). A mixin of Index: it runs on the sidecar's connection and write lock."""

from __future__ import annotations

from typing import Any

from ..events import FOLDED, log_files, read_new_lines
from .sidecar import heals
from .sqlrows import fold_event, transaction

__all__ = ["EventFolding"]

_CHUNK = 500  # ids per IN (…) query, well under SQLite's bound on parameters


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
        return self.usages([note_id])[note_id]

    def usages(self, note_ids: list[str]) -> dict[str, tuple[int, float, int, int, float]]:
        """`usage` of each of these note ids, the logs folded once for them all."""
        self.fold_events()
        conn = self._conn()
        used: dict[str, tuple] = {}
        votes: dict[str, tuple] = {}
        for at in range(0, len(note_ids), _CHUNK):
            part = note_ids[at:at + _CHUNK]
            marks = ", ".join("?" * len(part))
            used.update((r[0], r[1:]) for r in conn.execute(f"SELECT id, uses, last FROM access WHERE id IN ({marks})", part))
            votes.update((r[0], r[1:]) for r in conn.execute(
                f"SELECT id, good, bad, scale FROM feedback WHERE id IN ({marks})", part))
        return {i: (*used.get(i, (0, 0.0)), *votes.get(i, (0, 0, 0.0))) for i in note_ids}

    def pin_events(self) -> list[dict[str, Any]]:
        """Every device's folded pin and unpin events, oldest first: {id, event, ts, ratio, age_hours, log}."""
        self.fold_events()
        rows = self._conn().execute("SELECT id, event, ts, ratio, age_hours, file FROM pins ORDER BY ts, rowid")
        return [dict(zip(("id", "event", "ts", "ratio", "age_hours", "log"), row)) for row in rows]
