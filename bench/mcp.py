"""MCP benchmark: vaultmem's stdio server beside basic-memory's, driven as an MCP client drives them.

    python bench/mcp.py --notes 2000 --json bench/out/mcp-2k.json
    python bench/mcp.py --smoke        # 200 notes, vaultmem only, 30 queries: installs nothing

Both servers get their own copy of one generated vault (bench/_synth.py), indexed before anything is
timed (vaultmem: a refresh; basic-memory: `project add`, in its own venv as bench/peers.py installs
it). Then the SDK's stdio client (mcp, initialize handshake) starts each server as a child process
--starts times and, in the last session, calls its search tool once per query
(bench/_synth.py's mix): vaultmem's `recall` (text and tags), basic-memory's `search_notes` (query,
tags, JSON output). Figures per server:
  start_s      spawn to the first search's answer: process start, imports, handshake, tools/list, the
               first search (median)
  handshake_s  spawn to the initialize answer, the server's first (median)
  tools_s      spawn to the tools/list answer (median)
  warm_p50_ms / warm_p99_ms  one search round trip (call sent to result parsed) in a session that
               has answered WARMUP searches already
  empty_share  share of searches with no hit (a server answering nothing fast is no win)
and `sdk_floor`: the same figures for the SDK alone (an MCPServer with one tool, started by the same
Python), its starts alternated with vaultmem's: what no server built on the SDK can beat.
Nothing is asserted: the figures are printed against their targets and written with --json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# This file is bench/mcp.py: with its folder first on sys.path (as `python bench/mcp.py` puts it),
# `import mcp` would import this script instead of the SDK. The folder goes last.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]
from peers import BM_PACKAGES, BM_PROJECT, StepFailed, _base_env, _python_312, _run, _venv, _version  # noqa: E402
from _figures import workdir_options  # noqa: E402
from recall import _environment, _machine, _percentile, write_figures  # noqa: E402

REPO = HERE.parent
SERVERS = ("vaultmem", "basic-memory")
TARGETS = {"warm_p50_ms": 15, "start_s": 1.5, "handshake_s": 1.5}  # vaultmem's own, at any size
RATIOS = {"warm_p50_ms": 5, "start_s": 3}     # basic-memory's figure / vaultmem's, at least
WARMUP = 10
INDEX_TIMEOUT_S = 3600


@dataclass
class Server:
    """How to start one MCP server on its vault copy and call its search tool."""

    key: str
    version: str
    command: list[str]
    env: dict
    tool: str
    arguments: Callable[[dict], dict]    # a query -> the tool's arguments
    hits: Callable[[object], int]        # a CallToolResult -> how many hits it holds
    cwd: str | None = None
    error: str | None = None


def _vaultmem_hits(result) -> int:
    return len(result.structured_content["hits"])


def _basic_memory_hits(result) -> int:
    content = result.structured_content or {}
    return len(content.get("result", content).get("results", []))


def setup_vaultmem(copy: Path, env: dict) -> Server:
    """vaultmem-mcp from this checkout, on an indexed copy."""
    from vaultmem import Vault
    from vaultmem.store.index.index import RACY_NS

    opened = Vault(copy)
    opened.refresh()
    # A note whose mtime is within RACY_NS of the last rescan is read again by the next one: a
    # vault just copied would be re-parsed by the server's first rescan, which no settled vault is.
    time.sleep(RACY_NS / 1e9 + 0.1)
    opened.refresh()
    opened.close()
    child = {name: env[name] for name in ("VAULTMEM_HOME", "VAULTMEM_DEVICE_ID")}
    from vaultmem import __version__

    return Server("vaultmem", __version__, [sys.executable, "-m", "vaultmem.surfaces.mcp", "--vault", str(copy)],
                  child, "recall", lambda q: {"query": q["text"], "tags": q["tags"]}, _vaultmem_hits, cwd=str(REPO))


# the SDK alone: what a server built on it cannot start faster than
FLOOR_SERVER = """from mcp.server.mcpserver import MCPServer

server = MCPServer("floor")


@server.tool()
def echo(text: str) -> str:
    \"\"\"The text, back.\"\"\"
    return text


server.run("stdio")
"""


def setup_floor(work: Path, env: dict) -> Server:
    """The SDK's floor: a one-tool MCPServer over stdio, run by this Python with vaultmem's environment."""
    import importlib.metadata

    script = work / "sdk_floor.py"
    script.write_text(FLOOR_SERVER, encoding="utf-8")
    return Server("sdk-floor", importlib.metadata.version("mcp"), [sys.executable, str(script)],
                  {name: env[name] for name in ("VAULTMEM_HOME", "VAULTMEM_DEVICE_ID")}, "echo",
                  lambda q: {"text": q["text"] or "-"}, lambda result: 1, cwd=str(work))


def setup_basic_memory(copy: Path, work: Path, venvs: Path, peer_python: str | None) -> Server:
    """basic-memory in its own venv (Python >= 3.12), the copy added (and so indexed) as a project."""
    python = _python_312(peer_python)
    if python is None:
        return Server("basic-memory", "-", [], {}, "", dict, len,
                      error="basic-memory needs Python >= 3.12 (give --peer-python)")
    bin_dir = _venv(python, venvs / "basic-memory", BM_PACKAGES)
    env = _base_env(work / "home-basic-memory", bin_dir)
    # its MCP framework (FastMCP) would ask PyPI for a newer release and draw a banner at each start
    env.update(FASTMCP_CHECK_FOR_UPDATES="off", FASTMCP_SHOW_SERVER_BANNER="false")
    bm = str(bin_dir / "basic-memory")
    started = time.perf_counter()
    _run([bm, "project", "add", BM_PROJECT, str(copy)], env, INDEX_TIMEOUT_S)
    print(f"  basic-memory indexed its copy in {time.perf_counter() - started:.0f} s", flush=True)
    return Server("basic-memory", _version(bin_dir / "python", "basic-memory"), [bm, "mcp", "--project", BM_PROJECT],
                  env, "search_notes",
                  lambda q: {"query": q["text"] or None, "tags": q["tags"] or None, "output_format": "json"},
                  _basic_memory_hits)


def _session(server: Server, queries: list[dict], timed: bool) -> dict:
    """One client session: spawn, handshake, first search; with timed, then every query timed alone."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=server.command[0], args=server.command[1:], env=server.env,
                                   cwd=server.cwd)

    async def search(client, query: dict) -> int:
        result = await client.call_tool(server.tool, server.arguments(query))
        if result.is_error:
            raise StepFailed(f"{server.key} {server.tool} failed: {result.content[0].text[:300]}")
        return server.hits(result)

    async def main() -> dict:
        start = time.perf_counter()
        async with Client(params, mode="legacy") as client:
            handshake = time.perf_counter() - start
            await client.list_tools()
            tools = time.perf_counter() - start
            await search(client, queries[0])
            out = {"handshake_s": handshake, "tools_s": tools, "start_s": time.perf_counter() - start}
            if timed:
                for query in queries[1:1 + WARMUP]:
                    await search(client, query)
                ms, empty = [], 0
                for query in queries[1 + WARMUP:]:
                    began = time.perf_counter()
                    empty += await search(client, query) == 0
                    ms.append((time.perf_counter() - began) * 1000)
                out.update(ms=ms, empty=empty)
            return out

    return anyio.run(main)


def _starts(sessions: list[dict]) -> dict:
    """The start figures of some sessions (medians)."""
    return {key: round(statistics.median(s[key] for s in sessions), 3) for key in ("start_s", "handshake_s", "tools_s")}


def measure(server: Server, queries: list[dict], starts: int, floor: Server | None = None) -> dict:
    """Start figures over `starts` sessions; warm figures from the last one. With floor, each start
    follows one of the floor's, whose figures go under `sdk_floor`."""
    if server.error:
        return {"version": server.version, "error": server.error}
    sessions, floors = [], []
    for i in range(starts):
        if floor is not None:
            floors.append(_session(floor, queries, timed=False))
        sessions.append(_session(server, queries, timed=i == starts - 1))
    ms = sessions[-1]["ms"]
    extra = {"sdk_floor": {"version": floor.version, **_starts(floors)}} if floor is not None else {}
    return {"version": server.version, **_starts(sessions),
            "start_runs_s": [round(s["start_s"], 3) for s in sessions],
            "warm_p50_ms": round(_percentile(ms, 50), 3), "warm_p99_ms": round(_percentile(ms, 99), 3),
            "warm_mean_ms": round(statistics.fmean(ms), 3), "searches": len(ms),
            "empty_share": round(sessions[-1]["empty"] / len(ms), 3), **extra}


def _build(work: Path, args: argparse.Namespace, env: dict) -> tuple[Path, dict, list[dict]]:
    """The generated vault and the queries (the first one answers the start, WARMUP warm up)."""
    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    from _synth import make_queries, make_vault

    vault = work / "vault"
    shutil.rmtree(vault, ignore_errors=True)
    info = make_vault(vault, args.notes, seed=args.seed)
    queries = make_queries(1 + WARMUP + args.queries, seed=args.seed, ids=info.pop("ids"))
    return vault, info, queries


def _setup(name: str, vault: Path, work: Path, args: argparse.Namespace, env: dict) -> Server:
    copy = work / f"vault-{name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(vault, copy)
    if name == "vaultmem":
        return setup_vaultmem(copy, env)
    venvs = Path(args.venvs) if args.venvs else work / "venvs"
    try:
        return setup_basic_memory(copy, work, venvs, args.peer_python)
    except StepFailed as exc:
        return Server(name, "-", [], {}, "", dict, len, error=str(exc)[-1500:])


def _ratios(servers: dict) -> dict:
    """basic-memory's figure over vaultmem's, where both were measured."""
    ours, peer = servers.get("vaultmem", {}), servers.get("basic-memory", {})
    if "error" in ours or "error" in peer or not peer:
        return {}
    return {key: round(peer[key] / ours[key], 2) for key in RATIOS}


def print_table(result: dict) -> None:
    """The figures with their targets."""
    print(f"\nMCP servers over stdio: {result['notes']:,} notes, {result['queries']} warm searches, "
          f"{result['starts']} starts")
    for name, fig in result["servers"].items():
        if "error" in fig:
            print(f"{name:<14}not measured: {fig['error'].splitlines()[0]}")
            continue
        status = "  ".join(f"{k} {'ok' if fig[k] <= bound else 'MISS'} (<= {bound})"
                           for k, bound in TARGETS.items()) if name == "vaultmem" else ""
        print(f"{name:<14}start {fig['start_s']:.3f} s  handshake {fig['handshake_s']:.3f} s  tools/list "
              f"{fig['tools_s']:.3f} s  warm p50 {fig['warm_p50_ms']:.2f} ms  p99 {fig['warm_p99_ms']:.2f} ms  "
              f"empty {fig['empty_share']:.0%}  {status}")
        if "sdk_floor" in fig:
            floor = fig["sdk_floor"]
            print(f"{'  SDK alone':<14}start {floor['start_s']:.3f} s  handshake {floor['handshake_s']:.3f} s  "
                  f"tools/list {floor['tools_s']:.3f} s  (mcp {floor['version']}, one tool: the floor of any "
                  f"server on it)")
    for key, ratio in result["ratios"].items():
        print(f"basic-memory / vaultmem {key}: {ratio:.1f}x  ({'ok' if ratio >= RATIOS[key] else 'MISS'}, "
              f">= {RATIOS[key]}x)")


def run_benchmark(args: argparse.Namespace) -> dict:
    """Build, set up and measure each server, print the table, write the JSON."""
    started = time.perf_counter()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="vaultmem-mcp-"))
    work.mkdir(parents=True, exist_ok=True)
    env = _environment(work)
    machine = _machine()
    try:
        vault, info, queries = _build(work, args, env)
        servers = {}
        for name in args.servers:
            print(f"{name}: setting up", flush=True)
            floor = setup_floor(work, env) if name == "vaultmem" else None
            servers[name] = measure(_setup(name, vault, work, args, env), queries, args.starts, floor)
        machine["load_avg_end"] = os.getloadavg()
        result = {"notes": args.notes, "queries": args.queries, "starts": args.starts, "servers": servers,
                  "ratios": _ratios(servers),
                  "extra": {"seed": args.seed, "warmup": WARMUP, "generator": info, "machine": machine,
                            "total_run_s": round(time.perf_counter() - started, 1)}}
        print_table(result)
    finally:
        if args.keep or args.workdir:
            print(f"work folder kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        write_figures(args.json, result)
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=2000, help="memory notes to generate (default 2000)")
    p.add_argument("--queries", type=int, default=200, help="timed warm searches per server (default 200)")
    p.add_argument("--starts", type=int, default=3, help="server starts timed per server (default 3)")
    p.add_argument("--servers", default=",".join(SERVERS), help=f"comma-separated, of {', '.join(SERVERS)}")
    p.add_argument("--venvs", help="keep and reuse the peers' venvs here (as bench/peers.py --venvs)")
    p.add_argument("--peer-python", help="a Python >= 3.12 for basic-memory")
    workdir_options(p, "200 notes, 30 searches, vaultmem only: for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.queries, args.starts, args.servers = 200, 30, 1, "vaultmem"
    args.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    unknown = set(args.servers) - set(SERVERS)
    if unknown:
        p.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    return args


if __name__ == "__main__":
    run_benchmark(parse_args())
