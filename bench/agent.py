"""Agent benchmark: one long-lived process alternating remember and prefetch, as an agent does each turn.

    python bench/agent.py --notes 10000 --json bench/out/agent-10k.json
    python bench/agent.py --smoke                     # 200 notes, 150 turns: seconds, for CI

The vault (bench/_synth.py, as bench/recall.py builds it) is indexed cold, then ONE fresh process
opens it and runs --turns turns, each a `remember` of a new memory (drawn from the same pools,
written now: every one adds a line to today's episode note) followed by a prefetch of a query
(bench/_synth.py's query mix, text only). The prefetch is `Vault.context(query, budget_tokens=800)`
when the library has it, else (or with --prefetch recall, as bench/compare.py asks so that an old
commit without `context` does the same work) `Vault.recall(query, limit=PREFETCH_LIMIT)` (the JSON
says which).
Afterwards the same process prefetches again with no write between (`nowrite_*`). Nothing is
asserted: the figures are printed against their targets and written with --json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import _environment, _machine, _percentile, write_figures  # noqa: E402
from _figures import drop_workdir, phase_or_run, workdir_options  # noqa: E402

KEYS = ("remember_p50_ms", "remember_p99_ms", "prefetch_p50_ms", "prefetch_p99_ms", "last_over_first",
        "nowrite_prefetch_p50_ms")
TARGETS = {"remember_p50_ms": 15, "prefetch_p50_ms": 20, "prefetch_p99_ms": 60, "last_over_first": 1.2,
           "nowrite_prefetch_p50_ms": 10}  # at TARGET_NOTES notes and 5,000 turns
TARGET_NOTES = 10_000
BLOCK = 1000  # turns compared at the start and at the end
PREFETCH_LIMIT = 10  # hits of a recall standing in for an 800-token context
BUDGET_TOKENS = 800
NOWRITE_QUERIES = 500
PHASE_TIMEOUT_S = 7200


def _turn_items(turns: int, seed: int, ids: list[str]) -> tuple[list[dict], list[str]]:
    """The memories to remember and the queries to prefetch, one of each per turn."""
    from _synth import _Writer, build_entities, make_queries

    writer = _Writer(random.Random(f"agent-{seed}"), build_entities(seed))
    memories = []
    for _ in range(turns):
        draft, _zh = writer.memory()
        memories.append({"text": draft.body, "tags": draft.tags, "source": "agent-bench"})
    queries: list[str] = []
    while len(queries) < turns + NOWRITE_QUERIES:
        batch = make_queries(4 * (turns + NOWRITE_QUERIES), seed=seed + len(queries), ids=ids)
        queries.extend(q["text"] for q in batch if q["text"])
    return memories, queries[:turns + NOWRITE_QUERIES]


def phase_turns(args: argparse.Namespace) -> dict:
    """In this one process: the alternating turns, then prefetches with no write between."""
    from vaultmem import Vault

    work = json.loads(Path(args.items_file).read_text(encoding="utf-8"))
    memories, queries = work["memories"], work["queries"]
    vault = Vault(args.vault)
    if args.prefetch != "recall" and hasattr(vault, "context"):
        prefetch, call = (lambda q: vault.context(q, budget_tokens=BUDGET_TOKENS)), "context"
    else:
        prefetch, call = (lambda q: vault.recall(q, limit=PREFETCH_LIMIT)), "recall"
    prefetch(queries[-1])  # warm: the snapshot and the lazily built helpers
    remember_ms, prefetch_ms, actions = [], [], {}
    for memory, query in zip(memories, queries):
        start = time.perf_counter()
        result = vault.remember(memory["text"], tags=memory["tags"], source=memory["source"])
        done = time.perf_counter()
        prefetch(query)
        remember_ms.append((done - start) * 1000)
        prefetch_ms.append((time.perf_counter() - done) * 1000)
        actions[result.action] = actions.get(result.action, 0) + 1
    nowrite_ms = []
    for query in queries[len(memories):]:
        start = time.perf_counter()
        prefetch(query)
        nowrite_ms.append((time.perf_counter() - start) * 1000)
    info = vault.index.info()
    vault.close()
    return {"remember_ms": remember_ms, "prefetch_ms": prefetch_ms, "nowrite_ms": nowrite_ms, "call": call,
            "actions": actions, "index_info": info}


PHASES = {"turns": phase_turns}


def _build(workdir: Path, args: argparse.Namespace, env: dict) -> tuple[Path, dict, Path, float]:
    """Generate and cold-index the vault, write the turns' items; returns (vault, info, items file, index s)."""
    import os

    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    from _synth import make_vault

    from vaultmem import Vault

    vault = workdir / "vault"
    shutil.rmtree(vault, ignore_errors=True)
    info = make_vault(vault, args.notes, seed=args.seed)
    memories, queries = _turn_items(args.turns, args.seed, info.pop("ids"))
    items = workdir / "items.json"
    items.write_text(json.dumps({"memories": memories, "queries": queries}, ensure_ascii=False), encoding="utf-8")
    start = time.perf_counter()
    opened = Vault(vault)
    opened.refresh()
    opened.close()
    return vault, info, items, time.perf_counter() - start


def _run_turns(vault: Path, items: Path, env: dict, prefetch: str) -> dict:
    """The turns phase in a fresh process of this script."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_phase", "turns", "--vault", str(vault),
           "--items-file", str(items), "--prefetch", prefetch]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=PHASE_TIMEOUT_S)
    if done.returncode != 0:
        raise SystemExit(f"the turns phase failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def drift(remember_ms: list[float], prefetch_ms: list[float], block: int = BLOCK) -> tuple[int, float, float]:
    """(turns per block, first block's ms, last block's ms) of the whole turns (remember + prefetch);
    the block is at most half the turns."""
    turns = [a + b for a, b in zip(remember_ms, prefetch_ms)]
    block = min(block, len(turns) // 2)
    return block, sum(turns[:block]), sum(turns[-block:])


def _report(args: argparse.Namespace, info: dict, index_s: float, m: dict, machine: dict, total_s: float) -> dict:
    """The JSON result: the fixed keys, everything else under "extra"."""
    block, first, last = drift(m["remember_ms"], m["prefetch_ms"])
    turns = m["remember_ms"]  # one per turn
    result = {
        "notes": args.notes, "turns": len(turns), "prefetch_call": m["call"],
        "remember_p50_ms": round(_percentile(m["remember_ms"], 50), 3),
        "remember_p99_ms": round(_percentile(m["remember_ms"], 99), 3),
        "prefetch_p50_ms": round(_percentile(m["prefetch_ms"], 50), 3),
        "prefetch_p99_ms": round(_percentile(m["prefetch_ms"], 99), 3),
        "first_block_s": round(first / 1000, 3), "last_block_s": round(last / 1000, 3),
        "last_over_first": round(last / first, 3),
        "nowrite_prefetch_p50_ms": round(_percentile(m["nowrite_ms"], 50), 3),
    }
    result["extra"] = {
        "seed": args.seed, "block_turns": block, "generator": info, "index_cold_s": round(index_s, 3),
        "remember_mean_ms": round(statistics.fmean(m["remember_ms"]), 3),
        "prefetch_mean_ms": round(statistics.fmean(m["prefetch_ms"]), 3),
        "nowrite_prefetch_p99_ms": round(_percentile(m["nowrite_ms"], 99), 3),
        "remember_p50_by_block_ms": [round(_percentile(m["remember_ms"][i:i + block], 50), 3)
                                     for i in range(0, len(turns), block)],
        "prefetch_p50_by_block_ms": [round(_percentile(m["prefetch_ms"][i:i + block], 50), 3)
                                     for i in range(0, len(turns), block)],
        "actions": m["actions"], "index_after": m["index_info"], "total_run_s": round(total_s, 1),
        "machine": machine,
    }
    return result


def print_table(result: dict) -> None:
    """The figures with their targets (checked only at TARGET_NOTES notes)."""
    n = result["notes"]
    print(f"\nvaultmem agent benchmark: {n:,} notes, {result['turns']:,} remember/{result['prefetch_call']} turns "
          f"in one process")
    print(f"{'metric':<26}{'value':>12}   {'target':<16}status")
    for key in KEYS:
        bound = TARGETS.get(key)
        target = "-" if bound is None else f"<= {bound} @{TARGET_NOTES // 1000}k"
        status = "-" if bound is None or n != TARGET_NOTES else ("ok" if result[key] <= bound else "MISS")
        print(f"{key:<26}{result[key]:>12.3f}   {target:<16}{status}")
    extra = result["extra"]
    print(f"first / last {extra['block_turns']} turns: {result['first_block_s']:.2f} s / {result['last_block_s']:.2f} s")
    print(f"remember p50 by block (ms): {extra['remember_p50_by_block_ms']}")
    print(f"prefetch p50 by block (ms): {extra['prefetch_p50_by_block_ms']}")


def run_benchmark(args: argparse.Namespace) -> dict:
    """Build the vault, run the turns in a fresh process, print the table, write the JSON."""
    started = time.perf_counter()
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="vaultmem-agent-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = _environment(workdir)
    machine = _machine()
    try:
        vault, info, items, index_s = _build(workdir, args, env)
        measured = _run_turns(vault, items, env, args.prefetch)
        machine["load_avg_end"] = __import__("os").getloadavg()
        result = _report(args, info, index_s, measured, machine, time.perf_counter() - started)
        print_table(result)
    finally:
        drop_workdir(args, workdir)
    if args.json:
        write_figures(args.json, result)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (--_phase is internal: the measured process)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=TARGET_NOTES, help=f"memory notes to generate (default {TARGET_NOTES})")
    p.add_argument("--turns", type=int, default=5000, help="remember/prefetch turns (default 5000)")
    workdir_options(p, "200 notes, 150 turns: a quick check for CI")
    p.add_argument("--prefetch", choices=("auto", "context", "recall"), default="auto",
                   help="the prefetch call: context when the library has it (auto, context), else recall")
    p.add_argument("--_phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--vault", help=argparse.SUPPRESS)
    p.add_argument("--items-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.turns = 200, 150
    return args


def main(argv: list[str] | None = None) -> None:
    """Entry point: the measured phase (internal) or the whole benchmark."""
    args = parse_args(argv)
    phase_or_run(args, PHASES, run_benchmark)


if __name__ == "__main__":
    main()
