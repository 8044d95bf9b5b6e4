"""Merge driver benchmark: time to merge one memory note, in the library and as git's driver process.

    python bench/merge_driver.py --json bench/out/merge-driver.json
    python bench/merge_driver.py --smoke            # 20 merges, 3 processes: CI

The notes are the sample vault's memories with flow `tags` and `version` lists (typical sizes: a
few properties and one to five paragraphs). Each merge is one of three kinds, in turn:
- `properties`: ours raises `score` and bumps its version counter, theirs adds a tag and its own
  version entry (git's line merge conflicts on these: the `version` line changed on both sides);
- `paragraphs`: as above, plus ours adds a paragraph at the top of the body and theirs one at its end
  (bodies merged by `git merge-file`);
- `conflict`: both sides rewrite the same body line differently (a callout keeps both texts).

Figures (JSON keys): `merge_ms` (median of merge_notes() over all merges, and `merge_p95_ms`),
`by_kind` (median ms per kind), `cli_ms` (median wall time of a `python -m vaultmem merge-driver
O A B P` process on a `paragraphs` merge: what git waits for per note), `git_merge_file_ms` (median
wall time of a `git merge-file` process on the same files: git's own text merge, the floor a driver
started as a process cannot go below), `python_start_ms` (median wall time of `python -c pass`: this
interpreter's own start, site packages included) and `cli_over_git_merge_file`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from vaultmem.sync.mergedriver import CALLOUT, merge_notes  # noqa: E402

KINDS = ("properties", "paragraphs", "conflict")


def triples(notes: list[str], count: int) -> list[tuple[str, bytes, bytes, bytes]]:
    """(kind, base, ours, theirs) for `count` merges over the notes, the kinds in turn."""
    made = []
    for i in range(count):
        base = notes[i % len(notes)]
        kind = KINDS[i % len(KINDS)]
        ours = base.replace("version: [", "version: [bench-ours:1, ", 1)
        ours = _replace_line(ours, "score:", f"score: {5 + i % 5}.5")
        theirs = base.replace("tags: [", "tags: [bench_tag, ", 1).replace("version: [", "version: [bench-theirs:1, ", 1)
        first = base.partition("\n---\n")[2].split("\n", 1)[0]
        if kind == "paragraphs":
            ours = ours.replace("\n---\n", "\n---\nChecked again on this machine.\n\n", 1)
            theirs = theirs.rstrip("\n") + "\n\nA paragraph the other machine added.\n"
        elif kind == "conflict":
            ours = ours.replace(first, first + " — ours says so", 1)
            theirs = theirs.replace(first, first + " — theirs disagrees", 1)
        made.append((kind, base.encode(), ours.encode(), theirs.encode()))
    return made


def _replace_line(text: str, prefix: str, line: str) -> str:
    lines = text.split("\n")
    return "\n".join(line if old.startswith(prefix) else old for old in lines)


def time_library(merges: list[tuple[str, bytes, bytes, bytes]]) -> dict:
    """Milliseconds per merge_notes() call, checking each result is what its kind promises."""
    merge_notes(*merges[0][1:], "warm-up.md")  # the first call imports what later ones reuse
    by_kind: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for kind, base, ours, theirs in merges:
        start = time.perf_counter()
        merged, clean = merge_notes(base, ours, theirs, "memories/bench.md")
        by_kind[kind].append((time.perf_counter() - start) * 1000)
        if not clean or b"<<<<<<<" in merged or (CALLOUT.encode() in merged) != (kind == "conflict"):
            raise SystemExit(f"bench: a {kind} merge did not come out as expected")
    every = sorted(t for times in by_kind.values() for t in times)
    return {"merges": len(every), "merge_ms": round(statistics.median(every), 3),
            "merge_p95_ms": round(every[int(0.95 * (len(every) - 1))], 3),
            "by_kind": {kind: round(statistics.median(times), 3) for kind, times in by_kind.items() if times}}


def time_processes(merge: tuple[str, bytes, bytes, bytes], runs: int) -> dict:
    """Median wall ms of the driver as git starts it, and of `git merge-file` on the same files."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    driver, floor, python = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        paths = [os.path.join(folder, name) for name in ("O", "A", "B")]
        for _ in range(runs):
            for path, data in zip(paths, merge[1:]):
                Path(path).write_bytes(data)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "vaultmem", "merge-driver", *paths, "memories/bench.md"],
                           env=env, check=True)
            driver.append((time.perf_counter() - start) * 1000)
            Path(paths[1]).write_bytes(merge[2])
            start = time.perf_counter()
            subprocess.run(["git", "merge-file", "-p", paths[1], paths[0], paths[2]], capture_output=True)
            floor.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            python.append((time.perf_counter() - start) * 1000)
    cli, git = statistics.median(driver), statistics.median(floor)
    return {"cli_runs": runs, "cli_ms": round(cli, 1), "python_start_ms": round(statistics.median(python), 1),
            "git_merge_file_ms": round(git, 1),
            "cli_over_git_merge_file": round(cli / git, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--merges", type=int, default=600, help="merges timed in the library")
    parser.add_argument("--runs", type=int, default=30, help="driver processes timed")
    parser.add_argument("--smoke", action="store_true", help="20 merges and 3 processes")
    parser.add_argument("--json", type=Path, help="write the figures here as well")
    args = parser.parse_args()
    merges_n, runs = (20, 3) if args.smoke else (args.merges, args.runs)
    notes = [p.read_text(encoding="utf-8") for p in sorted((REPO / "sample-vault" / "memories").glob("*.md"))]
    notes = [n for n in notes if "\ntags: [" in n and "\nversion: [" in n]  # the edits below need both
    merges = triples(notes, merges_n)
    figures = {"notes": len(notes), **time_library(merges), **time_processes(merges[1], runs)}
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
