"""The measuring side of bench/compare.py: each phase runs in a fresh process of a side's interpreter.

    python bench/_compare_phases.py NAME SPEC_JSON      # as bench/compare.py starts it

This checkout's code (this file, bench/recall.py, bench/_synth.py, bench/agent.py, bench/write.py) is what
measures; the vaultmem imported is the side's own (its venv's editable install: sys.path starts with
bench/, which holds no vaultmem, not with a checkout's root). Only the public API is used, so an old
commit runs every phase. Each phase prints one JSON object: the vaultmem it imported, the load average
at its start and the yardstick (a 2M-step pure-Python loop) timed right before its work, both again
right after it (as [before, after]), "busy" (CPU seconds of the work, its finished child processes
included, over its wall seconds: well below its usual value, the work waited for the disk or for a CPU),
then its "figures", "na" (figure: why not measured) and "extra".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall import _cli_figures, _percentile, _python_speed_s, _sidecar_bytes  # noqa: E402

CLI_IMPORT = "import vaultmem"
AGENT_BLOCK = 500  # turns compared at the start and at the end (issue 27 quotes the first and last 500)
MCP_PROTOCOL = "2025-06-18"
MCP_TIMEOUT_S = 120


# -- phases: each returns {"figures", "na", "extra"} (all optional) -------------------------------
def _phase_probe(_spec: dict) -> dict:
    """The side's Python, numpy and console scripts."""
    from importlib import metadata

    bin_dir = Path(sys.executable).parent
    return {"extra": {"python": platform.python_version(), "numpy": metadata.version("numpy"),
                      "bin": str(bin_dir), "mcp_script": (bin_dir / "vaultmem-mcp").exists()}}


def _note_digest(vault: Path) -> tuple[str, int]:
    """sha256 over the relative path and bytes of every note in the folders bench/_synth.py writes."""
    from vaultmem import Vault

    opened = Vault(vault)
    folders = [opened.folders[role] for role in ("entities", "memories", "inbox", "archive")]
    opened.close()
    digest, count = hashlib.sha256(), 0
    for path in sorted(p for folder in folders for p in folder.rglob("*.md")):
        digest.update(path.relative_to(vault).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        count += 1
    return digest.hexdigest(), count


def _phase_build(spec: dict) -> dict:
    """This checkout's generator, the side's Vault.init."""
    from _synth import make_vault

    info = make_vault(spec["vault"], spec["notes"], seed=spec["seed"])
    digest, files = _note_digest(Path(spec["vault"]))
    return {"extra": {**info, "digest": digest, "note_files": files}}


def _phase_inputs(spec: dict) -> dict:
    """The queries, the agent's turns and the batch, written once for both sides."""
    out = Path(spec["dir"])
    if "queries" in spec:
        from _synth import make_queries

        ids = json.loads(Path(spec["main_build"]).read_text())["ids"]
        queries = make_queries(spec["queries"], seed=spec["seed"], ids=ids)
        (out / "queries.json").write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    if "agent_turns" in spec:
        from agent import _turn_items

        ids = json.loads(Path(spec["agent_build"]).read_text())["ids"]
        memories, queries = _turn_items(spec["agent_turns"], spec["seed"], ids)
        (out / "agent.json").write_text(json.dumps({"memories": memories, "queries": queries}, ensure_ascii=False),
                                        encoding="utf-8")
    if "batch_notes" in spec:
        from write import make_items

        items, _secrets, markers = make_items(spec["batch_notes"], spec["seed"])
        (out / "batch.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items),
                                         encoding="utf-8")
        (out / "markers.json").write_text(json.dumps(markers), encoding="utf-8")
    return {}


def _phase_index(spec: dict) -> dict:
    """bench/recall.py's cold index, and the sidecar it left."""
    from recall import phase_index

    done = phase_index(argparse.Namespace(vault=spec["vault"], profile_out=None))
    per_1k = _sidecar_bytes(Path(spec["vault"])) / 1024 / (spec["notes"] / 1000)
    return {"figures": {"index_cold_s": done["seconds"], "peak_rss_index_mb": done["peak_rss_mb"],
                        "sidecar_kb_per_1k": per_1k}, "extra": {"stats": done["stats"]}}


def _phase_refresh(spec: dict) -> dict:
    """bench/recall.py's no-change refresh."""
    from recall import phase_refresh

    done = phase_refresh(argparse.Namespace(vault=spec["vault"], profile_out=None))
    return {"figures": {"refresh_s": done["seconds"]}}


def _phase_recall(spec: dict) -> dict:
    """bench/recall.py's in-process recall of the query file (one warm-up first)."""
    from recall import phase_recall

    done = phase_recall(argparse.Namespace(vault=spec["vault"], queries_file=spec["queries"], profile_out=None))
    figures = {"recall_p50_ms": _percentile(done["ms"], 50), "recall_p99_ms": _percentile(done["ms"], 99),
               "faults_per_recall": done["faults_per_recall"], "rss_loaded_mb": done["rss_mb"]}
    return {"figures": figures, "extra": {"queries": len(done["ms"]), "empty": done["empty"]}}


def _phase_cli(spec: dict) -> dict:
    """bench/recall.py's CLI walls with this side's console script, and `python -c "import vaultmem"`."""
    done = _cli_figures(Path(spec["vault"]), dict(os.environ), os.getcwd(), runs=spec["runs"], import_floor=CLI_IMPORT)
    names = {"with_refresh_s": "cli_recall_s", "no_refresh_s": "cli_recall_no_refresh_s", "import_s": "import_s"}
    figures = {name: statistics.median(done[key]) for key, name in names.items() if done[key]}
    na = {names[key]: error.splitlines()[0] for key, error in done["errors"].items() if key in names}
    return {"figures": figures, "na": na,
            "extra": {"runs": {names[k]: done[k] for k in names}, "command": done["command"]}}


def _phase_batch(spec: dict) -> dict:
    """bench/write.py's batch: `vaultmem remember --batch` into a new vault, then the repeat groups left."""
    from write import _cli, _duplicates_left, _run

    work = Path(spec["work"])
    vault, cli = work / "vault", _cli(sys.executable)
    _run([*cli, "init", str(vault)], work)
    seconds, out = _run([*cli, "remember", "--batch", spec["items"], "--vault", str(vault), "--json"], work)
    markers = json.loads(Path(spec["markers"]).read_text())
    return {"figures": {"batch_s": seconds, "batch_duplicates_left": _duplicates_left(vault, markers)},
            "extra": {"summary": {k: v for k, v in json.loads(out).items() if isinstance(v, int)}}}


def _phase_agent(spec: dict) -> dict:
    """bench/agent.py's turns in this one process, prefetching with recall."""
    from agent import drift, phase_turns

    done = phase_turns(argparse.Namespace(vault=spec["vault"], items_file=spec["items"], prefetch="recall"))
    block, first, last = drift(done["remember_ms"], done["prefetch_ms"], AGENT_BLOCK)
    figures = {"agent_last_over_first": last / first, "agent_recall_p50_ms": _percentile(done["prefetch_ms"], 50),
               "agent_remember_p50_ms": _percentile(done["remember_ms"], 50)}
    return {"figures": figures, "extra": {"block": block, "turns": len(done["remember_ms"]), "call": done["call"],
                                          "actions": done["actions"]}}


def _mcp_first_answer(script: Path, vault: str) -> tuple[float, int]:
    """Seconds from spawning `vaultmem-mcp` to its answer to tools/list (after initialize), and the tools."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    start = time.perf_counter()
    proc = subprocess.Popen([str(script), "--vault", vault], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8")
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)], daemon=True).start()

    def ask(message: dict) -> dict:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        while True:
            line = lines.get(timeout=max(0.1, MCP_TIMEOUT_S - (time.perf_counter() - start)))
            if line is None:
                raise RuntimeError(f"vaultmem-mcp exited ({proc.wait()}): {proc.stderr.read().strip()[-500:]}")
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    try:
        ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": MCP_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "compare", "version": "1"}}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        tools = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        seconds = time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()
    if "result" not in tools:
        raise RuntimeError(f"tools/list answered {tools.get('error')}")
    return seconds, len(tools["result"]["tools"])


def _phase_mcp(spec: dict) -> dict:
    """The side's `vaultmem-mcp` on the indexed vault, started spec["runs"] times."""
    script = Path(sys.executable).parent / "vaultmem-mcp"
    if not script.exists():
        return {"na": {"mcp_first_answer_s": f"no vaultmem-mcp console script in {script.parent}"}}
    starts = [_mcp_first_answer(script, spec["vault"]) for _ in range(spec["runs"])]
    return {"figures": {"mcp_first_answer_s": statistics.median(s for s, _ in starts)},
            "extra": {"runs_s": [s for s, _ in starts], "tools": starts[0][1]}}


PHASES = {"probe": _phase_probe, "build": _phase_build, "inputs": _phase_inputs, "index": _phase_index,
          "refresh": _phase_refresh, "recall": _phase_recall, "cli": _phase_cli, "batch": _phase_batch,
          "agent": _phase_agent, "mcp": _phase_mcp}


def run_phase(name: str, spec: dict) -> dict:
    """In the side's process: which vaultmem it imports, the load and the yardstick, the phase's work, and
    the load and the yardstick again after it (a long phase can meet noise that was not there at its start)."""
    import vaultmem

    load, yardstick = os.getloadavg()[0], _python_speed_s()
    cpu, start = _cpu_s(), time.perf_counter()
    done = PHASES[name](spec)
    busy = (_cpu_s() - cpu) / (time.perf_counter() - start)
    return {"vaultmem_file": vaultmem.__file__, "load_avg": [load, os.getloadavg()[0]],
            "yardstick_s": [yardstick, _python_speed_s()], "busy": busy, **done}


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (worker pools, CLI runs, the MCP server)."""
    import resource

    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    print(json.dumps(run_phase(sys.argv[1], json.loads(sys.argv[2]))))
