"""Recall benchmark: index, refresh, open and recall a synthetic vault, each in a fresh process.

    python bench/recall.py --notes 100000 --json bench/out/recall-100k.json
    python bench/recall.py --smoke                    # 200 notes, 50 queries: a few seconds, for CI

The vault (bench/_synth.py) is built in a temporary folder (or --workdir DIR, kept with --keep).
Every figure is measured in its own subprocess of this script (`--_phase NAME`), so the
generator's memory and warm caches do not leak into it; the notes are in the OS page cache
(written moments before), so "cold" means no index sidecar, not a cold disk. Subprocesses run
with bytecode caching on (PYTHONDONTWRITEBYTECODE is dropped) as an installed package would.
peak_rss_index_mb is the index process alone (ru_maxrss); extra.index_tree_peak_rss_mb adds the
worker processes it starts; extra.faults_per_recall is the recall process's minor page faults over
the timed queries, per query. extra.machine records the load average and a Python speed yardstick:
other processes on the machine skew every figure. With --profile the index, refresh and recall
phases also run under cProfile (slower; the figures of that run are inflated).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEYS = ("notes", "index_cold_s", "refresh_s", "open_s", "recall_p50_ms", "recall_p99_ms", "cli_recall_s",
        "peak_rss_index_mb", "rss_loaded_mb", "sidecar_mb")
TARGETS = {  # key: (upper bound, number of notes the bound is set for)
    "index_cold_s": (10, 100_000), "peak_rss_index_mb": (1024, 100_000), "refresh_s": (0.5, 100_000),
    "open_s": (0.1, 100_000), "recall_p50_ms": (1, 100_000), "recall_p99_ms": (5, 100_000),
    "rss_loaded_mb": (300, 100_000), "sidecar_mb": (160, 100_000), "cli_recall_s": (0.2, 10_000),
}
UNITS = {"_s": ("s", 3), "_ms": ("ms", 3), "_mb": ("MB", 1)}  # key suffix: (unit, decimals)
CLI_QUERY = "合同编号 CT2024"
CLI_RUNS = 5
IMPORT_FLOOR = "import vaultmem, vaultmem.recall.ranking"  # what any recall must import (numpy included)
REPEATS = 3  # fresh processes for the cheap phases (refresh, open); the median is reported
PHASE_TIMEOUT_S = 3600
CLI_TIMEOUT_S = 60
PROFILE_TOP = 15
TREE_SAMPLE_S = 0.1
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


# -- phases: each runs in a fresh process and prints one JSON object -------------------------------
@contextlib.contextmanager
def _profiled(path: str | None):
    """Run the block under cProfile and dump the stats to path (no-op without a path)."""
    if not path:
        yield
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        profiler.dump_stats(path)


def _peak_rss_mb() -> float:
    """Peak resident memory of this process (ru_maxrss is KB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float | None:
    """Current resident memory of this process (VmRSS), None where /proc is missing."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    line = next(row for row in status.splitlines() if row.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def phase_index(args: argparse.Namespace) -> dict:
    """Cold index: Vault(path).refresh() with no sidecar."""
    from vaultmem import Vault

    with _profiled(args.profile_out):
        start = time.perf_counter()
        vault = Vault(args.vault)
        stats = vault.refresh()
        seconds = time.perf_counter() - start
    vault.close()
    return {"seconds": seconds, "stats": stats.__dict__, "peak_rss_mb": _peak_rss_mb()}


def phase_refresh(args: argparse.Namespace) -> dict:
    """No-change refresh: only the refresh() call is timed (the Vault object is made first)."""
    from vaultmem import Vault

    start = time.perf_counter()
    vault = Vault(args.vault)
    made = time.perf_counter()
    with _profiled(args.profile_out):
        stats = vault.refresh()
    seconds = time.perf_counter() - made
    vault.close()
    return {"seconds": seconds, "vault_init_s": made - start, "stats": stats.__dict__}


def phase_open(args: argparse.Namespace) -> dict:
    """Cached open: Vault(path).index.snapshot()."""
    from vaultmem import Vault

    start = time.perf_counter()
    vault = Vault(args.vault)
    snap = vault.index.snapshot()
    seconds = time.perf_counter() - start
    live = snap.n_live
    vault.close()
    return {"seconds": seconds, "live": live, "rss_mb": _current_rss_mb()}


def phase_recall(args: argparse.Namespace) -> dict:
    """Open, one warm-up recall, then every query of the file timed alone (default limit)."""
    from vaultmem import Vault

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    vault = Vault(args.vault)
    vault.index.snapshot()
    vault.recall(queries[0]["text"], tags=queries[0]["tags"])
    times, empty = [], 0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with _profiled(args.profile_out):
        for q in queries:
            start = time.perf_counter()
            hits = vault.recall(q["text"], tags=q["tags"])
            times.append((time.perf_counter() - start) * 1000)
            empty += not hits
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    rss = _current_rss_mb()
    vault.close()
    return {"ms": times, "kinds": [q["kind"] for q in queries], "empty": empty, "rss_mb": rss,
            "faults_per_recall": faults / len(queries)}


PHASES = {"index": phase_index, "refresh": phase_refresh, "open": phase_open, "recall": phase_recall}


# -- orchestration ---------------------------------------------------------------------------------
def _tree_rss_mb(root: int) -> float:
    """Current resident memory of a process and all its descendants (Linux /proc; 0 elsewhere)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
        except (OSError, IndexError, ValueError):
            pass
    return total / 2**20


def run_json_process(cmd: list[str], env: dict, *, cwd: str | Path | None = None, watch_tree: bool = False,
                     timeout: float = PHASE_TIMEOUT_S) -> dict:
    """Run a command that prints one JSON object as its last line; returns it plus `wall_s` (the
    whole process) and, with watch_tree, `tree_peak_rss_mb`: the peak summed RSS of the process and
    every process it starts (worker pools), sampled every TREE_SAMPLE_S. Raises RuntimeError when
    the command fails and subprocess.TimeoutExpired (after killing it) when it runs out of time."""
    start, peak = time.perf_counter(), 0.0
    with subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=TREE_SAMPLE_S if watch_tree else timeout)
                break
            except subprocess.TimeoutExpired:
                if not watch_tree or time.perf_counter() - start > timeout:
                    proc.kill()
                    proc.communicate()
                    raise
                peak = max(peak, _tree_rss_mb(proc.pid))
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd[1:4])} failed ({proc.returncode}):\n{err}")
    result = json.loads(out.strip().splitlines()[-1])
    result["wall_s"] = wall
    if watch_tree:
        result["tree_peak_rss_mb"] = max(peak, result.get("peak_rss_mb", 0.0))
    return result


def _run_phase(name: str, vault: Path, env: dict, *extra: str, watch_tree: bool = False) -> dict:
    """Run one phase in a fresh interpreter of this script (see run_json_process)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_phase", name, "--vault", str(vault), *extra]
    return run_json_process(cmd, env, watch_tree=watch_tree)


def _cli_command() -> tuple[list[str], str]:
    """The installed console script beside this interpreter, else `python -m vaultmem`."""
    script = Path(sys.executable).parent / "vaultmem"
    if script.exists():
        return [str(script)], "console script " + str(script)
    return [sys.executable, "-m", "vaultmem"], f"{sys.executable} -m vaultmem"


def _wall_runs(cmd: list[str], env: dict, runs: int, cwd: str | Path | None = None) -> list[float]:
    """Wall seconds of each of `runs` runs of a command (which must succeed within CLI_TIMEOUT_S).

    `python -c` and `python -m` put the current folder first on sys.path: give a cwd that is not a
    checkout, or a run from another tree imports that tree's vaultmem."""
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
        walls.append(time.perf_counter() - start)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return walls


def _cli_figures(vault: Path, env: dict, cwd: str | Path, *, runs: int = CLI_RUNS,
                 import_floor: str = IMPORT_FLOOR) -> dict:
    """Walls of `vaultmem recall ... --json` without and with the refresh, and the startup floors
    (`python -c import_floor`), each command run `runs` times from cwd (a folder that is no checkout).

    A failing or hanging command leaves its list empty and its error under "errors".
    """
    base, how = _cli_command()
    recall = [*base, "recall", CLI_QUERY, "--vault", str(vault), "--json"]
    commands = {"no_refresh_s": [*recall, "--no-refresh"], "with_refresh_s": recall,
                "python_startup_s": [sys.executable, "-c", "pass"],
                "import_s": [sys.executable, "-c", import_floor]}
    out: dict = {"command": how, "query": CLI_QUERY, "import_command": import_floor, "errors": {}}
    for key, cmd in commands.items():
        try:
            out[key] = _wall_runs(cmd, env, runs, cwd)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            out[key] = []
            out["errors"][key] = str(exc).strip()
    return out


def _median(values: list[float], digits: int = 4) -> float | None:
    """The rounded median, None for no values."""
    return round(statistics.median(values), digits) if values else None


def _sidecar_bytes(vault: Path) -> int:
    """Total size of the files under .vaultmem/cache."""
    cache = vault / ".vaultmem" / "cache"
    return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())


def _python_speed_s() -> float:
    """Seconds for a 2M-step pure-Python loop: a yardstick to compare machines (~0.1 s on a fast one)."""
    start = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    return round(time.perf_counter() - start, 3)


def _vaultmem_version() -> str | None:
    """The git commit of the vaultmem being measured, with "+dirty" for uncommitted changes."""
    import vaultmem

    repo = Path(vaultmem.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "vaultmem"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def _machine() -> dict:
    """Versions, CPU count, load average (other processes skew every figure) and a speed yardstick."""
    try:
        import yaml

        libyaml = bool(getattr(yaml, "__with_libyaml__", False))
    except ImportError:
        libyaml = None
    import numpy

    return {"platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": numpy.__version__,
            "sqlite": sqlite3.sqlite_version, "libyaml": libyaml, "load_avg_start": os.getloadavg(),
            "python_loop_2m_s": _python_speed_s(), "vaultmem": _vaultmem_version(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def _percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank on the sorted values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def _recall_summary(result: dict) -> dict:
    """p50/p99/mean/max overall and p50/p99 per query kind."""
    ms = result["ms"]
    by_kind: dict[str, list[float]] = {}
    for kind, value in zip(result["kinds"], ms):
        by_kind.setdefault(kind, []).append(value)
    return {"p50": _percentile(ms, 50), "p99": _percentile(ms, 99), "mean": statistics.fmean(ms), "max": max(ms),
            "empty_share": result["empty"] / len(ms),
            "by_kind": {k: {"n": len(v), "p50_ms": round(_percentile(v, 50), 3), "p99_ms": round(_percentile(v, 99), 3)}
                        for k, v in sorted(by_kind.items())}}


def _environment(workdir: Path) -> dict:
    """Subprocess environment: machine state and device id kept inside the work folder, and
    bytecode caching on (as for an installed package) even where PYTHONDONTWRITEBYTECODE is set."""
    env = dict(os.environ)
    env.update(VAULTMEM_HOME=str(workdir / "home"), VAULTMEM_DEVICE_ID="bench-0001")
    for name in ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def _build(workdir: Path, args: argparse.Namespace, env: dict) -> tuple[Path, dict, Path]:
    """Generate the vault and the query file; returns (vault path, generator info, query file)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    from _synth import make_queries, make_vault

    vault = workdir / "vault"
    shutil.rmtree(vault, ignore_errors=True)
    info = make_vault(vault, args.notes, seed=args.seed)
    queries = make_queries(args.queries, seed=args.seed, ids=info.pop("ids"))
    qfile = workdir / "queries.json"
    qfile.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    cache = vault / ".vaultmem" / "cache"
    shutil.rmtree(cache, ignore_errors=True)  # cold means no sidecar at all
    cache.mkdir()
    return vault, info, qfile


def _profile_args(args: argparse.Namespace, workdir: Path, phase: str) -> list[str]:
    """The phase options that make it dump a cProfile file (with --profile)."""
    return ["--profile-out", str(workdir / f"{phase}.prof")] if args.profile else []


def _measure(vault: Path, qfile: Path, env: dict, args: argparse.Namespace, workdir: Path) -> dict:
    """Every phase in order: index, refresh, open, recall, sidecar size, CLI."""
    index = _run_phase("index", vault, env, *_profile_args(args, workdir, "index"), watch_tree=True)
    refreshes = [_run_phase("refresh", vault, env, *_profile_args(args, workdir, "refresh")) for _ in range(REPEATS)]
    opens = [_run_phase("open", vault, env) for _ in range(REPEATS)]
    recall = _run_phase("recall", vault, env, "--queries-file", str(qfile), *_profile_args(args, workdir, "recall"))
    sidecar = _sidecar_bytes(vault)
    return {"index": index, "refreshes": refreshes, "opens": opens, "recall": recall, "sidecar": sidecar,
            "cli": _cli_figures(vault, env, workdir)}


def _report(args: argparse.Namespace, info: dict, m: dict, machine: dict, total_s: float) -> dict:
    """The JSON result: the fixed keys, everything else under "extra"."""
    summary = _recall_summary(m["recall"])
    refresh_s = [r["seconds"] for r in m["refreshes"]]
    open_s = [o["seconds"] for o in m["opens"]]
    cli = m["cli"]
    result = {
        "notes": args.notes,
        "index_cold_s": round(m["index"]["seconds"], 4),
        "refresh_s": round(statistics.median(refresh_s), 4),
        "open_s": round(statistics.median(open_s), 4),
        "recall_p50_ms": round(summary["p50"], 3),
        "recall_p99_ms": round(summary["p99"], 3),
        "cli_recall_s": _median(cli["with_refresh_s"]),
        "peak_rss_index_mb": round(m["index"]["peak_rss_mb"], 1),
        "rss_loaded_mb": None if m["recall"]["rss_mb"] is None else round(m["recall"]["rss_mb"], 1),
        "sidecar_mb": round(m["sidecar"] / 2**20, 2),
    }
    result["extra"] = {
        "seed": args.seed, "queries": len(m["recall"]["ms"]), "total_run_s": round(total_s, 1),
        "generator": info, "index_stats": m["index"]["stats"], "index_process_wall_s": round(m["index"]["wall_s"], 3),
        "index_tree_peak_rss_mb": round(m["index"]["tree_peak_rss_mb"], 1),
        "refresh_runs_s": [round(s, 4) for s in refresh_s],
        "refresh_process_wall_s": [round(r["wall_s"], 3) for r in m["refreshes"]],
        "refresh_vault_init_s": [round(r["vault_init_s"], 4) for r in m["refreshes"]],
        "open_runs_s": [round(s, 4) for s in open_s], "open_rss_mb": m["opens"][0]["rss_mb"],
        "live_notes": m["opens"][0]["live"],
        "recall_mean_ms": round(summary["mean"], 3), "recall_max_ms": round(summary["max"], 3),
        "recall_empty_share": round(summary["empty_share"], 3), "recall_by_kind": summary["by_kind"],
        "recall_process_wall_s": round(m["recall"]["wall_s"], 3),
        "faults_per_recall": round(m["recall"]["faults_per_recall"], 1),
        "cli_recall_no_refresh_s": _median(cli["no_refresh_s"]),
        "cli_runs": {k: [round(v, 4) for v in cli[k]] for k in ("with_refresh_s", "no_refresh_s")},
        "python_startup_s": _median(cli["python_startup_s"]), "import_s": _median(cli["import_s"]),
        "import_command": IMPORT_FLOOR,
        "cli_command": cli["command"], "cli_query": cli["query"], "cli_errors": cli["errors"],
        "machine": {**machine, "load_avg_end": os.getloadavg()},
    }
    return result


def _fmt(key: str, value: float | None, digits: int | None = None) -> str:
    """A figure with the unit its key's suffix names (n/a for a missing one)."""
    unit, decimals = next((u for suffix, u in UNITS.items() if key.endswith(suffix)), ("", 3))
    return "n/a" if value is None else f"{value:,.{decimals if digits is None else digits}f} {unit}"


def print_table(result: dict) -> None:
    """The figures with their targets; a target is checked only at the size it is set for."""
    n = result["notes"]
    extra = result["extra"]
    print(f"\nvaultmem recall benchmark: {n:,} notes, {extra['queries']} queries "
          f"(seed {extra['seed']}, {extra['machine']['python']}, libyaml {extra['machine']['libyaml']})")
    print(f"{'metric':<20}{'value':>14}   {'target':<20}status")
    for key in KEYS[1:]:
        bound, scale = TARGETS[key]
        target = f"<= {_fmt(key, bound, 0 if bound >= 1 else 1)} @{scale // 1000}k"
        status = "-" if n != scale else ("ok" if result[key] is not None and result[key] <= bound else "MISS")
        print(f"{key:<20}{_fmt(key, result[key]):>14}   {target:<20}{status}")
    print(f"{'cli (no refresh)':<20}{_fmt('_s', extra['cli_recall_no_refresh_s']):>14}   "
          f"python startup {_fmt('_s', extra['python_startup_s'])}, import {_fmt('_s', extra['import_s'])}")
    print(f"{'index process tree':<20}{_fmt('_mb', extra['index_tree_peak_rss_mb']):>14}   "
          f"peak RSS of the index phase with its worker processes (sampled every {TREE_SAMPLE_S} s)")
    print(f"{'recall mean / max':<20}{extra['recall_mean_ms']:>11.3f} ms   max {extra['recall_max_ms']:.3f} ms, "
          f"{extra['recall_empty_share']:.0%} of queries found nothing")
    print(f"{'faults per recall':<20}{extra['faults_per_recall']:>14,.1f}   minor page faults over the timed queries")
    print(f"generator {extra['generator']['seconds']:.1f} s, whole run {extra['total_run_s']:.1f} s")
    for key, error in extra["cli_errors"].items():
        print(f"CLI FAILED ({key}): {error.splitlines()[0]}")


def _print_profiles(workdir: Path) -> None:
    """Print the top of each phase's cProfile dump."""
    import pstats

    for phase in ("index", "refresh", "recall"):
        path = workdir / f"{phase}.prof"
        if path.exists():
            print(f"\n== cProfile of the {phase} phase: top {PROFILE_TOP} by cumulative time")
            pstats.Stats(str(path)).sort_stats("cumulative").print_stats(PROFILE_TOP)


def run_benchmark(args: argparse.Namespace) -> dict:
    """Build the vault, measure every phase, print the table, write the JSON."""
    started = time.perf_counter()
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="vaultmem-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = _environment(workdir)
    machine = _machine()
    try:
        vault, info, qfile = _build(workdir, args, env)
        measured = _measure(vault, qfile, env, args, workdir)
        result = _report(args, info, measured, machine, time.perf_counter() - started)
        print_table(result)
        if args.profile:
            _print_profiles(workdir)
    finally:
        if args.keep or args.workdir:
            print(f"vault and query file kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        write_figures(args.json, result)
    return result


def write_figures(path: str, figures: dict) -> None:
    """Write a bench's figures as indented JSON (its folder made if need be)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (the --_phase family is internal: one measured phase)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=10_000, help="memory notes to generate (default 10000)")
    p.add_argument("--queries", type=int, default=None, help="timed recall queries (default 1000)")
    p.add_argument("--json", help="write the figures to this JSON file")
    p.add_argument("--workdir", help="build here instead of a temporary folder (kept afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--seed", type=int, default=0, help="generator seed")
    p.add_argument("--smoke", action="store_true", help="200 notes, 50 queries: a quick check for CI")
    p.add_argument("--profile", action="store_true", help="also cProfile index, refresh, recall and print the top")
    p.add_argument("--_phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--vault", help=argparse.SUPPRESS)
    p.add_argument("--queries-file", help=argparse.SUPPRESS)
    p.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.notes = 200
        args.queries = args.queries or 50
    args.queries = args.queries or 1000
    return args


def main(argv: list[str] | None = None) -> None:
    """Entry point: a measured phase (internal) or the whole benchmark."""
    from _figures import phase_or_run  # bench/ is first on sys.path when this runs as a script

    phase_or_run(parse_args(argv), PHASES, run_benchmark)


if __name__ == "__main__":
    main()
