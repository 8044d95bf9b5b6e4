"""One huge note (issue 28 item 4): recall, context and ask on a vault with and without a 37 MB note in
memories/, the index's cost of that note, and the CPU of the refused `remember -` of 5.9 MB.

    python bench/bignote.py                            # 10,000 notes and a 37 MB log dump: ~2 minutes
    python bench/bignote.py --notes 2000 --big-mb 5 --json bench/out/bignote.json
    python bench/bignote.py --smoke                    # 200 notes, a 2 MB note, 50 queries: CI

Two vaults of bench/_synth.py's notes (the same seed: the same notes); one also holds
`memories/Deploy log dump.md`, lines of the vault's own memories each with a request id of its own
(a log's many distinct words), so the dump is a candidate of most queries. Each figure is measured in a
fresh process of this script (`--_phase`), on both vaults: the cold index (wall, CPU, peak RSS), the
dump added to an indexed vault and refreshed (CPU), `--queries` recalls of _synth's mix plus "deploy"
after a warm-up (p50, p99, mean; how many answered with the dump), context and ask over the first 100
queries (mean), and the console script's `vaultmem recall deploy --json` (CPU of the whole process,
median of 5). Then `vaultmem remember -` of 5.9 MB (refused: CPU and exit code). CPU is user + system
time of the measuring process and the worker processes it started (getrusage), or of the whole console
command: other processes on the machine inflate it far less than wall time.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import phase_or_run, write_figures  # noqa: E402
from recall import _cli_command, _environment, _machine, _percentile, run_json_process  # noqa: E402

DUMP = "memories/Deploy log dump.md"
ISSUE_QUERY = "deploy"  # `vaultmem recall deploy`: the command issue 28 timed at ~24 s
PASTED_MB = 5.9  # what `remember -` was given in issue 28
CLI_RUNS = 5
CONTEXT_QUERIES = 100


def _cpu_s(*who: int) -> float:
    """User + system seconds of this process and its finished children (or of `who` alone)."""
    total = 0.0
    for usage in map(resource.getrusage, who or (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)):
        total += usage.ru_utime + usage.ru_stime
    return total


def _peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM, which starts again at exec (ru_maxrss would carry this
    script's parent's, which read the dump, over into the phase it starts)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024


# -- phases: each runs in a fresh process and prints one JSON object ------------------------------
def phase_index(args: argparse.Namespace) -> dict:
    """Cold index: Vault(path).refresh() with no sidecar (CPU: its worker processes too)."""
    from vaultmem import Vault

    cpu, start = _cpu_s(), time.perf_counter()
    Vault(args.vault).refresh()
    return {"seconds": time.perf_counter() - start, "cpu_s": _cpu_s() - cpu, "peak_rss_mb": _peak_rss_mb()}


def phase_add(args: argparse.Namespace) -> dict:
    """The dump copied into an indexed vault (a sync, a paste), then refresh(): what reading it costs."""
    from vaultmem import Vault

    vault = Vault(args.vault)
    vault.index.snapshot()
    shutil.copyfile(args.dump, Path(args.vault) / DUMP)
    cpu, start = _cpu_s(), time.perf_counter()
    stats = vault.refresh()
    return {"seconds": time.perf_counter() - start, "cpu_s": _cpu_s() - cpu, "parsed": stats.parsed,
            "peak_rss_mb": _peak_rss_mb()}


def phase_recall(args: argparse.Namespace) -> dict:
    """Open, one warm-up recall, then every query timed alone; then context and ask over the first ones."""
    from vaultmem import Vault

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    vault = Vault(args.vault)
    vault.recall(queries[0]["text"], tags=queries[0]["tags"])
    ms, with_dump = [], 0
    cpu = _cpu_s()
    for q in queries:
        start = time.perf_counter()
        hits = vault.recall(q["text"], tags=q["tags"], record_access=False)
        ms.append((time.perf_counter() - start) * 1000)
        with_dump += any(h.path == DUMP for h in hits)
    cpu = _cpu_s() - cpu
    asked = [q["text"] for q in queries if q["text"]][:CONTEXT_QUERIES]
    context_ms = _timed(lambda text: vault.context(text, record_access=False), asked)
    ask_ms = _timed(vault.ask, asked)
    return {"ms": ms, "cpu_ms_per_recall": cpu * 1000 / len(queries), "with_dump": with_dump,
            "context_ms": context_ms, "ask_ms": ask_ms}


def _timed(call, texts: list[str]) -> float:
    """Mean milliseconds of call(text) over the texts."""
    start = time.perf_counter()
    for text in texts:
        call(text)
    return (time.perf_counter() - start) * 1000 / max(len(texts), 1)


PHASES = {"index": phase_index, "add": phase_add, "recall": phase_recall}


# -- orchestration --------------------------------------------------------------------------------
def _phase(name: str, vault: Path, env: dict, *extra: str) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_phase", name, "--vault", str(vault), *extra]
    return run_json_process(cmd, env)


def _console(args: list[str], env: dict, cwd: Path, stdin: str | None = None) -> tuple[float, int]:
    """(CPU seconds, exit code) of one run of the console script."""
    before = _cpu_s(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*_cli_command()[0], *args], input=stdin, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    return _cpu_s(resource.RUSAGE_CHILDREN) - before, done.returncode


def make_dump(vault: Path, path: Path, megabytes: float, seed: int) -> int:
    """A log dump of `megabytes` from the vault's own memories' lines, each with a request id of its own."""
    from vaultmem.notes.note import parse_note

    r = random.Random(f"dump-{seed}")
    lines = [line.strip() for note in sorted((vault / "memories").glob("*.md"))[:500]
             for line in parse_note(note.read_bytes()).body.splitlines() if line.strip()]
    parts, size, target = ["---\ntype: log\n---\n"], 0, int(megabytes * 1e6)
    while size < target:
        line = f"{ISSUE_QUERY} {r.choice(lines)} request {r.getrandbits(48):012x}\n"
        parts.append(line)
        size += len(line.encode("utf-8"))
    path.write_text("".join(parts), encoding="utf-8")
    return path.stat().st_size


def _build(workdir: Path, args: argparse.Namespace, env: dict) -> tuple[Path, Path, Path, Path]:
    """The vault without the dump, its twin with it, the dump and the query file."""
    import os

    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    from _synth import make_queries, make_vault

    plain, big = workdir / "without", workdir / "with"
    info = make_vault(plain, args.notes, seed=args.seed)
    queries = [{"text": ISSUE_QUERY, "tags": [], "kind": "issue"},
               *make_queries(args.queries, seed=args.seed, ids=info["ids"])]
    qfile = workdir / "queries.json"
    qfile.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    dump = workdir / "dump.md"
    make_dump(plain, dump, args.big_mb, args.seed)
    shutil.copytree(plain, big)
    shutil.copyfile(dump, big / DUMP)
    return plain, big, dump, qfile


def _side(vault: Path, env: dict, qfile: Path, workdir: Path) -> dict:
    index = _phase("index", vault, env)
    recall = _phase("recall", vault, env, "--queries-file", str(qfile))
    cli = [_console(["recall", ISSUE_QUERY, "--vault", str(vault), "--json"], env, workdir)[0]
           for _ in range(CLI_RUNS)]
    ms = recall["ms"]
    return {"index_cold_s": index["seconds"], "index_cold_cpu_s": index["cpu_s"],
            "peak_rss_index_mb": index["peak_rss_mb"], "recall_p50_ms": _percentile(ms, 50),
            "recall_p99_ms": _percentile(ms, 99), "recall_mean_ms": statistics.fmean(ms),
            "recall_cpu_ms": recall["cpu_ms_per_recall"], "context_mean_ms": recall["context_ms"],
            "ask_mean_ms": recall["ask_ms"], "cli_recall_deploy_cpu_s": statistics.median(cli),
            "recalls_with_dump": recall["with_dump"]}


def run_benchmark(args: argparse.Namespace) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="vaultmem-bignote-"))
    env = _environment(workdir)
    try:
        plain, big, dump, qfile = _build(workdir, args, env)
        result = {"notes": args.notes, "queries": args.queries + 1, "dump_bytes": dump.stat().st_size,
                  "machine": _machine(), "without": _side(plain, env, qfile, workdir),
                  "with": _side(big, env, qfile, workdir)}
        added = _phase("add", plain, env, "--dump", str(dump))
        result["with"]["dump_added_refresh_cpu_s"] = added["cpu_s"]
        result["with"]["dump_added_peak_rss_mb"] = added["peak_rss_mb"]
        pasted = "2026-11-29 14:02 INFO deploy worker took 12 ms\n" * int(PASTED_MB * 1e6 / 47)
        cpu, code = _console(["remember", "-", "--vault", str(plain)], env, workdir, stdin=pasted)
        result["remember_pasted"] = {"chars": len(pasted), "cpu_s": cpu, "exit_code": code}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def print_table(result: dict) -> None:
    """The figures side by side: without the dump, with it, their ratio."""
    print(f"{result['notes']:,} notes, {result['queries']:,} queries; the dump: {result['dump_bytes']:,} bytes")
    print(f"{'figure':<28} {'without':>12} {'with dump':>12} {'with/without':>13}")
    without, with_ = result["without"], result["with"]
    for key in with_:
        a, b = without.get(key), with_[key]
        ratio = f"{b / a:.2f}" if a else "-"
        print(f"{key:<28} {'-' if a is None else f'{a:.3f}':>12} {b:>12.3f} {ratio:>13}")
    pasted = result["remember_pasted"]
    print(f"remember - of {pasted['chars']:,} characters: exit {pasted['exit_code']}, {pasted['cpu_s']:.3f} s CPU")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=10_000, help="memory notes of each vault (default 10000)")
    p.add_argument("--big-mb", type=float, default=37.0, help="megabytes of the dump (default 37)")
    p.add_argument("--queries", type=int, default=None, help="timed recalls besides 'deploy' (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--smoke", action="store_true", help="200 notes, a 2 MB dump, 50 queries: CI")
    p.add_argument("--_phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--vault", help=argparse.SUPPRESS)
    p.add_argument("--queries-file", help=argparse.SUPPRESS)
    p.add_argument("--dump", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.big_mb, args.queries = 200, 2.0, args.queries or 50
    args.queries = args.queries or 1000
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    result = phase_or_run(args, PHASES, run_benchmark)
    if result is not None:
        print_table(result)
        write_figures(args.json, result)


if __name__ == "__main__":
    main()
