"""Report benchmark: `vaultmem report` on a synthetic vault with a year of use, each run a fresh process.

    python bench/report.py --notes 100000 --json bench/out/report-100k.json
    python bench/report.py --smoke                  # 1,000 notes: a few seconds, for CI

The vault is bench/_synth.py's (cached in /tmp/vaultmem-bench/report-N-sSEED, or --cache DIR), its
index built, plus one device's events log over the year before REFERENCE_END: 3 access events per
memory (an agent's recalls, drawn with a skew: a tenth of the memories get most of them), a feedback
verdict for 2% of the memories and a `decay` for 1%. Then `vaultmem lint` runs once (its findings are
kept for the report: `lint_s`), and in fresh processes, each the CLI as a person runs it:

- `report_s`: `vaultmem report --out DIR` (the kept lint findings), the median of 3 runs;
- `report_note_s`: the same with `--note` for the memory with the most events;
- `report_lint_s`: `vaultmem report --lint` (lint run again inside: doctor reads every note), once;
- `html_mb`, `html_note_mb`: the size of the file written.

Targets (issue 30): report_s <= 10 s and html_mb <= 5 MB at 100,000 notes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _figures import finish, run_options, smoke_cache  # noqa: E402
from _synth import REFERENCE_END, make_vault  # noqa: E402

from vaultmem import Vault  # noqa: E402

SMOKE_NOTES = 1000
RUNS = 3
TARGETS = {"report_s": 10.0, "html_mb": 5.0}  # at 100,000 notes
ACCESSES_PER_MEMORY = 3
FEEDBACK_SHARE, DECAY_SHARE = 0.02, 0.01
DEVICE = "bench-0001"
_YEAR_S = 365 * 86400
_TIMEOUT_S = 1800


def build(path: Path, n_notes: int, seed: int) -> dict:
    """The vault with its index and a year of events (made once per cache folder)."""
    done = path / "events.json"
    if done.is_file():
        return json.loads(done.read_text(encoding="utf-8"))
    make_vault(path / "vault", n_notes, seed)
    vault = Vault(path / "vault")
    vault.refresh()
    ids = [r["id"] for r in vault.index.select_notes("kind = 'memory'", columns=("id",))]
    figures = _write_events(vault, ids, random.Random(seed + 7))
    done.write_text(json.dumps(figures), encoding="utf-8")
    return figures


def _write_events(vault: Vault, ids: list[str], r: random.Random) -> dict:
    from vaultmem.store.events import append_events

    end = REFERENCE_END.timestamp()
    hot = ids[: max(1, len(ids) // 10)]
    events = []
    for _ in range(len(ids) * ACCESSES_PER_MEMORY):
        note = r.choice(hot) if r.random() < 0.7 else r.choice(ids)
        events.append({"event": "access", "id": note, "ts": end - r.random() * _YEAR_S})
    for note in r.sample(ids, max(1, int(len(ids) * FEEDBACK_SHARE))):
        verdict = r.choice(["useful", "useful", "confirm", "wrong", "outdated"])
        events.append({"event": "feedback", "id": note, "verdict": verdict, "ts": end - r.random() * _YEAR_S})
    for note in r.sample(ids, max(1, int(len(ids) * DECAY_SHARE))):
        events.append({"event": "decay", "id": note, "factor": 0.5, "ts": end - r.random() * _YEAR_S})
    events.sort(key=lambda ev: ev["ts"])
    folder = vault.state / "devices" / DEVICE
    by_month: dict[str, list[dict]] = {}
    for ev in events:
        by_month.setdefault(time.strftime("%Y-%m", time.gmtime(ev["ts"])), []).append(ev)
    for month in by_month.values():
        append_events(folder, "events", month, month[0]["ts"])
    busiest = Counter(ev["id"] for ev in events).most_common(1)[0][0]
    kinds = Counter(ev["event"] for ev in events)
    return {"events": len(events), "accesses": kinds["access"], "feedback": kinds["feedback"],
            "decays": kinds["decay"], "busiest": busiest}


def _cli(vault: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "VAULTMEM_DEVICE_ID": DEVICE}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(vault), *args], capture_output=True,
                          text=True, env=env, timeout=_TIMEOUT_S)
    return time.perf_counter() - start, done


def _report(vault: Path, out: Path, *args: str) -> tuple[float, float]:
    """(seconds, MB of the HTML) of one `vaultmem report` run."""
    seconds, done = _cli(vault, "report", "--out", str(out), "--json", *args)
    if done.returncode != 0:
        raise SystemExit(f"vaultmem report failed: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)["bytes"] / 1e6


def run(args: argparse.Namespace) -> dict:
    n_notes = SMOKE_NOTES if args.smoke else args.notes
    root = Path(args.cache or f"/tmp/vaultmem-bench/report-{n_notes}-s{args.seed}")
    made = build(root, n_notes, args.seed)
    vault, out = root / "vault", root / "out"
    lint_s, done = _cli(vault, "lint", "--json")
    if done.returncode not in (0, 3):  # 3: findings (the synthetic notes restate each other by design)
        raise SystemExit(f"vaultmem lint failed: {done.stderr.strip()}")
    runs = [_report(vault, out) for _ in range(RUNS)]
    note_s, note_mb = _report(vault, out, "--note", made["busiest"])
    lint_report_s, _ = _report(vault, out, "--lint")
    return {"notes": n_notes, **{k: made[k] for k in ("events", "accesses", "feedback", "decays")},
            "lint_s": round(lint_s, 3), "report_s": round(statistics.median(s for s, _ in runs), 3),
            "report_runs_s": [round(s, 3) for s, _ in runs], "html_mb": round(runs[-1][1], 3),
            "report_note_s": round(note_s, 3), "html_note_mb": round(note_mb, 3),
            "report_lint_s": round(lint_report_s, 3)}


def _print(figures: dict) -> None:
    for key, value in figures.items():
        bound = TARGETS.get(key)
        target = f"   (target <= {bound:g} at 100,000 notes)" if bound is not None else ""
        print(f"{key:<16} {value}{target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=100_000)
    run_options(parser, "report", f"{SMOKE_NOTES} notes in a temporary folder")
    args = parser.parse_args()
    if args.smoke:
        smoke_cache(args, "vaultmem-report-")
    finish(args, run(args), _print)


if __name__ == "__main__":
    main()
