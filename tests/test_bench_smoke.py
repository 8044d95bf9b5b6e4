"""The benchmarks still run (a few seconds each); their figures are never asserted here."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
REALTALK = REPO.parent / "shared" / "data" / "realtalk"


def smoke(script: str, out, *options: str) -> dict:
    """Run a benchmark's --smoke mode and return the figures it wrote."""
    done = subprocess.run([sys.executable, str(REPO / "bench" / script), "--smoke", "--json", str(out), *options],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_recall_benchmark_smoke_writes_every_figure(tmp_path):
    figures = smoke("recall.py", tmp_path / "recall.json")
    for key in ("notes", "index_cold_s", "refresh_s", "open_s", "recall_p50_ms", "recall_p99_ms", "cli_recall_s",
                "peak_rss_index_mb", "rss_loaded_mb", "sidecar_mb"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key


def test_bignote_benchmark_smoke_measures_both_vaults_and_the_refused_paste(tmp_path):
    figures = smoke("bignote.py", tmp_path / "bignote.json")
    for side in ("without", "with"):
        for key in ("index_cold_cpu_s", "recall_p50_ms", "recall_cpu_ms", "context_mean_ms", "ask_mean_ms",
                    "cli_recall_deploy_cpu_s"):
            assert isinstance(figures[side][key], (int, float)) and figures[side][key] > 0, (side, key)
    assert figures["with"]["recalls_with_dump"] > 0 and figures["without"]["recalls_with_dump"] == 0
    assert figures["remember_pasted"]["exit_code"] == 1


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo data is not beside this checkout (../shared/data)")
def test_locomo_benchmark_smoke_writes_both_systems(tmp_path):
    figures = smoke("locomo.py", tmp_path / "locomo.json")
    assert figures["n_questions"] == 30
    for system in ("vaultmem", "bm25s"):
        overall = figures[system]["overall"]
        assert set(overall) == {"R@5", "R@10", "Full@5", "Full@10", "MRR"}
        assert all(0.0 <= value <= 1.0 for value in overall.values())


def assert_both_systems(figures: dict, types: set[str]) -> None:
    for system in ("vaultmem", "bm25s"):
        assert set(figures[system]["by_category"]) == types
        for metrics in (figures[system]["overall"], *figures[system]["by_category"].values()):
            assert set(metrics) == {"R@5", "R@10", "Full@5", "Full@10", "MRR"}
            assert all(0.0 <= value <= 1.0 for value in metrics.values())


@pytest.mark.skipif(not any(REALTALK.glob("Chat_*.json")), reason="no REALTALK data in ../shared/data/realtalk")
def test_realtalk_benchmark_smoke_writes_both_systems_and_takes_an_override(tmp_path):
    figures = smoke("realtalk.py", tmp_path / "realtalk.json", "--set", "ranking.bm25_b=0.75")
    assert figures["n_questions"] == 30 and figures["overrides"] == {"ranking": {"bm25_b": 0.75}}
    assert sum(figures["n_by_category"].values()) == 30
    assert_both_systems(figures, set(figures["n_by_category"]))


def test_realtalk_benchmark_without_data_says_where_to_get_it(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "realtalk.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "github.com/danny911kr/REALTALK" in done.stderr


@pytest.mark.skipif(not (REALTALK / "SHA256SUMS").is_file(), reason="no REALTALK SHA256SUMS in ../shared/data/realtalk")
def test_realtalk_benchmark_stops_on_a_chat_that_differs_from_sha256sums(tmp_path):
    for path in REALTALK.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    changed = tmp_path / "Chat_2_Kevin_Elise.json"
    changed.write_bytes(changed.read_bytes()[:-1])
    done = subprocess.run([sys.executable, str(REPO / "bench" / "realtalk.py"), "--smoke", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "SHA256SUMS: Chat_2_Kevin_Elise.json;" in done.stderr


def test_stress_benchmark_smoke_covers_every_kind_and_reports_the_largest_note(tmp_path):
    figures = smoke("stress.py", tmp_path / "stress.json")
    kinds = {"short-fact", "short-fact-zh", "merge-pile", "relative-date", "question-gold", "other-speaker",
             "fact-in-question"}
    assert set(figures["n_by_category"]) == kinds
    assert_both_systems(figures, kinds)
    assert figures["largest_note"]["texts"] >= 1 and figures["largest_note"]["chars"] > 0


def test_stress_set_is_the_same_for_a_seed_and_differs_across_seeds():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import stress
    finally:
        sys.path.remove(str(REPO / "bench"))
    first, again, other = stress.generate(3), stress.generate(3), stress.generate(4)
    assert first == again and first != other
    ids = {t.dia_id for t in first.turns}
    assert all(q.gold and q.gold <= ids for q in first.questions)


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
    for key in ("start_s", "handshake_s", "tools_s", "warm_p50_ms", "warm_p99_ms"):
        assert isinstance(vaultmem[key], (int, float)) and vaultmem[key] > 0, key
    assert vaultmem["handshake_s"] <= vaultmem["tools_s"] < vaultmem["start_s"]
    floor = vaultmem["sdk_floor"]  # the SDK alone, started beside it
    assert 0 < floor["handshake_s"] <= floor["tools_s"] < floor["start_s"]


def test_watcher_benchmark_smoke_writes_every_figure(tmp_path):
    figures = smoke("sync_watch.py", tmp_path / "watch.json")
    assert figures["saves"] == 20 and figures["watcher_exit_code"] == 0
    for key in ("save_to_recallable_p50_ms", "save_to_recallable_p99_ms", "cli_recall_watched_s",
                "cli_recall_unwatched_s", "cli_recall_no_refresh_s", "import_floor_s"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key


def test_sync_benchmark_smoke_merges_every_changed_note_in_process(tmp_path):
    figures = smoke("sync.py", tmp_path / "sync.json")
    assert figures["merged_ok"] is True and figures["merge"]["merges"] == figures["changed"] == 50
    assert figures["merge"]["settled"] == 50 and figures["merge"]["merge_file_processes"] >= 50
    for phase in ("push", "merge"):
        assert 0 < figures[phase]["git_s"] < figures[phase]["total_s"], phase
    assert figures["driver_process_ms"] > 0


def test_lifecycle_benchmark_smoke_times_gc_and_forget(tmp_path):
    figures = smoke("lifecycle.py", tmp_path / "lifecycle.json")
    for key in ("gc_dry_run_cli_s", "gc_dry_run_s", "forget_tag_cli_s", "forget_tag_s"):
        assert isinstance(figures[key], float) and figures[key] > 0, key
    assert figures["forget_cli_archived"] == figures["forget_lib_archived"] == figures["forgotten"]
    assert isinstance(figures["consolidate_s"], float) and figures["consolidate_s"] > 0


def test_consolidate_benchmark_smoke_writes_every_figure(tmp_path):
    figures = smoke("consolidate.py", tmp_path / "consolidate.json")
    for key in ("candidates", "groups", "planted", "planted_found", "mixed", "other_groups", "dry_run_s",
                "consolidate_s", "again_s", "again_written"):
        assert isinstance(figures[key], (int, float)), key


def test_workingset_benchmark_smoke_writes_every_figure(tmp_path):
    figures = smoke("workingset.py", tmp_path / "workingset.json")
    for key in ("hot_mrr", "hot_mrr_without", "cold_mrr", "cold_mrr_without", "hot_top1", "cold_top1",
                "lookup_us", "lookup_us_without", "recall_ms", "recall_ms_without"):
        assert isinstance(figures[key], (int, float)), key


def test_house_benchmark_measures_every_folder_and_traces_one_remember(tmp_path):
    out = tmp_path / "house.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "house.py"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert {"folders", "modules", "lines", "largest_module", "all_modules_within_limit", "longest_functions",
            "function_lines_median", "function_lines_mean", "trace"} <= set(figures)
    assert "vaultmem/" in figures["folders"] and "vaultmem/store/index/" in figures["folders"]
    assert all(row["modules"] > 0 and row["lines"] > 0 for row in figures["folders"].values())
    assert figures["modules"] == sum(row["modules"] for row in figures["folders"].values())
    assert len(figures["longest_functions"]) == 10 and figures["function_lines_median"] > 0
    trace = figures["trace"]
    assert trace["modules_before_write"][0] == "vaultmem.vault" and "vaultmem.store.files" in trace["modules_before_write"]
    assert any(path.startswith("memories/") for path in trace["note_files_written"])
    assert 0 < trace["modules_before_write_count"] <= trace["modules_whole_call_count"]
    # at run time too, no layer calls up into a higher one except through a callback it was handed
    assert trace["climbs"] == {} and trace["climbs_count"] == 0, trace["climbs"]


def test_note_bytes_smoke_writes_the_same_notes_as_head(tmp_path):
    figures = smoke("note_bytes.py", tmp_path / "note_bytes.json")
    assert figures["against"] == "HEAD" and figures["notes"] == 50 and figures["sample_memories"] > 0
    assert figures["compared"] > 50 and figures["identical"] == figures["compared"] and figures["differing"] == 0


def test_compare_benchmark_smoke_measures_both_sides_on_the_same_notes(tmp_path):
    figures = smoke("compare.py", tmp_path / "compare.json")
    assert set(figures["sides"]) == {"base", "head"} and figures["rounds"] == 1
    assert figures["notes_check"] and all(check["identical"] for check in figures["notes_check"].values())
    rows = figures["summary"]["figures"]
    for name, row in rows.items():
        if name == "mcp_first_answer_s" and "mcp_first_answer_s" in figures["summary"]["na"]:
            continue  # a checkout without the mcp extra says why instead
        for role in ("base", "head"):
            assert isinstance(row[role], (int, float)) and len(row[f"{role}_runs"]) == 1, (name, role)
    assert {"recall_p50_ms", "faults_per_recall", "index_cold_s", "cli_recall_s", "batch_duplicates_left",
            "agent_last_over_first", "mcp_first_answer_s"} <= set(rows)
    for side in figures["summary"]["per_side"].values():
        assert side["yardstick_s"] and side["load_avg"]
        assert side["vaultmem"] == [str(REPO / "vaultmem")]


def _house_table() -> tuple[list[str], dict[str, list[str]]]:
    """bench/README's table of house.py's figures: the commit of each column, and each row's cells."""
    text = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ")]
    header = next(row for row in rows if row[0] == "" and "99fce54" in row[1])
    at = rows.index(header)
    body = {row[0]: row[1:] for row in rows[at + 1:] if row[0] and not set(row[0]) <= {"-"}}
    return [cell.split()[0] for cell in header[1:]], body


def test_the_bench_readme_line_counts_are_those_of_the_commits_it_names(tmp_path):
    """Issue 28 item 7: the table said `main` for a tree main had long left. Each column names a commit;
    the modules, lines and largest modules it quotes are what house.py counts in that commit's tree."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from house import shape
    finally:
        sys.path.remove(str(REPO / "bench"))
    commits, rows = _house_table()
    for column, commit in enumerate(commits):
        if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode != 0:
            continue  # a shallow clone: that commit is not here
        tree = tmp_path / commit
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "vaultmem"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        counted = shape(tree)
        modules, lines = rows["modules / lines"][column].split(" (")[0].split(" in ")[0].split(" / ")
        assert (int(modules), int(lines.replace(",", ""))) == (counted["modules"], counted["lines"]), commit
        over = rows["modules over 600 lines"][column]
        assert int(over.split()[0]) == len(counted["modules_over_limit"]), commit
        quoted = {f"vaultmem/{name}": int(n) for name, n in re.findall(r"([\w/]+\.py),? (\d+)", over)}
        known = {m["file"]: m["lines"] for m in [*counted["modules_over_limit"], counted["largest_module"]]}
        assert quoted and all(known.get(name) == n for name, n in quoted.items()), (commit, quoted, known)
        mean = float(rows["function length median / mean"][column].split(" / ")[1])
        assert mean == round(counted["function_lines_mean"], 1), commit


def test_http_benchmark_smoke_checks_every_write(tmp_path):
    figures = smoke("serve.py", tmp_path / "serve.json")
    for key in ("requests_per_s", "recall_per_s", "recall_p50_ms", "capacity_recall_per_s", "start_to_first_answer_s"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key
    assert figures["acknowledged_writes"] > 0
    assert (figures["lost"], figures["duplicates"], figures["server_errors"]) == (0, 0, 0)


def test_no_bench_script_shadows_a_module_of_the_standard_library():
    """A script in bench/ runs with bench/ first on sys.path: bench/http.py once made `import http.client` (which
    langchain_core needs) find the bench script instead, and langgraph_store.py failed."""
    names = {p.stem for p in (Path(__file__).parent.parent / "bench").glob("*.py")}
    assert not names & set(sys.stdlib_module_names)


def test_report_benchmark_smoke_writes_every_figure(tmp_path):
    figures = smoke("report.py", tmp_path / "report.json")
    for key in ("notes", "events", "lint_s", "report_s", "html_mb", "report_note_s", "html_note_mb", "report_lint_s"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key


@pytest.mark.skipif(not LOCOMO.exists(), reason="the LoCoMo data is not beside this checkout (../shared/data)")
def test_engram_peer_smoke_scores_vaultmem_on_both_metrics_and_installs_nothing(tmp_path):
    figures = smoke("engram_peer.py", tmp_path / "engram.json")
    overall = figures["systems"]["vaultmem"]["overall"]
    assert overall["n"] == 30 and {"R@5", "R@10", "MRR", "S@5"} <= set(overall)
    assert all(0.0 <= overall[m] <= 1.0 for m in ("R@5", "R@10", "MRR", "S@5"))
    assert figures["engram"]["install"].startswith("skipped")  # --smoke never installs engram


def test_asof_benchmark_smoke_times_plain_and_as_of_recall(tmp_path):
    figures = smoke("asof.py", tmp_path / "asof.json")
    for key in ("plain_p50_ms", "plain_p99_ms", "as_of_p50_ms", "as_of_p99_ms", "ratio_p50"):
        assert isinstance(figures[key], (int, float)) and figures[key] > 0, key
    assert figures["notes"] == 200 and figures["git"] is False
