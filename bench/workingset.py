"""Working-set benchmark: what a long-lived process's hot LRU changes, for lookups and for recall.

    python bench/workingset.py --notes 20000 --json bench/out/workingset-20k.json
    python bench/workingset.py --smoke            # 1,000 notes: CI

Over bench/_synth.py's vault, one process (a session) reads `--used` memories by id (get), as an
agent does with what it works on; its working set then holds them. Queries are three words drawn from
one memory's text (a vague recall, as an agent's follow-up is), for `--queries` memories the session
used (hot) and as many it did not (cold). Each query runs in the session's Vault and in a Vault
without a working set (the CLI's ranking).

Figures (JSON keys): `hot_mrr` / `hot_mrr_without` and `hot_top1` / `hot_top1_without` (the used
memory's reciprocal rank in the top 50 and share ranked first, with and without the set),
`cold_mrr` / `cold_mrr_without` and the top-1 shares (the price for what the session did not use),
`lookup_us` / `lookup_us_without` (median µs of `resolve(id)` for a used memory), `recall_ms` /
`recall_ms_without` (median ms of a recall).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _figures import write_figures  # noqa: E402
from _synth import make_vault  # noqa: E402

from vaultmem import Vault  # noqa: E402

SMOKE_NOTES = 1000
LIMIT = 50
_WORD = re.compile(r"[^\W\d_]{4,}")


def _query(r: random.Random, body: str) -> str | None:
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(body)))
    return " ".join(r.sample(words, 3)) if len(words) >= 3 else None


def _rank(vault: Vault, query: str, target: str) -> tuple[float, float]:
    """(reciprocal rank in the top LIMIT, wall ms) of a recall."""
    start = time.perf_counter()
    hits = vault.recall(query, limit=LIMIT, record_access=False)  # a peek: no access, no promotion
    ms = (time.perf_counter() - start) * 1000
    ids = [h.id for h in hits]
    return (1.0 / (ids.index(target) + 1) if target in ids else 0.0), ms


def run(n_notes: int, used: int, queries: int, seed: int, workdir: str) -> dict:
    made = make_vault(Path(workdir) / "vault", n_notes, seed)
    plain = Vault(made["path"])
    plain.refresh()
    session = Vault(made["path"])
    session.use_working_set()
    rows = plain.index.select_notes("kind = 'memory' AND status = 'active' AND namespace = 'shared'",
                                    columns=("id", "body"))
    r = random.Random(seed)
    r.shuffle(rows)
    hot_rows, cold_rows = rows[:used], rows[used:used + queries]
    for row in hot_rows:
        session.get(row["id"])
    figures: dict[str, float] = {"notes": n_notes, "used": used}
    recall_ms: dict[str, list[float]] = {"": [], "_without": []}
    for name, targets in (("hot", hot_rows[-queries:]), ("cold", cold_rows)):
        ranks: dict[str, list[float]] = {"": [], "_without": []}
        for row in targets:
            query = _query(r, row["body"])
            if query is None:
                continue
            for suffix, vault in (("", session), ("_without", plain)):
                rr, ms = _rank(vault, query, row["id"])
                ranks[suffix].append(rr)
                recall_ms[suffix].append(ms)
        for suffix, values in ranks.items():
            figures[f"{name}_mrr{suffix}"] = round(statistics.fmean(values), 4)
            figures[f"{name}_top1{suffix}"] = round(sum(v == 1.0 for v in values) / len(values), 4)
        figures[f"{name}_queries"] = len(ranks[""])
    for suffix, vault in (("", session), ("_without", plain)):
        times = []
        for row in hot_rows[-200:]:
            start = time.perf_counter()
            vault.resolve(row["id"])
            times.append((time.perf_counter() - start) * 1e6)
        figures[f"lookup_us{suffix}"] = round(statistics.median(times), 1)
        figures[f"recall_ms{suffix}"] = round(statistics.median(recall_ms[suffix]), 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20_000)
    parser.add_argument("--used", type=int, default=500, help="memories the session reads (its working set)")
    parser.add_argument("--queries", type=int, default=200, help="queries for hot and for cold targets each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_NOTES} notes, 100 used, 50 queries")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    notes, used, queries = (SMOKE_NOTES, 100, 50) if args.smoke else (args.notes, args.used, args.queries)
    with tempfile.TemporaryDirectory(prefix="vaultmem-workingset-") as workdir:
        figures = run(notes, used, queries, args.seed, workdir)
    text = json.dumps(figures, indent=2)
    print(text)
    write_figures(args.json, figures)


if __name__ == "__main__":
    main()
