"""The benchmarks still run (a few seconds each); their figures are never asserted here."""

import json
import subprocess
import sys

import pytest

from .conftest import REPO


def test_recall_benchmark_smoke_writes_every_figure(tmp_path):
    out = tmp_path / "recall.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "recall.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text(encoding="utf-8"))
    for key in ("notes", "index_cold_s", "refresh_s", "open_s", "recall_p50_ms", "recall_p99_ms", "cli_recall_s",
                "peak_rss_index_mb", "rss_loaded_mb", "sidecar_mb"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key


LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo data is not beside this checkout (../shared/data)")
def test_locomo_benchmark_smoke_writes_both_systems(tmp_path):
    out = tmp_path / "locomo.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "locomo.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["n_questions"] == 30
    for system in ("vaultmem", "bm25s"):
        overall = figures[system]["overall"]
        assert set(overall) == {"R@5", "R@10", "Full@5", "Full@10", "MRR"}
        assert all(0.0 <= value <= 1.0 for value in overall.values())
