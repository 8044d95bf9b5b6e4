"""HTTP side by side (issue 29): `vaultmem serve` and basic-memory's HTTP API on the same generated notes,
in one run, with the same queries and the same client.

    python bench/peer_http.py --peer-python /work/venv-bm/bin/python --json bench/out/peer-http-2k.json
    python bench/peer_http.py --smoke --peer none     # vaultmem alone, 100 notes, 1 s: CI

The vault is bench/serve.py's (bench/_synth.py's notes, indexed cold, one read-write token per client,
the rate limit off). Its notes (everything but .vaultmem/) are copied as they are into a second folder,
basic-memory's project, and basic-memory (`python -m uvicorn basic_memory.api.app:app` under an
interpreter that has it, its HOME, config and database in the work folder, nothing reached on the
network) indexes them on its first start: `index_s` runs until a title search finds the last note
written and its project status is idle. Then, one server at a time (the other stopped), each is
started afresh on its indexed notes and measured the same way:
  start_to_first_answer_s  spawn to the first answer (vaultmem /api/v1/health, basic-memory /v2/projects/)
  start_to_first_search_s  spawn to the answer of a first recall / search asked right after
  single_p50_ms, _p99_ms   one client, one keep-alive connection (http.client), --queries recalls after
                           10 untimed; basic-memory is first left to settle (its start rescans the folder)
  concurrent_per_s, _p50_ms  --clients clients (threads, a connection each) recalling for --seconds
  server_cpu_ms_per_recall the server's CPU (user + system) over the concurrent phase per answer
  write_p50_ms, _p99_ms    --writes writes, one at a time (vaultmem POST /api/v1/memories, basic-memory
                           POST /v2/projects/{id}/knowledge/entities), the same text each
A recall is vaultmem's GET /api/v1/recall?query=&tags=&limit=10 and basic-memory's QUERY
/v2/projects/{id}/search/?page_size=10 with {"text", "tags"}. Nothing is asserted: the figures are
printed with the load average, and written with --json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, _BENCH)
from _figures import drop_workdir, workdir_options, write_figures  # noqa: E402
from peers import _base_env  # noqa: E402
from recall import _environment, _machine, _percentile  # noqa: E402
from serve import API, _build, _cpu_s, _first_recall, _start  # noqa: E402  (serve drops bench/ from sys.path)

PEER = "basic-memory"
BM_APP = "basic_memory.api.app:app"
BM_PYTHON_ENV = "VAULTMEM_BENCH_BM_PYTHON"  # an interpreter that imports basic_memory, for the smoke test
INDEX_TIMEOUT_S = 3600
SETTLE_TIMEOUT_S = 900
WORDS = ("rack", "deploy", "invoice", "review", "server", "meeting", "ticket", "budget")
FIGURES = ("index_s", "start_to_first_answer_s", "start_to_first_search_s", "single_p50_ms", "single_p99_ms",
           "single_empty_share", "concurrent_per_s", "concurrent_p50_ms", "concurrent_p99_ms",
           "server_cpu_ms_per_recall", "write_p50_ms", "write_p99_ms", "errors", "load_avg_1m")
HIGHER_IS_BETTER = {"concurrent_per_s"}
NOT_COMPARABLE = (
    "basic-memory's search is SQLite FTS5 over its own rows (a note, and each of its relations and "
    "observations, is a row: an answer's 10 results can be 3 notes); vaultmem ranks notes (BM25F, entities, "
    "lifecycle, strength) and answers each with its fields and why it matched.",
    "basic-memory answers a write with 202 before its Markdown file is written (a queue materializes it); "
    "vaultmem answers once the note, the day note and their folders are fsynced and the index is updated.",
    "vaultmem checks a token on every request (x-api-key, hashed); basic-memory's local API has no auth.",
    "basic-memory rewrites the notes it indexes (a permalink line, block lists, no final newline); "
    "vaultmem changes none (bench/peers.py, files_touched).",
    "basic-memory's embeddings are off on this host (no SQLite extension loading), so its search is keyword-only.",
)


class Connection:
    """One keep-alive HTTP/1.1 connection; request() answers (status, the JSON answer, milliseconds)."""

    def __init__(self, url: str, headers: dict[str, str]):
        parts = urllib.parse.urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        self._headers = {"content-type": "application/json", **headers}

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, object, float]:
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        started = time.perf_counter()
        self._conn.request(method, path, body=data, headers=self._headers)
        answer = self._conn.getresponse()
        raw = answer.read()
        ms = (time.perf_counter() - started) * 1000
        return answer.status, json.loads(raw) if raw else None, ms

    def close(self) -> None:
        self._conn.close()


Request = tuple[str, str, dict | None]


@dataclass
class Side:
    """One running server as the clients see it: how to recall, how to write, how many hits an answer has."""

    name: str
    url: str
    headers: dict[str, str]
    pid: int
    recall: Callable[[dict], Request]
    remember: Callable[[str], Request]
    hits: Callable[[object], int]


def _memory_text(marker: str) -> str:
    words = " ".join(random.Random(marker).choice(WORDS) for _ in range(6))
    return f"Load test memory {marker}: {words}"


def vaultmem_side(url: str, token: str, pid: int) -> Side:
    def recall(q: dict) -> Request:
        params = urllib.parse.urlencode({"query": q["text"], "tags": q["tags"], "limit": 10}, doseq=True)
        return "GET", f"{API}/recall?{params}", None

    def remember(marker: str) -> Request:
        return "POST", f"{API}/memories", {"text": _memory_text(marker), "tags": ["bench"], "namespace": "bench"}

    return Side("vaultmem", url, {"x-api-key": token}, pid, recall, remember, lambda answer: len(answer["hits"]))


def basic_memory_side(url: str, project: str, pid: int) -> Side:
    def recall(q: dict) -> Request:
        return "QUERY", f"/v2/projects/{project}/search/?page_size=10", {"text": q["text"] or None,
                                                                         "tags": q["tags"] or None}

    def remember(marker: str) -> Request:
        return "POST", f"/v2/projects/{project}/knowledge/entities", {
            "title": f"Load test {marker}", "directory": "bench", "content": _memory_text(marker)}

    return Side(PEER, url, {}, pid, recall, remember, lambda answer: len(answer["results"]))


# -- the measures, the same for both ---------------------------------------------------------------
def _latencies(ms: list[float], prefix: str) -> dict:
    return {f"{prefix}_p50_ms": round(_percentile(ms, 50), 2) if ms else None,
            f"{prefix}_p99_ms": round(_percentile(ms, 99), 2) if ms else None}


def single_client(side: Side, queries: list[dict], count: int) -> dict:
    """One client alone on one connection: `count` recalls after 10 untimed."""
    conn = Connection(side.url, side.headers)
    for q in queries[:10]:
        conn.request(*side.recall(q))
    ms, empty, errors = [], 0, 0
    for q in queries[10:10 + count]:
        status, answer, took = conn.request(*side.recall(q))
        if status == 200:
            ms.append(took)
            empty += side.hits(answer) == 0
        else:
            errors += 1
    conn.close()
    return {**_latencies(ms, "single"), "single_empty_share": round(empty / max(1, len(ms)), 3),
            "single_errors": errors}


def _recall_until(side: Side, queries: list[dict], deadline: float, seed: int, out: list, errors: list) -> None:
    conn, rng = Connection(side.url, side.headers), random.Random(seed)
    while time.perf_counter() < deadline:
        status, _, took = conn.request(*side.recall(rng.choice(queries)))
        (out if status == 200 else errors).append(took)
    conn.close()


def concurrent_clients(side: Side, queries: list[dict], clients: int, seconds: float) -> dict:
    """`clients` threads, a connection each, recalling as fast as they are answered for `seconds`."""
    answered: list[list[float]] = [[] for _ in range(clients)]
    errors: list[float] = []
    deadline = time.perf_counter() + seconds
    cpu = _cpu_s(side.pid)
    threads = [threading.Thread(target=_recall_until, args=(side, queries, deadline, i, answered[i], errors))
               for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ms = [took for one in answered for took in one]
    cpu_ms = 1000 * (_cpu_s(side.pid) - cpu)
    return {"concurrent_per_s": round(len(ms) / seconds, 1),
            **{key.replace("single", "concurrent"): value for key, value in _latencies(ms, "single").items()},
            "server_cpu_ms_per_recall": round(cpu_ms / max(1, len(ms)), 2), "concurrent_errors": len(errors)}


def writes(side: Side, count: int) -> dict:
    """`count` writes one after the other on one connection, each a memory of its own."""
    conn = Connection(side.url, side.headers)
    ms, errors = [], 0
    for seq in range(count):
        status, _, took = conn.request(*side.remember(f"PH{seq:06d}X"))
        if status in (200, 201, 202):
            ms.append(took)
        else:
            errors += 1
    conn.close()
    return {**_latencies(ms, "write"), "write_errors": errors}


def measure(side: Side, queries: list[dict], args: argparse.Namespace) -> dict:
    """The same three measures for any server, with the machine's load at the end of each."""
    figures = single_client(side, queries, args.queries)
    loads = [os.getloadavg()[0]]
    figures |= concurrent_clients(side, queries, args.clients, args.seconds)
    loads.append(os.getloadavg()[0])
    figures |= writes(side, args.writes)
    loads.append(os.getloadavg()[0])
    figures["errors"] = figures.pop("single_errors") + figures.pop("concurrent_errors") + figures.pop("write_errors")
    figures["load_avg_1m"] = round(max(loads), 2)
    figures["load_avg_1m_by_phase"] = [round(x, 2) for x in loads]
    return figures


# -- the servers --------------------------------------------------------------------------------------
def _stop(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGINT)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


def run_vaultmem(vault: Path, env: dict, tokens: list[str], queries: list[dict], args: argparse.Namespace,
                 index_s: float) -> dict:
    """A fresh `vaultmem serve` on the indexed vault, measured, stopped."""
    server, url, first = _start(vault, env, 1)
    try:
        first_search = _first_recall(url, tokens[0], first, time.perf_counter())
        side = vaultmem_side(url, tokens[0], server.pid)
        figures = measure(side, queries, args)
    finally:
        _stop(server)
    return {"index_s": index_s, "start_to_first_answer_s": round(first, 3),
            "start_to_first_search_s": round(first_search, 3), **figures}


def find_bm_python(explicit: str | None) -> str | None:
    """An interpreter that imports basic_memory: --peer-python, else $VAULTMEM_BENCH_BM_PYTHON, else
    python3.12+ on PATH."""
    found = [explicit] if explicit else [os.environ.get(BM_PYTHON_ENV),
                                         *(shutil.which(f"python3.{minor}") for minor in range(14, 11, -1))]
    for python in filter(None, found):
        if subprocess.run([python, "-c", "import basic_memory"], capture_output=True).returncode == 0:
            return python
    return None


def _bm_env(work: Path, vault: Path) -> dict:
    """basic-memory's environment: a private HOME, its config and database under the work folder, its
    one project (`main`) the vault copy, offline switches on. PYTEST_CURRENT_TEST goes too: with it set (the
    smoke test runs this script under pytest) basic-memory takes itself for under test and never indexes."""
    env = _base_env(work / "home-basic-memory")
    env = {k: v for k, v in env.items() if not k.startswith(("BASIC_MEMORY_", "VAULTMEM_", "PYTEST_"))
           or k in ("BASIC_MEMORY_NO_PROMOS", "BASIC_MEMORY_AUTO_UPDATE")}
    env.update(BASIC_MEMORY_CONFIG_DIR=str(work / "home-basic-memory" / "state"), BASIC_MEMORY_HOME=str(vault))
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_basic_memory(python: str, work: Path, vault: Path) -> tuple[subprocess.Popen, str, str, float]:
    """basic-memory's API under uvicorn (no access log, as vaultmem serve): (the process, its URL, the
    project's external id, seconds from spawn to the first answer of GET /v2/projects/)."""
    port = _free_port()
    log = open(work / "basic-memory-server.log", "ab")  # noqa: SIM115 (the server's whole life)
    started = time.perf_counter()
    server = subprocess.Popen([python, "-m", "uvicorn", BM_APP, "--host", "127.0.0.1", "--port", str(port),
                               "--no-access-log", "--log-level", "warning"], env=_bm_env(work, vault),
                              stdout=log, stderr=log, cwd=work)
    url = f"http://127.0.0.1:{port}"
    while True:
        if server.poll() is not None:
            raise SystemExit(f"basic-memory did not start: see {work / 'basic-memory-server.log'}")
        probe = Connection(url, {})
        try:
            status, answer, _ = probe.request("GET", "/v2/projects/")
            if status == 200:
                break
        except OSError:  # not listening yet
            pass
        finally:
            probe.close()
        time.sleep(0.01)
    first = time.perf_counter() - started
    project = next(p["external_id"] for p in answer["projects"] if p["name"] == answer["default_project"])
    return server, url, project, first


def _status(conn: Connection, project: str) -> dict:
    return conn.request("GET", f"/v2/projects/{project}/status")[1]["readiness"]


def _idle(readiness: dict) -> bool:
    return readiness["phase"] == "idle" and readiness["indexed_entities"] >= readiness["files_on_disk"]


def wait_indexed(url: str, project: str, last: Path, started: float) -> float:
    """Seconds from `started` until a title search finds the last note written and the project is idle."""
    conn, said = Connection(url, {}), time.perf_counter()
    query = {"title": last.stem}
    while time.perf_counter() - started < INDEX_TIMEOUT_S:
        status, answer, _ = conn.request("QUERY", f"/v2/projects/{project}/search/?page_size=10", query)
        if status == 200 and any(r["file_path"] == last.as_posix() for r in answer["results"]):
            if _idle(_status(conn, project)):
                return time.perf_counter() - started
        if time.perf_counter() - said > 60:
            readiness, said = _status(conn, project), time.perf_counter()
            print(f"  basic-memory indexing: {readiness['indexed_entities']} of {readiness['files_on_disk']} "
                  f"files after {said - started:.0f} s (load {os.getloadavg()[0]:.2f})", flush=True)
        time.sleep(1.0)
    raise SystemExit(f"basic-memory had not indexed {last} after {INDEX_TIMEOUT_S} s")


def settle(url: str, project: str, pid: int) -> float:
    """Wait until the project is idle and the server used under 5% of a core for 2 s; returns the wait."""
    conn, started = Connection(url, {}), time.perf_counter()
    while time.perf_counter() - started < SETTLE_TIMEOUT_S:
        cpu = _cpu_s(pid)
        time.sleep(2.0)
        if _cpu_s(pid) - cpu < 0.1 and _idle(_status(conn, project)):
            break
    return round(time.perf_counter() - started, 1)


def index_basic_memory(python: str, work: Path, vault: Path, last: Path) -> tuple[float, float]:
    """basic-memory's first start on the copied notes, until they are indexed; (index_s, its first answer)."""
    server, url, project, first = start_basic_memory(python, work, vault)
    try:
        index_s = wait_indexed(url, project, last, time.perf_counter() - first)
    finally:
        _stop(server)
    return round(index_s, 1), round(first, 3)


def run_basic_memory(python: str, work: Path, vault: Path, queries: list[dict], args: argparse.Namespace,
                     index: tuple[float, float]) -> dict:
    """basic-memory started afresh on its indexed copy, left to settle, measured, stopped."""
    server, url, project, first = start_basic_memory(python, work, vault)
    try:
        side = basic_memory_side(url, project, server.pid)
        started = time.perf_counter() - first
        Connection(url, {}).request(*side.recall({"text": "合同编号 CT2024", "tags": []}))
        first_search = time.perf_counter() - started
        settled = settle(url, project, server.pid)
        figures = measure(side, queries, args)
    finally:
        _stop(server)
    return {"index_s": index[0], "start_to_first_answer_s": round(first, 3),
            "start_to_first_search_s": round(first_search, 3), **figures,
            "first_start_to_first_answer_s": index[1], "settle_s": settled}


def copy_notes(vault: Path, into: Path) -> Path:
    """The vault's files but .vaultmem/ copied into a fresh folder; returns the last note written
    (relative), the one the indexing wait looks for."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(vault, into, ignore=shutil.ignore_patterns(".vaultmem"))
    notes = [p for p in vault.rglob("*.md") if ".vaultmem" not in p.parts]
    return max(notes, key=lambda p: p.stat().st_mtime_ns).relative_to(vault)


# -- the report ----------------------------------------------------------------------------------------
def ratios(sides: dict[str, dict]) -> dict:
    """basic-memory's figure over vaultmem's (for a rate, vaultmem's over basic-memory's): above 1, vaultmem is ahead."""
    ours, theirs = sides["vaultmem"], sides.get(PEER)
    if not theirs:
        return {}
    out = {}
    for key in FIGURES:
        a, b = ours.get(key), theirs.get(key)
        if key in ("errors", "load_avg_1m", "single_empty_share") or not a or not b:
            continue
        out[key] = round(a / b if key in HIGHER_IS_BETTER else b / a, 1)
    return out


def _cell(value) -> str:
    return "-" if value is None else f"{value:g}"


def print_table(result: dict) -> None:
    sides, ratio = result["sides"], result["ratios"]
    names = list(sides)
    print(f"\nHTTP side by side: {result['notes']:,} notes, the same {result['queries']} queries, http.client "
          f"keep-alive over loopback; {result['clients']} clients for {result['seconds']:g} s; {result['writes']} "
          f"writes; ratio = basic-memory / vaultmem (rates: vaultmem / basic-memory), > 1: vaultmem ahead")
    print(f"{'figure':<28}" + "".join(f"{name:>16}" for name in names) + (f"{'ratio':>10}" if ratio else ""))
    for key in FIGURES:
        row = f"{key:<28}" + "".join(f"{_cell(sides[name].get(key)):>16}" for name in names)
        print(row + (f"{_cell(ratio.get(key)):>10}" if ratio else ""))
    machine = result["machine"]
    print(f"load average at start {', '.join(f'{x:.2f}' for x in machine['load_avg_start'])}, at end "
          f"{', '.join(f'{x:.2f}' for x in machine['load_avg_end'])} on {machine['cpus']} cores")
    for note in result.get("peer_notes", []):
        print(f"note: {note}")
    if PEER in sides:
        print("not comparable:")
        for line in NOT_COMPARABLE:
            print(f"  - {line}")


def run_benchmark(args: argparse.Namespace) -> dict:
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="vaultmem-peer-http-"))
    work.mkdir(parents=True, exist_ok=True)
    env, machine = _environment(work), _machine()
    python = find_bm_python(args.peer_python) if args.peer == PEER else None
    notes = [] if python or args.peer != PEER else [f"{PEER} not run: no interpreter imports basic_memory "
                                                     f"(give --peer-python or ${BM_PYTHON_ENV})"]
    try:
        vault, info, tokens, queries = _build(work, args, env)
        sides: dict[str, dict] = {}
        if python:
            bm_vault = work / "basic-memory-vault"
            last = copy_notes(vault, bm_vault)
            print(f"basic-memory ({python}) indexing {args.notes:,} notes ...", flush=True)
            index = index_basic_memory(python, work, bm_vault, last)
        sides["vaultmem"] = run_vaultmem(vault, env, tokens, queries, args, info["index_s"])
        if python:
            sides[PEER] = run_basic_memory(python, work, bm_vault, queries, args, index)
        machine["load_avg_end"] = os.getloadavg()
        result = {"notes": args.notes, "queries": args.queries, "clients": args.clients, "seconds": args.seconds,
                  "writes": args.writes, "sides": sides, "ratios": ratios(sides), "peer_notes": notes,
                  "peer_python": python, "not_comparable": list(NOT_COMPARABLE) if python else [],
                  "machine": machine, "generator": info}
        print_table(result)
    finally:
        drop_workdir(args, work)
    write_figures(args.json, result)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=2000, help="memory notes to generate (default 2000)")
    p.add_argument("--peer", choices=(PEER, "none"), default=PEER, help=f"the peer beside vaultmem (default {PEER})")
    p.add_argument("--peer-python", help=f"an interpreter with basic-memory installed (default ${BM_PYTHON_ENV}, "
                                         "else python3.12+ on PATH that imports it)")
    p.add_argument("--queries", type=int, default=500, help="single-client recalls timed (default 500)")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    p.add_argument("--seconds", type=float, default=10.0, help="the concurrent phase's length (default 10)")
    p.add_argument("--writes", type=int, default=50, help="writes timed, one at a time (default 50)")
    workdir_options(p, "100 notes, 50 queries, 1 s, 10 writes: for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.queries, args.seconds, args.writes = 100, 50, 1.0, 10
    return args


if __name__ == "__main__":
    run_benchmark(parse_args())
