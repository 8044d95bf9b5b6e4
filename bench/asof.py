"""recall --as-of (issue 30 item 2): what looking at a past date costs, beside a plain recall, on a synthetic vault.

    python bench/asof.py --notes 10000                 # in a temporary folder
    python bench/asof.py --notes 10000 --git           # the vault committed to git first (adds git's reads)
    python bench/asof.py --smoke                       # 200 notes, a few seconds, for CI

The same queries run in one process, plain and with as_of set to the median note's timestamp; p50 and
p99 of each and their ratio are printed. A plain recall is what every caller pays: as-of is built at
query time from the audit log, the events logs and git, so only an as-of query pays it.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed(vault, queries: list[dict], **options) -> list[float]:
    times = []
    for q in queries:
        start = time.perf_counter()
        vault.recall(q["text"], tags=q["tags"], record_access=False, **options)
        times.append((time.perf_counter() - start) * 1000)
    return times


def run(notes: int, queries: int, git: bool, workdir: Path) -> dict:
    os.environ.setdefault("VAULTMEM_HOME", str(workdir / "home"))
    os.environ.setdefault("VAULTMEM_DEVICE_ID", "bench-asof-0001")
    from _synth import make_queries, make_vault

    from vaultmem import Vault

    info = make_vault(workdir / "vault", notes)
    asked = make_queries(queries, ids=info.pop("ids"))
    root = workdir / "vault"
    if git:
        for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=bench", "-c", "user.email=b@example.com",
                                                      "commit", "-qm", "vault"]):
            subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    vault = Vault(root)
    vault.refresh()
    snap = vault.index.snapshot()
    moment = float(statistics.median(snap.ts[snap.live].tolist()))
    vault.recall(asked[0]["text"], tags=asked[0]["tags"], record_access=False)
    vault.recall(asked[0]["text"], tags=asked[0]["tags"], record_access=False, as_of=moment)
    plain = _timed(vault, asked)
    past = _timed(vault, asked, as_of=moment)
    vault.close()
    out = {"notes": notes, "queries": queries, "git": git, "as_of": moment, "load": os.getloadavg()[0]}
    for name, times in (("plain", plain), ("as_of", past)):
        out[f"{name}_p50_ms"] = round(statistics.median(times), 3)
        out[f"{name}_p99_ms"] = round(_percentile(times, 0.99), 3)
    out["ratio_p50"] = round(out["as_of_p50_ms"] / out["plain_p50_ms"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--git", action="store_true", help="commit the vault to git first")
    parser.add_argument("--smoke", action="store_true", help="200 notes, 10 queries")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    notes, queries = (200, 10) if args.smoke else (args.notes, args.queries)
    with tempfile.TemporaryDirectory(prefix="vaultmem-asof-") as tmp:
        result = run(notes, queries, args.git, Path(tmp))
    for key, value in result.items():
        print(f"{key:>14}  {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
