"""Watcher benchmark (issue 16, section "watcher"): save-to-recallable latency, and a one-off CLI recall
while a watcher runs.

    python bench/sync_watch.py --json bench/out/sync-watch.json     # 100k notes: built once, cached in /tmp
    python bench/sync_watch.py --smoke                              # 300 notes, 20 saves: CI

The vault is bench/_synth.py's (`make_vault`), indexed once and kept under --cache (default
/tmp/vaultmem-bench/watch-<notes>-s<seed>/) for the next run; the saves happen in a folder of their
own (`memories/bench-watch/`), deleted at the end, so the cached vault stays as it was built.

A watcher runs as its own process (`vaultmem watch --json`, the console script beside this
interpreter). This process then saves notes the way editors do, in turn: a new note written to a
hidden temp file and renamed into place (an atomic save), and the note just created rewritten in
place (truncate and write) with a new word. First, a pull: --pull new notes (1,000) written at
once, each by temp file and rename as git does; `pull_indexed_after_s` is the time from the last
write until all are indexed, `pull_batches` the watcher's index updates for them. `save_to_recallable_ms` is the time from the save's
last system call until `Vault.recall(word)` in this process returns that note (polled every
POLL_S; this process's own rescans are skipped, as the watcher's heartbeat is live, so only the
watcher can make the note recallable). Then `vaultmem recall … --json` runs as a one-off process
CLI_RUNS times with the watcher running (`cli_recall_watched_s`), and again once the watcher
stopped, with its default refresh (`cli_recall_unwatched_s`) and with --no-refresh
(`cli_recall_no_refresh_s`); `import_floor_s` is `python -c "import vaultmem, …ranking"` (numpy
included), timed in turn with the watched recalls, so both see the same load: what any one-off
recall costs before it opens the vault. Medians; the machine's load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
from _figures import finish, run_options, smoke_cache  # noqa: E402
from recall import CLI_QUERY, IMPORT_FLOOR, _cli_command, _environment, _machine, _percentile, _wall_runs  # noqa: E402

TARGETS = {"save_to_recallable_p50_ms": 300, "save_to_recallable_p99_ms": 1000, "cli_recall_watched_s": 0.3}
POLL_S = 0.002
SAVE_TIMEOUT_S = 10.0
CLI_RUNS = 15
FOLDER = "bench-watch"


def cached_vault(cache: Path, notes: int, seed: int) -> tuple[Path, dict]:
    """The synthetic vault, indexed; built (minutes at 100k) only when the cache has none."""
    from _synth import make_vault

    from vaultmem import Vault

    vault, marker = cache / "vault", cache / "built.json"
    if marker.exists():
        return vault, json.loads(marker.read_text())
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    info = make_vault(vault, notes, seed=seed)
    info.pop("ids")
    start = time.perf_counter()
    v = Vault(vault)
    v.refresh()
    v.close()
    info["index_s"] = round(time.perf_counter() - start, 2)
    marker.write_text(json.dumps(info))
    return vault, info


def start_watcher(vault: Path, env: dict, log: Path) -> subprocess.Popen:
    """`vaultmem watch --json` in its own process, once its first refresh is applied and it beats."""
    from vaultmem.store import heartbeat

    base, _ = _cli_command()
    proc = subprocess.Popen([*base, "watch", "--vault", str(vault), "--json"], env=env,
                            stdout=log.open("w"), stderr=subprocess.PIPE, text=True)
    cache = vault / ".vaultmem" / "cache"
    deadline = time.monotonic() + 600
    while not heartbeat.live(cache):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the watcher did not start: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    return proc


def stop_watcher(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


def _note(i: int, word: str) -> bytes:
    return (f"---\nid: 01BENCHWATCH{i:014d}\ntype: fact\nscore: 5\ntags: [bench]\n---\n"
            f"Benchmark save {i}: the watcher must make {word} recallable.\n").encode()


def _recallable(v, word: str, ident: str) -> bool:
    return any(hit.id == ident for hit in v.recall(word, limit=3, record_access=False))


def save_to_recallable(vault: Path, saves: int) -> dict:
    """Milliseconds from each save to its note being recallable here, by kind of save."""
    from vaultmem import Vault

    v = Vault(vault)
    folder = vault / "memories" / FOLDER
    folder.mkdir(exist_ok=True)
    times: dict[str, list[float]] = {"atomic": [], "in_place": []}
    missed = 0
    for i in range(saves):
        n = i - i % 2  # an in-place save rewrites the note the atomic save before it created
        word = f"qzw{i:05d}x"
        path = folder / f"Watched {n:05d}.md"
        if i % 2 == 0:
            temp = folder / f".Watched {n:05d}.md.tmp"
            temp.write_bytes(_note(n, word))
            os.replace(temp, path)
        else:
            with open(path, "r+b") as handle:
                handle.truncate(0)
                handle.write(_note(n, word))
        saved = time.perf_counter()
        while not _recallable(v, word, f"01BENCHWATCH{n:014d}"):
            if time.perf_counter() - saved > SAVE_TIMEOUT_S:
                missed += 1
                break
            time.sleep(POLL_S)
        times["in_place" if i % 2 else "atomic"].append((time.perf_counter() - saved) * 1000)
    shutil.rmtree(folder)
    deadline = time.monotonic() + 60
    while v.index.count("path LIKE ?", (f"memories/{FOLDER}/%",)) and time.monotonic() < deadline:
        time.sleep(0.05)  # the watcher drops the rows: the cached vault is as it was
    v.close()
    every = times["atomic"] + times["in_place"]
    out = {"saves": saves, "missed": missed, "p50_ms": _percentile(every, 50), "p99_ms": _percentile(every, 99),
           "max_ms": max(every), "mean_ms": statistics.fmean(every)}
    out["by_kind"] = {kind: {"p50_ms": _percentile(ms, 50), "p99_ms": _percentile(ms, 99)} for kind, ms in times.items()}
    return out


def pull(vault: Path, log: Path, notes: int) -> dict:
    """A `git pull`'s worth of new notes written at once (temp file and rename each, as git does):
    seconds from the last write until every one is indexed, and the watcher's batches for them."""
    from vaultmem import Vault

    v = Vault(vault)
    folder = vault / "memories" / FOLDER / "pulled"
    folder.mkdir(parents=True)
    before = len(log.read_text().splitlines())
    for i in range(notes):
        temp = folder / f".Pulled {i:05d}.md.tmp"
        temp.write_bytes(_note(10**6 + i, f"pulled{i}"))
        os.replace(temp, folder / f"Pulled {i:05d}.md")
    written = time.perf_counter()
    while v.index.count("path LIKE ?", (f"memories/{FOLDER}/pulled/%",)) < notes:
        if time.perf_counter() - written > 60:
            break
        time.sleep(POLL_S)
    seconds = time.perf_counter() - written
    v.close()
    time.sleep(1.0)  # the watcher prints each update after applying it
    updates = [json.loads(line) for line in log.read_text().splitlines()[before:] if line.strip()]
    return {"notes": notes, "indexed_after_s": round(seconds, 3),
            "batches": sum(1 for u in updates if any("/pulled/" in path for path in u["paths"]))}


def cli_recalls(vault: Path, env: dict, runs: int, *extra: str) -> list[float]:
    base, _ = _cli_command()
    return _wall_runs([*base, "recall", CLI_QUERY, "--vault", str(vault), "--json", *extra], env, runs)


def run(args: argparse.Namespace) -> dict:
    cache = Path(args.cache or f"/tmp/vaultmem-bench/watch-{args.notes}-s{args.seed}")
    env = _environment(cache)
    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    vault, info = cached_vault(cache, args.notes, args.seed)
    machine = _machine()
    started = time.perf_counter()
    watcher = start_watcher(vault, env, cache / "watch.log")
    watcher_start_s = time.perf_counter() - started
    try:
        pulled = pull(vault, cache / "watch.log", args.pull)
        saves = save_to_recallable(vault, args.saves)
        watched, floor = [], []
        for _ in range(args.runs):  # in turn: the machine's load moves both alike
            watched += cli_recalls(vault, env, 1)
            floor += _wall_runs([sys.executable, "-c", IMPORT_FLOOR], env, 1)
    finally:
        code = stop_watcher(watcher)
    unwatched, no_refresh = [], []
    for _ in range(max(3, args.runs // 2)):
        unwatched += cli_recalls(vault, env, 1)
        no_refresh += cli_recalls(vault, env, 1, "--no-refresh")
    updates = [json.loads(line) for line in (cache / "watch.log").read_text().splitlines() if line.strip()]
    figures = {
        "notes": info["notes"], "saves": saves["saves"], "missed": saves["missed"],
        "save_to_recallable_p50_ms": round(saves["p50_ms"], 1), "save_to_recallable_p99_ms": round(saves["p99_ms"], 1),
        "save_to_recallable_max_ms": round(saves["max_ms"], 1), "by_kind": saves["by_kind"],
        "cli_recall_watched_s": round(statistics.median(watched), 3), "cli_recall_watched_max_s": round(max(watched), 3),
        "cli_recall_unwatched_s": round(statistics.median(unwatched), 3),
        "cli_recall_no_refresh_s": round(statistics.median(no_refresh), 3),
        "import_floor_s": round(statistics.median(floor), 3),
        "pull_notes": pulled["notes"], "pull_indexed_after_s": pulled["indexed_after_s"],
        "pull_batches": pulled["batches"], "watcher_start_s": round(watcher_start_s, 2), "watcher_updates": len(updates),
        "watcher_apply_p50_ms": _percentile([u["ms"] for u in updates if not u["full"]] or [0.0], 50),
        "watcher_exit_code": code, "query": CLI_QUERY, "vault_build": info, "machine": machine,
        "load_avg_end": os.getloadavg(),
    }
    return figures


def print_table(figures: dict) -> None:
    load = figures["machine"]["load_avg_start"][0], figures["load_avg_end"][0]
    print(f"watcher, {figures['notes']:,} notes, {figures['saves']} saves ({figures['missed']} missed), "
          f"load average {load[0]:.1f} -> {load[1]:.1f}:")
    for key in ("save_to_recallable_p50_ms", "save_to_recallable_p99_ms", "save_to_recallable_max_ms",
                "watcher_apply_p50_ms", "cli_recall_watched_s", "cli_recall_watched_max_s", "cli_recall_unwatched_s",
                "cli_recall_no_refresh_s", "import_floor_s", "pull_notes", "pull_indexed_after_s", "pull_batches",
                "watcher_start_s"):
        target = TARGETS.get(key)
        verdict = "" if target is None else f"  target <= {target:g}: " + ("met" if figures[key] <= target else "MISSED")
        print(f"  {key:28} {figures[key]:>10}{verdict}")
    for kind, values in figures["by_kind"].items():
        print(f"  {kind:28} p50 {values['p50_ms']:.1f} ms, p99 {values['p99_ms']:.1f} ms")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=100_000, help="memory notes in the vault (default 100000)")
    p.add_argument("--saves", type=int, default=200, help="timed saves (default 200)")
    p.add_argument("--runs", type=int, default=CLI_RUNS, help=f"one-off CLI recalls timed (default {CLI_RUNS})")
    p.add_argument("--pull", type=int, default=1000, help="notes of the simulated pull (default 1000)")
    run_options(p, "watch", "300 notes, 20 saves, 3 runs, a fresh cache: seconds, for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.saves, args.runs, args.pull = 300, 20, 3, 50
        smoke_cache(args, "vaultmem-watch-smoke-")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    finish(args, run(args), print_table)


if __name__ == "__main__":
    main()
