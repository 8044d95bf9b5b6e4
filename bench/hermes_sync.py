"""How long Hermes waits on the vaultmem provider's sync_turn (target: returns in <= 2 ms).

One process runs the provider as Hermes does each turn: prefetch(query), then sync_turn(user,
assistant), timing only the sync_turn call. Every other turn is memorable (a cue and a typed value),
so the background writer is busy remembering while later calls are timed: the figure includes the
wait for the GIL that writer holds. The writer is flushed at the end and the notes counted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import _machine, _percentile, write_figures  # noqa: E402

TARGET_MS = 2.0


def run(turns: int) -> dict:
    from vaultmem.hermes import VaultmemProvider

    with tempfile.TemporaryDirectory() as home:
        os.environ["HERMES_HOME"] = home
        provider = VaultmemProvider()
        provider.initialize("bench", hermes_home=home, platform="cli", agent_context="primary")
        times = []
        started = time.perf_counter()
        for i in range(turns):
            provider.prefetch(f"staging deploy step {i % 50}")
            user = f"Remember: staging deploy step {i} runs on port {8000 + i}" if i % 2 == 0 else "thanks, ok"
            t = time.perf_counter()
            provider.sync_turn(user, "Noted.", session_id="bench")
            times.append((time.perf_counter() - t) * 1000)
        provider.on_session_end([])
        wall = time.perf_counter() - started
        notes = len(provider._vault.list())
        provider.shutdown()
    return {"turns": turns, "sync_turn_p50_ms": round(_percentile(times, 50), 4),
            "sync_turn_p99_ms": round(_percentile(times, 99), 4), "sync_turn_max_ms": round(max(times), 3),
            "target_ms": TARGET_MS, "notes_written": notes, "wall_s": round(wall, 2), "machine": _machine()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=1000, help="turns (default 1000)")
    p.add_argument("--json", help="write the figures to this JSON file")
    args = p.parse_args(argv)
    result = run(args.turns)
    print(f"sync_turn over {result['turns']} turns: p50 {result['sync_turn_p50_ms']} ms, "
          f"p99 {result['sync_turn_p99_ms']} ms, max {result['sync_turn_max_ms']} ms "
          f"(target <= {TARGET_MS} ms); {result['notes_written']} notes written")
    if args.json:
        write_figures(args.json, result)


if __name__ == "__main__":
    main()
