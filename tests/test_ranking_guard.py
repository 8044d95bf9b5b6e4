"""Guard: with no feedback, no pins and no per-note policy, recall ranks exactly as before they existed.

tests/golden/ranking-baseline.json was written by this module (`python -m tests.test_ranking_guard`) from
the ranking code before feedback, pins and per-note policy were added; every hit's title, its final,
effective and decay numbers and each channel's value, as recall prints them, must come out the same.
Written again once since, when exact ties came to be broken by timestamp and path (newer, then greater, first)
instead of index row order, so that clones rank alike (issue 16): every query's hits and score sequence were checked identical
then, only the order within tied scores moved.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

from vaultmem import Vault

GOLDEN = Path(__file__).parent / "golden" / "ranking-baseline.json"
NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc).timestamp()
_LIFECYCLES = ["note", "fact", "preference", "event", "task", "permanent"]
_TOPICS = ["oat milk coffee order", "contract CT2024-0876 renewal", "flight to Osaka with kids",
           "dentist appointment tuesday", "project apollo deadline", "客户张三的合同编号", "dog named Biscuit",
           "ERR_4031 login failure", "weekly report to Li", "budget spreadsheet Q3"]
QUERIES = [("coffee", []), ("contract renewal", []), ("Osaka flight", []), ("合同编号", []), ("", ["topic3"]),
           ("", []), ("latest project deadline", []), ("ERR_4031", []), ("budgt spreadsheat", []),
           ("report", ["topic8"])]


def build(root: Path) -> Vault:
    """A vault of 60 memories with fixed times, scores, lifecycles and some recorded uses."""
    vault = Vault.init(root)
    ids = []
    for n in range(60):
        topic = _TOPICS[n % len(_TOPICS)]
        when = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=5 * n, hours=n)
        result = vault.remember(f"Memory {n}: {topic}, detail number {n * 7} about item {n}.", title=f"m{n:02d}",
                                timestamp=when.isoformat(), lifecycle=_LIFECYCLES[n % len(_LIFECYCLES)],
                                score=float(n % 10), tags=[f"topic{n % len(_TOPICS)}"])
        ids.append(result.id)
    for n in range(0, 60, 7):
        vault.record_access([ids[n]], NOW - 3600.0 * n)
    return vault


def rankings(vault: Vault) -> dict[str, list[list[str]]]:
    """Each query's hits as [title, repr(final), repr(effective), repr(decay), channels], both fusions."""
    out = {}
    for fusion in ("weighted", "rrf"):
        vault.configure("ranking", fusion=fusion)
        for text, tags in QUERIES:
            hits = vault.recall(text, tags=tags, now=NOW, record_access=False, limit=8)
            out[f"{fusion}|{text}|{','.join(tags)}"] = [
                [h.title, repr(h.final), repr(h.effective), repr(h.decay), {k: repr(v) for k, v in h.channels.items()}]
                for h in hits]
    vault.configure("ranking", fusion="weighted")
    return out


def test_ranking_unchanged_without_feedback_or_pins(tmp_path):
    assert rankings(build(tmp_path / "v")) == json.loads(GOLDEN.read_text(encoding="utf-8"))


if __name__ == "__main__":  # regenerate the golden file (only from a ranking known to be right)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps(rankings(build(Path(tmp) / "v")), indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    sys.exit(0)
