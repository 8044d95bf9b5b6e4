"""`vaultmem watch`: the watcher in the foreground (registered by cli.py's last line)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Annotated, Optional

import typer

from .cli_app import EXIT_ERROR, JsonOpt, VaultOpt, app
from .console import error_message, open_vault, report_error, say


@app.command()
def watch(
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
    stop_after: Annotated[Optional[float], typer.Option(
        "--stop-after", metavar="SECONDS", min=0,
        help="Stop by itself after this many seconds (default: run until Ctrl-C or SIGTERM).")] = None,
) -> None:
    """Keep the index current while notes change on disk, until Ctrl-C.

    A save in Obsidian or any editor, a rename, a delete or a `git pull` is recallable within a
    second; meanwhile one-off commands (`vaultmem recall`, `ask`, …) skip their rescan. With --json,
    one line per index update (at, paths, full, added, updated, removed, ms); the first is the
    full refresh for what changed while nothing watched.

    \b
    Example (stops by itself after a second; without --stop-after it runs until Ctrl-C):
      vaultmem watch --json --stop-after 1
      "full": true
    """
    v = open_vault(vault)
    stop = threading.Event()

    def on_update(update) -> None:
        if json_out:
            sys.stdout.write(json.dumps(update.to_dict(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        stats = update.stats
        what = "everything (full refresh)" if update.full else ", ".join(update.paths[:3]) + (
            f" and {len(update.paths) - 3} more" if len(update.paths) > 3 else "")
        say(f"{time.strftime('%H:%M:%S')}  {what}: {stats.added} added, {stats.updated} updated, "
            f"{stats.removed} removed ({update.seconds * 1000:.0f} ms)")

    def on_error(exc: BaseException) -> None:
        report_error((error_message(exc) or str(exc)) + " (the watcher tries again)", exc, json_out)

    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    watcher = v.watch(on_update=on_update, on_error=on_error)
    if not json_out:
        say(f"Watching {v.root} (Ctrl-C stops)", err=True)
    deadline = None if stop_after is None else time.monotonic() + stop_after
    try:
        while watcher.running and not stop.is_set():
            left = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            if left <= 0:
                break
            stop.wait(left)
    except KeyboardInterrupt:  # Ctrl-C: the clean way out
        pass
    finally:
        alive = watcher.running
        watcher.stop()
        signal.signal(signal.SIGTERM, previous)
    if not alive:  # the watcher's thread ended on its own: it said why through on_error
        raise typer.Exit(EXIT_ERROR)


__all__ = ["watch"]
