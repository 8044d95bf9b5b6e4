"""What LangGraph's store operations cost on a vault (VaultStore), beside LangGraph's own InMemoryStore.

Both stores get the same items (`--items`, spread over `--namespaces` namespaces ("users", "u<n>")), each
put through the store; then each operation is timed many times: get, search with a query, search with a
filter only a few items pass, list_namespaces, and put (a new key, and a key again, which on a vault
supersedes its note). InMemoryStore keeps dicts in memory and reads no file: a floor, not a rival; the
vault's figures are what a graph pays for memory a person can read and edit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import _machine, write_figures  # noqa: E402


def _ms(call: Callable[[], object], times: int) -> float:
    """The median milliseconds of `times` calls (after one untimed call)."""
    call()
    taken = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        taken.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(taken), 3)


def _item(n: int) -> dict:
    return {"text": f"item {n} says the user likes topic{n % 97} and colour{n % 13}", "n": n, "kind": "pref"}


def _measure(store, items: int, namespaces: int, repeat: int) -> dict:
    started = time.perf_counter()
    for n in range(items):
        store.put(("users", f"u{n % namespaces}"), f"k{n}", _item(n))
    fill_s = time.perf_counter() - started
    counter = iter(range(10**9))
    one = ("users", "u7")
    return {
        "fill_s": round(fill_s, 2),
        "get_ms": _ms(lambda: store.get(one, f"k{7 + namespaces}"), repeat),
        "search_query_ms": _ms(lambda: store.search(one, query="topic7 colour3", limit=10), repeat),
        "search_rare_filter_ms": _ms(lambda: store.search(("users",), filter={"n": {"$lt": 3}}, limit=10),
                                     max(1, repeat // 20)),
        "list_namespaces_ms": _ms(lambda: store.list_namespaces(), max(1, repeat // 10)),
        "put_new_ms": _ms(lambda: store.put(one, f"new{next(counter)}", _item(1)), max(1, repeat // 5)),
        "put_again_ms": _ms(lambda: store.put(one, "again", _item(next(counter))), max(1, repeat // 5)),
    }


def run(items: int, namespaces: int, repeat: int) -> dict:
    from langgraph.store.memory import InMemoryStore

    from vaultmem import Vault
    from vaultmem.integrations.langgraph import VaultStore

    with tempfile.TemporaryDirectory() as root:
        os.environ.setdefault("VAULTMEM_HOME", str(Path(root) / "home"))
        vault = VaultStore(Vault.init(Path(root) / "vault"))
        figures = {"vaultmem": _measure(vault, items, namespaces, repeat),
                   "inmemory": _measure(InMemoryStore(), items, namespaces, repeat)}
    return {"items": items, "namespaces": namespaces, **figures, "machine": _machine()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=5000, help="items put before timing (default 5000)")
    p.add_argument("--namespaces", type=int, default=50, help="namespaces they spread over (default 50)")
    p.add_argument("--repeat", type=int, default=200, help="calls timed per fast operation (default 200)")
    p.add_argument("--smoke", action="store_true", help="a few items and calls: checks the bench runs")
    p.add_argument("--json", help="write the figures to this JSON file")
    args = p.parse_args(argv)
    items, repeat = (200, 10) if args.smoke else (args.items, args.repeat)
    result = run(items, args.namespaces, repeat)
    print(f"{result['items']} items in {result['namespaces']} namespaces, median ms (vaultmem / InMemoryStore):")
    for name in result["vaultmem"]:
        print(f"  {name:22} {result['vaultmem'][name]:>10} / {result['inmemory'][name]}")
    if args.json:
        write_figures(args.json, result)


if __name__ == "__main__":
    main()
