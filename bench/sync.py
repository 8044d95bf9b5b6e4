"""Sync benchmark (issue 16): `vaultmem sync` of N changed notes between two clones, git's share apart.

    python bench/sync.py --json bench/out/sync.json     # 5,000-note vault, 1,000 changed notes
    python bench/sync.py --notes 20000 --changed 1000
    python bench/sync.py --smoke                        # 300 notes, 50 changed: CI

A synthetic vault (`_synth.py`) is committed, pushed to a bare repository on this machine and cloned
(a laptop and a desk, each with its own device id, both set up by a first sync). Then:
- `push`: the laptop changes `--changed` notes (a later `timestamp`, a line added to the body) and
  syncs: commit, pull (nothing new), push, refresh.
- `merge`: the desk raises `score` in the same notes, adds a paragraph on top of each body and syncs; the laptop changes them again (the
  adjacent `timestamp` line and the body) and syncs: every one of them changed on both sides, merged
  field by field and paragraph by paragraph after the pull.
Each sync runs in this process (`vaultmem.sync.gitsync.sync`), with every `git` process it starts
timed: `total_s`, `git_s` (wall time inside git's own commands: status, add, commit, pull, push,
cat-file), `vaultmem_s` (the rest: status parsing, merges with the `git merge-file` runs they start
for bodies, writes, the index refresh) against the target "≤ 5 s plus git's own time", and for `merge`
`merge_ms_per_note` (`merge_notes`, the driver's rules, per note) against "≤ 20 ms per note". A
merged note is checked to hold both sides' edits and no conflict marker.

`driver_process_ms` is one `python -m vaultmem merge-driver O A B P` process (median of 9), what a
person's own `git pull` pays per note changed on both sides; `sync` does not start it (it tells git
the driver fails and merges those notes itself after the pull, see docs/design.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from _figures import write_figures  # noqa: E402

TARGETS = {"vaultmem_s": 5.0, "merge_ms_per_note": 20.0}


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True).stdout


class Timed:
    """Counts wall time spent in git processes and in merge_notes while a sync runs."""

    def __init__(self):
        import vaultmem.sync.mergedriver as driver

        self.git_s = self.merge_s = 0.0
        self.merges = self.git_calls = self.merge_file_calls = 0
        self._run, self._driver, self._merge = subprocess.run, driver, driver.merge_notes

    def __enter__(self) -> Timed:
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return self._run(*args, **kwargs)
            finally:
                if args and args[0] and args[0][0] == "git":
                    if "merge-file" in args[0]:  # the body merge the driver's rules run: vaultmem's share
                        self.merge_file_calls += 1
                    else:
                        self.git_s += time.perf_counter() - start
                        self.git_calls += 1

        def merge(*args, **kwargs):
            start = time.perf_counter()
            try:
                return self._merge(*args, **kwargs)
            finally:
                self.merge_s += time.perf_counter() - start
                self.merges += 1

        subprocess.run, self._driver.merge_notes = run, merge
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run, self._driver.merge_notes = self._run, self._merge


def timed_sync(root: Path, device: str) -> dict:
    from vaultmem import Vault
    from vaultmem.sync.gitsync import sync

    os.environ["VAULTMEM_DEVICE_ID"] = device
    vault = Vault(root)
    with Timed() as t:
        start = time.perf_counter()
        report = sync(vault)
        total = time.perf_counter() - start
    vault.close()
    out = {"total_s": round(total, 3), "git_s": round(t.git_s, 3), "vaultmem_s": round(total - t.git_s, 3),
           "git_processes": t.git_calls, "merge_file_processes": t.merge_file_calls, "settled": len(report.get("settled", []))}
    if t.merges:
        out["merges"] = t.merges
        out["merge_ms_per_note"] = round(1000 * t.merge_s / t.merges, 2)
    return out


def build(where: Path, notes: int, seed: int) -> tuple[Path, Path]:
    from _synth import make_vault

    laptop, desk, origin = where / "laptop", where / "desk", where / "origin.git"
    make_vault(laptop, notes, seed=seed)
    git(where, "init", "-q", "--bare", "-b", "main", str(origin))
    git(laptop, "init", "-q", "-b", "main")
    git(laptop, "remote", "add", "origin", str(origin))
    for root, device in ((laptop, "laptop-1"), (None, "desk-1")):
        if root is None:
            subprocess.run(["git", "clone", "-q", str(origin), str(desk)], check=True)
            root = desk
        git(root, "config", "user.name", device)
        git(root, "config", "user.email", f"{device}@bench")
        timed_sync(root, device)  # sets the clone up; the laptop's first commit and push of every note
    return laptop, desk


def changed_notes(root: Path, count: int) -> list[Path]:
    return sorted((root / "memories").glob("*.md"))[:count]


def edit(paths: list[Path], pattern: str, replace: str, append: str = "") -> None:
    rule = re.compile(pattern, re.MULTILINE)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        path.write_text(rule.sub(replace, text, count=1) + append, encoding="utf-8")


def driver_process_ms(where: Path, runs: int = 9) -> float:
    base = where / "O.md"
    base.write_text("---\nid: 01J0000000000000000000000A\nscore: 5\ntags: [a]\n---\nOne.\n\nTwo.\n", encoding="utf-8")
    times = []
    for _ in range(runs):
        ours, theirs = where / "A.md", where / "B.md"
        ours.write_text(base.read_text().replace("score: 5", "score: 7"), encoding="utf-8")
        theirs.write_text(base.read_text().replace("tags: [a]", "tags: [a, b]") + "\nThree.\n", encoding="utf-8")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "vaultmem", "merge-driver", str(base), str(ours), str(theirs), "n.md"],
                       check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return round(1000 * statistics.median(times), 1)


def run(args: argparse.Namespace) -> dict:
    where = Path(tempfile.mkdtemp(prefix="vaultmem-bench-sync-"))
    try:
        start = time.perf_counter()
        laptop, desk = build(where, args.notes, args.seed)
        figures: dict = {"notes": args.notes, "changed": args.changed, "build_s": round(time.perf_counter() - start, 1)}
        mine = changed_notes(laptop, args.changed)
        edit(mine, r"^timestamp: .*$", "timestamp: 2026-12-01T09:00:00+00:00", "\nChecked on the laptop.\n")
        figures["push"] = timed_sync(laptop, "laptop-1")
        timed_sync(desk, "desk-1")  # brings the laptop's edits
        theirs = changed_notes(desk, args.changed)
        edit(theirs, r"^score: .*$", "score: 9.9")
        edit(theirs, r"(?s)\A(---\n.*?\n---\n)", r"\1Seen on the desk.\n\n")  # a paragraph on top of the body
        timed_sync(desk, "desk-1")
        edit(mine, r"^timestamp: .*$", "timestamp: 2026-12-02T09:00:00+00:00", "\nChecked again.\n")
        figures["merge"] = merge = timed_sync(laptop, "laptop-1")
        sample = mine[0].read_text(encoding="utf-8")
        figures["merged_ok"] = ("score: 9.9" in sample and "timestamp: 2026-12-02T09:00:00+00:00" in sample
                                and "Checked again." in sample and "Seen on the desk." in sample
                                and "<<<<<<<" not in sample
                                and merge.get("merges") == args.changed)
        figures["driver_process_ms"] = driver_process_ms(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    figures["targets"] = {"vaultmem_s": {"target": TARGETS["vaultmem_s"], "push": figures["push"]["vaultmem_s"],
                                         "merge": merge["vaultmem_s"]},
                          "merge_ms_per_note": {"target": TARGETS["merge_ms_per_note"],
                                                "measured": merge.get("merge_ms_per_note")}}
    return figures


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=5000, help="memory notes in the vault (default 5000)")
    p.add_argument("--changed", type=int, default=1000, help="notes changed before each sync (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--smoke", action="store_true", help="300 notes, 50 changed: seconds, for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.changed = 300, 50
    args.changed = min(args.changed, int(args.notes * 0.9))
    figures = run(args)
    for phase in ("push", "merge"):
        f = figures[phase]
        print(f"{phase:6} total {f['total_s']:7.2f} s   git {f['git_s']:7.2f} s ({f['git_processes']} processes)"
              f"   vaultmem {f['vaultmem_s']:6.2f} s (target <= {TARGETS['vaultmem_s']} s)"
              + (f"   merge {f['merge_ms_per_note']} ms/note over {f['merges']} notes" if "merges" in f else ""))
    print(f"driver process (a person's git pull, per note): {figures['driver_process_ms']} ms;"
          f" merged note holds both sides' edits: {figures['merged_ok']}")
    write_figures(args.json, figures)


if __name__ == "__main__":
    main()
