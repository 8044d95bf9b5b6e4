"""When the index looks at the files again: a writer's and a reader's catch-up (folder times, see
folderstate.py), the note after vaultmem's own writes, and a one-off read's freshen (a full sweep
while it is cheap, else at most every `index.sweep_every` seconds). A mixin of index.Index.

What each way can miss, and what closes it:
- catch_up sees every note created, renamed or deleted (its folder's time changes), not a note
  rewritten in place by another program (an editor saving in place keeps the folder's time);
- a reader of a long-lived process trusts a look that found nothing changed for READ_CHECK_S;
- freshen between sweeps misses edits in place for up to `index.sweep_every` seconds, except in the
  notes a recall is about to show, which it checks against their files and reads again;
- a running watcher (`vaultmem watch`) is told of every change, edits in place included, and while
  its heartbeat is live no read looks at all.
"""

from __future__ import annotations

import math
import time

from . import folderstate
from .. import heartbeat
from .scan import RefreshStats
from .sidecar import heals

__all__ = ["Freshness", "READ_CHECK_S"]

# How long a reader (recall, ask, context) of a long-lived process trusts its last look at the folder
# times (a meta query and a stat per folder, ~0.1 ms: a tenth of a recall). What it can miss for that
# long is a note another program created, renamed or deleted (a pull, a copy); every write of any
# vaultmem process is in the index at once, and a writer always looks (under the lock).
READ_CHECK_S = 1.0


class Freshness:
    """Index's catch_up, wrote and freshen (they use its lock, connection, meta and refresh)."""

    _reader_looked = -READ_CHECK_S  # when a reader last found the folders unchanged (monotonic)

    def catch_up(self, wait: bool = True, trust_s: float = READ_CHECK_S) -> RefreshStats | None:
        """Refresh if a note may have been created, renamed or deleted since the index last looked (a
        clone, a pull, a killed write: see folderstate.py); None when nothing changed.

        A writer (wait True) checks under the writers' lock, which it goes on holding while it writes.
        A reader (wait False) checks first without it, and while another writer is at work answers
        from what is indexed (stats.skipped) rather than wait for, say, a whole batch; while a live
        watcher keeps the index current (heartbeat.py) it does not look at all. A reader that found
        nothing changed does not look again for `trust_s` seconds (READ_CHECK_S; 0: look now).
        """
        if not wait:
            now = time.monotonic()
            if now - self._reader_looked < trust_s:
                return None  # looked a moment ago (see READ_CHECK_S)
            if heartbeat.live(self.cache_dir) or folderstate.unchanged(self):
                self._reader_looked = now
                return None
        with self._write_lock(wait) as held:
            if not held:
                return RefreshStats(skipped=True)
            self._wrote_in.clear()
            return None if folderstate.unchanged(self) else self.refresh()

    def wrote(self, verify: bool = False) -> None:
        """After vaultmem's own writes (under the same lock as the catch_up before them): keep the new
        times of the folders this process wrote notes into; another folder that changed stays stale.
        verify (a batch, whose writes take long) also lists each folder against the index."""
        with self._write_lock():
            folderstate.store_after_write(self, self._wrote_in, verify)
            self._wrote_in.clear()

    @heals
    def freshen(self, sweep_budget: float, sweep_every: float) -> RefreshStats:
        """A one-off read's look at the files before it answers (a CLI recall, ask or context).

        A full refresh (a stat of every note) while the last one cost at most `sweep_budget` seconds,
        or when it is `sweep_every` seconds old; in between, catch_up alone: notes created, renamed
        or deleted are seen (their folder's time changed), a note rewritten in place by another
        program is not until the next sweep, except among the hits, which recall checks against
        their files (ranking._short_list). Nothing while a live watcher keeps the index current.
        """
        if heartbeat.live(self.cache_dir):
            return RefreshStats(watched=True)
        conn = self._conn()
        found = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'sweep_s', 'swept_ns')"))
        try:
            cost, swept = float(found.get("sweep_s", "inf")), int(found.get("swept_ns", "0"))
        except ValueError:  # a hand-edited or foreign meta table: sweep, which stores them anew
            cost, swept = math.inf, 0
        if not found.get("generation") or cost <= sweep_budget or time.time_ns() - swept >= sweep_every * 1e9:
            return self.refresh(wait=False)
        return self.catch_up(wait=False, trust_s=0.0) or RefreshStats()
