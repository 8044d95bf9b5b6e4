"""The benchmarks still run (a few seconds each); their figures are never asserted here."""

import json
import subprocess
import sys

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
