"""The benchmarks still run (a few seconds each); their figures are never asserted here."""

import json
import subprocess
import sys

import pytest

from .conftest import REPO

LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"


def smoke(script: str, out) -> dict:
    """Run a benchmark's --smoke mode and return the figures it wrote."""
    done = subprocess.run([sys.executable, str(REPO / "bench" / script), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_recall_benchmark_smoke_writes_every_figure(tmp_path):
    figures = smoke("recall.py", tmp_path / "recall.json")
    for key in ("notes", "index_cold_s", "refresh_s", "open_s", "recall_p50_ms", "recall_p99_ms", "cli_recall_s",
                "peak_rss_index_mb", "rss_loaded_mb", "sidecar_mb"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo data is not beside this checkout (../shared/data)")
def test_locomo_benchmark_smoke_writes_both_systems(tmp_path):
    figures = smoke("locomo.py", tmp_path / "locomo.json")
    assert figures["n_questions"] == 30
    for system in ("vaultmem", "bm25s"):
        overall = figures[system]["overall"]
        assert set(overall) == {"R@5", "R@10", "Full@5", "Full@10", "MRR"}
        assert all(0.0 <= value <= 1.0 for value in overall.values())


def test_peers_benchmark_smoke_hashes_the_vault_and_finds_no_change(tmp_path):
    figures = smoke("peers.py", tmp_path / "peers.json")
    vaultmem = figures["tools"]["vaultmem"]
    assert vaultmem["files_touched"] == 0 and vaultmem["edit_found"] is True
    assert vaultmem["index_s"] > 0 and vaultmem["warm_p50_ms"] > 0


def test_write_benchmark_smoke_leaves_no_secret_and_no_duplicate(tmp_path):
    figures = smoke("write.py", tmp_path / "write.json")
    for key in ("notes", "batch_s", "single_remember_s"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key
    assert figures["secrets_planted"] >= 8 and figures["secrets_on_disk"] == 0
    assert figures["duplicate_groups"] > 0 and figures["duplicates_left"] == 0


def test_agent_benchmark_smoke_times_every_turn(tmp_path):
    figures = smoke("agent.py", tmp_path / "agent.json")
    assert figures["turns"] == 150 and figures["prefetch_call"] in ("context", "recall")
    for key in ("remember_p50_ms", "remember_p99_ms", "prefetch_p50_ms", "prefetch_p99_ms", "last_over_first",
                "nowrite_prefetch_p50_ms"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key


def test_mcp_benchmark_smoke_times_vaultmem_over_stdio(tmp_path):
    figures = smoke("mcp.py", tmp_path / "mcp.json")
    vaultmem = figures["servers"]["vaultmem"]
    assert vaultmem["searches"] == 30 and vaultmem["empty_share"] < 1
    for key in ("start_s", "handshake_s", "warm_p50_ms", "warm_p99_ms"):
        assert isinstance(vaultmem[key], (int, float)) and vaultmem[key] > 0, key
    assert vaultmem["handshake_s"] < vaultmem["start_s"]
