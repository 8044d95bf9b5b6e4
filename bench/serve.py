"""HTTP benchmark: `vaultmem serve` over a synthetic vault, 8 clients at once for 10 s of mixed recall
and remember, then every acknowledged write looked for on disk and by recall.

    python bench/serve.py --notes 10000 --json bench/out/http-10k.json
    python bench/serve.py --smoke                     # 300 notes, 2 s: seconds, for CI

The vault (bench/_synth.py, as bench/recall.py builds it) is indexed cold; each client gets a
read-write token of its own (namespace `bench`) and http.rate_per_minute is set to 0, so the rate
limit does not stand in for the server's speed. The server is a fresh `python -m vaultmem serve`
process (its watcher on, as a user runs it); `start_to_first_answer_s` is from its start to the
first answer of /api/v1/health, `start_to_first_recall_s` to that of a recall. Each client (a
thread with its own keep-alive httpx.Client) then sends, for --seconds, a recall (bench/_synth.py's
query mix) or, one time in --write-every, a remember of a memory carrying a marker of its own. The
server stopped, each acknowledged write must be a note on disk holding its marker, recallable by it
(a fresh Vault), and in one note only: `lost`, `duplicates` and the 5xx answers must all be 0.
Nothing is asserted: the figures are printed against their targets and written with --json.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, _BENCH)
from _synth import make_queries, make_vault  # noqa: E402
from recall import _environment, _machine, _percentile, write_figures  # noqa: E402
from _figures import drop_workdir, workdir_options  # noqa: E402

# this file's name is the standard library's `http` package's: with its folder on the path, httpx's
# `import http.client` would find it. The bench modules are imported; the folder goes.
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != _BENCH]

TARGET_NOTES = 10_000
TARGETS = {"recall_p50_ms": ("<=", 5.0), "recall_per_s": (">=", 300.0), "single_recall_p50_ms": ("<=", 5.0),
           "capacity_recall_per_s": (">=", 300.0), "start_to_first_answer_s": ("<=", 1.0),
           "lost": ("<=", 0), "duplicates": ("<=", 0), "server_errors": ("<=", 0)}
KEYS = ("requests_per_s", "recall_per_s", "remember_per_s", "recall_p50_ms", "recall_p99_ms", "remember_p50_ms",
        "remember_p99_ms", "server_cpu_ms_per_request", "single_recall_p50_ms", "single_recall_p99_ms",
        "single_cpu_ms_per_recall", "capacity_recall_per_s", "capacity_recall_p50_ms",
        "capacity_cpu_ms_per_recall", "start_to_first_answer_s", "start_to_first_recall_s", "acknowledged_writes",
        "lost", "duplicates", "server_errors")
API = "/api/v1"
MARK = re.compile(r"HB\d{2}X\d{6}Q")  # a write's marker: one term of its own for recall


def _build(workdir: Path, args: argparse.Namespace, env: dict) -> tuple[Path, dict, list[str], list[dict]]:
    """The vault (indexed cold, rate limit off), one token per client, the queries."""
    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    from vaultmem import Vault

    vault = workdir / "vault"
    shutil.rmtree(vault, ignore_errors=True)
    info = make_vault(vault, args.notes, seed=args.seed)
    queries = [q for q in make_queries(4000, seed=args.seed, ids=info.pop("ids")) if q["text"] or q["tags"]]
    config = vault / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("rate_per_minute: 600", "rate_per_minute: 0"),
                      encoding="utf-8")
    opened = Vault(vault)
    started = time.perf_counter()
    opened.refresh()
    info["index_s"] = round(time.perf_counter() - started, 3)
    tokens = [opened.add_token(f"client-{i}", scope="read-write", namespaces=["bench"])[0] for i in range(args.clients)]
    opened.close()
    return vault, info, tokens, queries


def _start(vault: Path, env: dict, workers: int) -> tuple[subprocess.Popen, str, float]:
    """A fresh `vaultmem serve` on a free port: (the process, its base URL, seconds to its first answer)."""
    import httpx

    started = time.perf_counter()
    cmd = [sys.executable, "-m", "vaultmem", "serve", "--vault", str(vault), "--port", "0", "--workers", str(workers)]
    server = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    line = server.stderr.readline()
    if not line.startswith("Serving "):
        server.kill()
        raise SystemExit(f"the server did not start: {line}{server.stderr.read()[-2000:]}")
    url = line.split()[1].removesuffix(API)
    with httpx.Client(base_url=url) as client:
        while True:
            try:
                if client.get(f"{API}/health").status_code == 200:
                    break
            except httpx.TransportError:  # not listening yet
                pass
            time.sleep(0.002)
    threading.Thread(target=server.stderr.read, daemon=True).start()  # drain its log
    return server, url, time.perf_counter() - started


class Client(threading.Thread):
    """One agent: recalls, and now and then a remember of a marked memory, until the deadline."""

    def __init__(self, number: int, url: str, token: str, queries: list[dict], write_every: int, deadline: float,
                 interval: float):
        super().__init__(name=f"client-{number}", daemon=True)
        self.number, self.url, self.token, self.queries = number, url, token, queries
        self.write_every, self.deadline, self.interval = write_every, deadline, interval
        self.recall_ms: list[float] = []
        self.remember_ms: list[float] = []
        self.statuses: dict[int, int] = {}
        self.written: list[dict] = []  # acknowledged: {marker, id, path, action}

    def run(self) -> None:
        import httpx

        rng = random.Random(self.number)
        with httpx.Client(base_url=self.url, headers={"x-api-key": self.token}, timeout=60) as client:
            seq, due = 0, time.perf_counter() + rng.random() * self.interval
            while time.perf_counter() < self.deadline:
                if self.interval:  # paced: one request every `interval` s, at once when behind
                    time.sleep(max(0.0, due - time.perf_counter()))
                    due += self.interval
                if rng.randrange(self.write_every) == 0:
                    seq += 1
                    self._remember(client, f"HB{self.number:02d}X{seq:06d}Q", rng)
                else:
                    self._recall(client, rng.choice(self.queries))

    def _timed(self, send) -> tuple[object, float]:
        start = time.perf_counter()
        answer = send()
        ms = (time.perf_counter() - start) * 1000
        self.statuses[answer.status_code] = self.statuses.get(answer.status_code, 0) + 1
        return answer, ms

    def _recall(self, client, query: dict) -> None:
        answer, ms = self._timed(lambda: client.get(f"{API}/recall", params={"query": query["text"],
                                                                             "tags": query["tags"], "limit": 10}))
        if answer.status_code == 200:
            self.recall_ms.append(ms)

    def _remember(self, client, marker: str, rng: random.Random) -> None:
        words = " ".join(rng.choice(("rack", "deploy", "invoice", "review", "server", "meeting", "ticket", "budget"))
                         for _ in range(6))
        body = {"text": f"Load test memory {marker}: {words}", "tags": ["bench"], "namespace": "bench"}
        answer, ms = self._timed(lambda: client.post(f"{API}/memories", json=body))
        if answer.status_code == 200:
            self.remember_ms.append(ms)
            self.written.append({"marker": marker, **answer.json()})


def _first_recall(url: str, token: str, started_s: float, answered_at: float) -> float:
    """Seconds from the server's start to the answer of its first recall (asked right after /health)."""
    import httpx

    with httpx.Client(base_url=url, headers={"x-api-key": token}) as client:
        client.get(f"{API}/recall", params={"query": "合同编号 CT2024"}).raise_for_status()
    return started_s + (time.perf_counter() - answered_at)


def _check_writes(vault: Path, written: list[dict]) -> dict:
    """Every acknowledged write on disk (its marker in its note), recallable by its marker, in one note only."""
    from vaultmem import Vault

    holders: dict[str, list[str]] = {}
    for path in vault.rglob("*.md"):
        if ".vaultmem" in path.parts or "episodes" in path.parts:
            continue
        for marker in set(MARK.findall(path.read_text(encoding="utf-8", errors="replace"))):
            holders.setdefault(marker, []).append(path.relative_to(vault).as_posix())
    opened = Vault(vault)
    opened.refresh()
    lost_disk = [w for w in written if w["path"] not in holders.get(w["marker"], [])]
    lost_recall = [w for w in written if w["id"] not in {h.id for h in opened.recall(w["marker"], limit=5, namespace="*",
                                                                                       record_access=False)}]
    duplicates = sum(len(paths) - 1 for paths in holders.values() if len(paths) > 1)
    return {"acknowledged": len(written), "lost": len({w["marker"] for w in lost_disk + lost_recall}), "lost_on_disk": len(lost_disk),
            "lost_to_recall": len(lost_recall), "duplicates": duplicates,
            "distinct_ids": len({w["id"] for w in written}), "notes_with_markers": len(holders)}


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process and its children (the workers) have used, from /proc."""
    total = 0.0
    for proc in (pid, *_children(pid)):
        try:
            fields = Path(f"/proc/{proc}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(child) for child in found for child in (child, *_children(int(child)))]


def _load(url: str, tokens: list[str], queries: list[dict], count: int, seconds: float,
          write_every: int, rate: float) -> list[Client]:
    """`count` clients at work for `seconds`: paced to `rate` requests a second in all (0: each as fast
    as it can, one request at a time), one in `write_every` a remember."""
    deadline = time.perf_counter() + seconds
    interval = count / rate if rate else 0.0
    clients = [Client(i, url, tokens[i], queries, write_every, deadline, interval) for i in range(count)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    return clients


def _phase(clients: list[Client], seconds: float, cpu_s: float) -> dict:
    """One phase's figures: rates, latencies, answers by status, the server's CPU per request."""
    recall_ms = [ms for c in clients for ms in c.recall_ms]
    remember_ms = [ms for c in clients for ms in c.remember_ms]
    statuses: dict[str, int] = {}
    for c in clients:
        for status, count in c.statuses.items():
            statuses[str(status)] = statuses.get(str(status), 0) + count
    answered = sum(statuses.values())
    return {"requests_per_s": round(answered / seconds, 1), "recall_per_s": round(len(recall_ms) / seconds, 1),
            "remember_per_s": round(len(remember_ms) / seconds, 1),
            "recall_p50_ms": round(_percentile(recall_ms, 50), 3) if recall_ms else 0.0,
            "recall_p99_ms": round(_percentile(recall_ms, 99), 3) if recall_ms else 0.0,
            "remember_p50_ms": round(_percentile(remember_ms, 50), 3) if remember_ms else 0.0,
            "remember_p99_ms": round(_percentile(remember_ms, 99), 3) if remember_ms else 0.0,
            # what the server itself spent, whatever else ran on the machine meanwhile
            "server_cpu_ms_per_request": round(1000 * cpu_s / max(1, answered), 3), "statuses": statuses}


def _report(args: argparse.Namespace, info: dict, phases: dict[str, dict], first: float, first_recall: float,
            checked: dict, machine: dict) -> dict:
    mixed, single, capacity = phases["mixed"], phases["single"], phases["capacity"]
    result = {
        "notes": args.notes, "clients": args.clients, "seconds": args.seconds, "offered_per_s": args.rate,
        **{key: mixed[key] for key in mixed if key != "statuses"},
        "single_recall_p50_ms": single["recall_p50_ms"], "single_recall_p99_ms": single["recall_p99_ms"],
        "single_cpu_ms_per_recall": single["server_cpu_ms_per_request"],
        "capacity_recall_per_s": capacity["recall_per_s"], "capacity_recall_p50_ms": capacity["recall_p50_ms"],
        "capacity_cpu_ms_per_recall": capacity["server_cpu_ms_per_request"],
        "start_to_first_answer_s": round(first, 3), "start_to_first_recall_s": round(first_recall, 3),
        "acknowledged_writes": checked["acknowledged"], "lost": checked["lost"], "duplicates": checked["duplicates"],
        "server_errors": sum(n for phase in phases.values() for status, n in phase["statuses"].items()
                             if status.startswith("5")),
    }
    result["extra"] = {"statuses": {name: phase["statuses"] for name, phase in phases.items()}, "checks": checked,
                       "workers": args.workers,
                       "write_every": args.write_every, "seed": args.seed, "generator": info, "machine": machine}
    return result


def print_table(result: dict) -> None:
    """The figures with their targets (timings checked only at TARGET_NOTES notes)."""
    n = result["notes"]
    print(f"\nvaultmem HTTP benchmark: {n:,} notes, {result['clients']} clients over loopback (keep-alive), one "
          f"`vaultmem serve` ({result['extra']['workers']} process(es)): {result['seconds']:g} s offered {result['offered_per_s']:g} requests/s (one in "
          f"{result['extra']['write_every']} a remember), then one client alone (single_*, recall only, one request "
          "at a time: the latency one agent sees), then all as fast as they go (capacity_*, recall only)")
    print(f"{'metric':<28}{'value':>12}   {'target':<14}status")
    for key in KEYS:
        op, bound = TARGETS.get(key, (None, None))
        timed = key.endswith(("_ms", "_per_s", "_s"))
        target = "-" if op is None else f"{op} {bound:g}" + (f" @{TARGET_NOTES // 1000}k" if timed else "")
        met = op is not None and (result[key] <= bound if op == "<=" else result[key] >= bound)
        status = "-" if op is None or (timed and n != TARGET_NOTES) else ("ok" if met else "MISS")
        print(f"{key:<28}{result[key]:>12g}   {target:<14}{status}")
    machine = result["extra"]["machine"]
    print(f"answers by status: {result['extra']['statuses']}; load average at the end "
          f"{', '.join(f'{x:.2f}' for x in machine.get('load_avg_end', ()))} on {os.cpu_count()} cores")


def _measured(url: str, pid: int, tokens: list[str], queries: list[dict], args: argparse.Namespace
              ) -> tuple[dict[str, dict], list[dict]]:
    """The mixed phase (paced, with writes), one client alone (recall only, unpaced), then the capacity
    phase (every client, recall only, unpaced)."""
    phases, written = {}, []
    for name, count, seconds, write_every, rate in (
            ("mixed", args.clients, args.seconds, args.write_every, args.rate),
            ("single", 1, args.capacity_seconds, 10**9, 0.0),
            ("capacity", args.clients, args.capacity_seconds, 10**9, 0.0)):
        cpu = _cpu_s(pid)
        clients = _load(url, tokens, queries, count, seconds, write_every, rate)
        phases[name] = _phase(clients, seconds, _cpu_s(pid) - cpu)
        written += [w for c in clients for w in c.written]
    return phases, written


def run_benchmark(args: argparse.Namespace) -> dict:
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="vaultmem-http-"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = _environment(workdir)
    machine = _machine()
    try:
        vault, info, tokens, queries = _build(workdir, args, env)
        server, url, first = _start(vault, env, args.workers)
        try:
            first_recall = _first_recall(url, tokens[0], first, time.perf_counter())
            phases, written = _measured(url, server.pid, tokens, queries, args)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(60)
        machine["load_avg_end"] = os.getloadavg()
        checked = _check_writes(vault, written)
        result = _report(args, info, phases, first, first_recall, checked, machine)
        print_table(result)
    finally:
        drop_workdir(args, workdir)
    if args.json:
        write_figures(args.json, result)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=TARGET_NOTES, help=f"memory notes to generate (default {TARGET_NOTES})")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    p.add_argument("--seconds", type=float, default=10.0, help="the mixed phase's length (default 10)")
    p.add_argument("--rate", type=float, default=340.0,
                   help="requests a second the clients offer in all in the mixed phase (default 340; 0: unpaced)")
    p.add_argument("--write-every", type=int, default=10, help="one request in this many is a remember (default 10)")
    p.add_argument("--capacity-seconds", type=float, default=5.0,
                   help="the single and capacity phases' length: recall only, one client alone, then each "
                        "client as fast as it goes (default 5)")
    p.add_argument("--workers", type=int, default=1, help="`vaultmem serve --workers N` (default 1)")
    workdir_options(p, "300 notes, 2 s: a quick check for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.seconds, args.capacity_seconds = 300, 2.0, 1.0
    return args


def main(argv: list[str] | None = None) -> None:
    run_benchmark(parse_args(argv))


if __name__ == "__main__":
    main()
