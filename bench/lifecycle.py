"""Lifecycle benchmark (issue 17, "Numbers"): `gc --dry-run` and `forget --tag` of 1,000 notes at 100k notes.

    python bench/lifecycle.py --json bench/out/lifecycle.json     # 100k notes: built once, cached in /tmp
    python bench/lifecycle.py --notes 20000                       # smaller
    python bench/lifecycle.py --smoke                             # 300 notes, 30 forgotten: CI

The vault is bench/_synth.py's (`make_vault`, through sync_watch.cached_vault), indexed once and kept
under --cache (default /tmp/vaultmem-bench/lifecycle-<notes>-s<seed>/). Each figure is timed both as a
one-off CLI process (`vaultmem …`, what a person waits for: process start, opening the vault, its
catch-up, the work, the JSON out) and in this process (`Vault.gc` / `Vault.forget_where` on an open
vault: the work alone).

- gc_dry_run_cli_s, gc_dry_run_s: `gc --dry-run --json` over the whole vault (median of --runs), and
  gc_listed, how many memories it would archive (the synthetic notes' scores and ages decide).
- forget_tag_cli_s, forget_tag_s: `forget --tag <fresh tag> --reason …` of --forget notes (1,000),
  written for the run into `memories/bench-lifecycle/` and indexed first; once by the CLI, once by
  the library (a second batch). Afterwards the archived copies, the day note lines and this run's
  device log are removed, so the cached vault stays as it was built.
- consolidate_s: one `vaultmem consolidate --dry-run --json` process (CLI wall seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
from recall import _cli_command, _environment, _machine  # noqa: E402
from _figures import finish, run_options, smoke_cache  # noqa: E402
from sync_watch import cached_vault  # noqa: E402

TARGETS = {"gc_dry_run_cli_s": 5.0, "forget_tag_cli_s": 3.0, "consolidate_s": 30.0}
FOLDER = "bench-lifecycle"
DEVICE = "bench-lifecycle"
RUNS = 3


def time_consolidate(vault: Path, env: dict) -> float:
    """Wall seconds of one `vaultmem consolidate --dry-run --json` process on the vault (it finds every
    group and writes nothing; exit 3 when it would write). bench/consolidate.py times the writing run
    and checks the groups it finds against planted ones."""
    start = time.perf_counter()
    done = subprocess.run([*_cli_command()[0], "consolidate", "--dry-run", "--json", "--vault", str(vault)],
                          capture_output=True, text=True, env=env, timeout=600)
    took = time.perf_counter() - start
    if done.returncode not in (0, 3):
        raise SystemExit(f"consolidate --dry-run failed: {done.stderr[-2000:]}")
    return round(took, 3)


def time_gc(vault: Path, env: dict, runs: int) -> dict:
    """`gc --dry-run`: CLI wall seconds (median), in-process seconds (median), how many it lists."""
    from vaultmem import Vault

    cli, listed = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([*_cli_command()[0], "gc", "--dry-run", "--json", "--vault", str(vault)],
                              capture_output=True, text=True, env=env, timeout=600)
        cli.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"gc --dry-run failed: {done.stderr[-2000:]}")
        listed = len(json.loads(done.stdout)["notes"])
    v = Vault(vault)
    lib = []
    for _ in range(runs):
        start = time.perf_counter()
        v.gc(dry_run=True)
        lib.append(time.perf_counter() - start)
    v.close()
    return {"gc_dry_run_cli_s": round(statistics.median(cli), 3), "gc_dry_run_s": round(statistics.median(lib), 3),
            "gc_listed": listed}


def _write_batch(vault: Path, tag: str, n: int) -> None:
    """n new memories tagged `tag` in memories/bench-lifecycle/, indexed."""
    from vaultmem import Vault

    folder = vault / "memories" / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"{tag} {i:05d}.md").write_text(
            f"---\nid: 01BENCH{tag[-4:].upper()}{i:015d}\ntimestamp: 2026-11-01T10:00:00Z\nscore: 3\n"
            f"tags: [{tag}]\nsource: bench\ntrust: agent\nlifecycle: note\n---\nBench note {i} of {tag}.\n",
            encoding="utf-8")
    v = Vault(vault)
    v.refresh()
    v.close()


def time_forget(vault: Path, env: dict, n: int) -> dict:
    """`forget --tag` of n fresh notes by the CLI, then of n more by the library; both undone after."""
    from vaultmem import Vault

    episodes, archive = vault / "episodes", vault / "archive"
    days_before = {p.name: p.read_bytes() for p in episodes.glob("*.md")}
    archived_before = {p.name for p in archive.glob("*.md")}
    figures: dict = {}
    try:
        _write_batch(vault, "bench-forget-cli", n)
        start = time.perf_counter()
        done = subprocess.run([*_cli_command()[0], "forget", "--tag", "bench-forget-cli", "--reason", "bench",
                               "--json", "--vault", str(vault)], capture_output=True, text=True, env=env, timeout=600)
        figures["forget_tag_cli_s"] = round(time.perf_counter() - start, 3)
        if done.returncode != 0:
            raise SystemExit(f"forget failed: {done.stderr[-2000:]}")
        figures["forget_cli_archived"] = len(json.loads(done.stdout)["notes"])
        _write_batch(vault, "bench-forget-lib", n)
        v = Vault(vault)
        start = time.perf_counter()
        result = v.forget_where(tags=["bench-forget-lib"], reason="bench")
        figures["forget_tag_s"] = round(time.perf_counter() - start, 3)
        figures["forget_lib_archived"] = len(result.notes)
        v.close()
    finally:
        _undo(vault, days_before, archived_before)
    return figures


def _undo(vault: Path, days_before: dict[str, bytes], archived_before: set[str]) -> None:
    """Put the cached vault back as it was: no bench notes, day notes as they were, no bench device log."""
    from vaultmem import Vault

    shutil.rmtree(vault / "memories" / FOLDER, ignore_errors=True)
    for path in (vault / "archive").glob("*.md"):
        if path.name not in archived_before:
            path.unlink()
    for path in (vault / "episodes").glob("*.md"):
        if path.name not in days_before:
            path.unlink()
        elif path.read_bytes() != days_before[path.name]:
            path.write_bytes(days_before[path.name])
    shutil.rmtree(vault / ".vaultmem" / "devices" / DEVICE, ignore_errors=True)
    v = Vault(vault)
    v.refresh()
    v.close()


def run(args: argparse.Namespace) -> dict:
    cache = Path(args.cache or f"/tmp/vaultmem-bench/lifecycle-{args.notes}-s{args.seed}")
    env = {**_environment(cache), "VAULTMEM_DEVICE_ID": DEVICE}
    os.environ["VAULTMEM_DEVICE_ID"] = DEVICE  # this process's own forget audits into the same, removed, log
    vault, info = cached_vault(cache, args.notes, args.seed)
    figures = {"notes": args.notes, "forgotten": args.forget, "machine": _machine(), "build": info}
    figures.update(time_gc(vault, env, args.runs))
    figures.update(time_forget(vault, env, args.forget))
    figures["consolidate_s"] = time_consolidate(vault, env)
    return figures


def print_table(figures: dict) -> None:
    print(f"lifecycle at {figures['notes']} notes ({figures['forgotten']} forgotten)")
    for key in ("gc_dry_run_cli_s", "gc_dry_run_s", "gc_listed", "forget_tag_cli_s", "forget_tag_s", "consolidate_s"):
        value = figures.get(key)
        target = TARGETS.get(key)
        verdict = "" if target is None or value is None or figures["notes"] < 100_000 else \
            (f"  (target <= {target:g}: {'ok' if value <= target else 'MISSED'})")
        print(f"  {key:20} {value if value is not None else '-':>10}{verdict}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=100_000, help="memory notes in the vault (default 100000)")
    p.add_argument("--forget", type=int, default=1000, help="notes forgotten by tag per timing (default 1000)")
    p.add_argument("--runs", type=int, default=RUNS, help=f"gc --dry-run timings, median (default {RUNS})")
    run_options(p, "lifecycle", "300 notes, 30 forgotten, 1 run, a fresh cache: for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.forget, args.runs = 300, 30, 1
        smoke_cache(args, "vaultmem-lifecycle-smoke-")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    finish(args, run(args), print_table)


if __name__ == "__main__":
    main()
